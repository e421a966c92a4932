"""connect() to a leader that is not there: at once by default ("nothing listening at
HOST:PORT"), or waiting for it with wait_for_leader (and by default under `muster run`); Ctrl-C
while it waits. The heartbeat timeout connect() settles: the leader's when none is given (a short
one keeps the task alive), a refusal when the agent's own is longer than the leader's."""

import os
import signal
import socket
import subprocess
import time

import pytest

import muster

PYTHON = "/usr/bin/python3"


def free_port() -> int:
    """A port of 127.0.0.1 that nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_listening_fails_at_once():
    port = free_port()
    start = time.monotonic()
    with muster.Agent(f"127.0.0.1:{port}", "worker", 0, register_timeout=20) as agent:
        with pytest.raises(muster.UnavailableError,
                           match=f"nothing listening at 127.0.0.1:{port}") as raised:
            agent.connect()
    assert time.monotonic() - start < 2
    assert "is the Muster leader running" in str(raised.value)
    assert "ip_connect" not in str(raised.value)


def test_wait_for_leader_retries_until_register_timeout():
    port = free_port()
    start = time.monotonic()
    with muster.Agent(f"127.0.0.1:{port}", "worker", 0, register_timeout=0.5,
                      wait_for_leader=True) as agent:
        with pytest.raises(muster.DeadlineExceededError,
                           match=f"nothing listening at 127.0.0.1:{port}"):
            agent.connect()
    assert 0.5 <= time.monotonic() - start < 5


def test_wait_for_leader_connects_once_the_leader_is_up():
    port = free_port()
    with muster.Agent(f"127.0.0.1:{port}", "worker", 0, register_timeout=20,
                      wait_for_leader=True) as agent:
        connected = agent.connect_async()
        time.sleep(0.3)  # a few refused attempts
        assert not connected.done()
        with muster.Leader({"worker": 1}, port=port):
            connected.result(timeout=15)
            assert agent.state == "RUNNING"
            agent.shutdown()


def test_started_by_muster_run_waits_by_default(monkeypatch):
    port = free_port()
    monkeypatch.setenv("MUSTER_LEADER", f"127.0.0.1:{port}")
    monkeypatch.setenv("MUSTER_JOB", "worker")
    monkeypatch.setenv("MUSTER_TASK", "0")
    with muster.Agent.from_environment(register_timeout=0.5) as agent:
        with pytest.raises(muster.DeadlineExceededError, match="nothing listening"):
            agent.connect()


WAITING_CONNECT = r"""
import sys, muster
agent = muster.Agent(sys.argv[1], "worker", 0, wait_for_leader=True)
print("connecting", flush=True)
try:
    agent.connect()
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise
"""


def test_ctrl_c_interrupts_a_waiting_connect_and_the_process_ends():
    child = subprocess.Popen([PYTHON, "-c", WAITING_CONNECT, f"127.0.0.1:{free_port()}"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=dict(os.environ))
    try:
        assert child.stdout.readline().strip() == "connecting"
        time.sleep(0.5)  # connect() is waiting for the leader by now
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        line = child.stdout.readline().strip()
        assert line == "interrupted", child.stdout.read()
        assert time.monotonic() - sent < 2.5  # within 2 s while a dial is under way
        child.wait(timeout=5)  # it ends, without waiting for register_timeout (an hour)
        assert time.monotonic() - sent < 3
        assert "KeyboardInterrupt" in child.stdout.read()
    finally:
        child.kill()


def test_unset_heartbeat_timeout_takes_the_leaders():
    with muster.Leader({"worker": 2}, heartbeat_timeout=1) as leader:
        errors = []
        agent = muster.Agent(leader.address, "worker", 0, on_error=errors.append)
        agent.connect()
        # With its old default of 10 s the agent would beat every 5 s: the leader, whose timeout
        # is 1 s, would judge it stale within this wait.
        time.sleep(3)
        assert errors == []
        assert agent.state == "RUNNING"
        [info] = agent.get_task_state([0])
        assert info["state"] == "TASKSTATE_CONNECTED"
        assert 0 <= info["last_heartbeat_age_ms"] < 1000
        agent.close()


def test_longer_heartbeat_timeout_than_the_leaders_is_refused():
    with muster.Leader({"worker": 1}, heartbeat_timeout=2) as leader:
        agent = muster.Agent(leader.address, "worker", 0, heartbeat_timeout=10)
        with pytest.raises(muster.FailedPreconditionError) as refused:
            agent.connect()
        message = str(refused.value)
        assert "10000 ms" in message
        assert "2000 ms" in message
        assert "heartbeat_timeout unset" in message
        agent.close()


def test_heartbeat_timeout_must_be_positive():
    with pytest.raises(ValueError, match="None: the leader's"):
        muster.Agent("127.0.0.1:1", "worker", 0, heartbeat_timeout=0)
