"""An HA job's leaders in Python: muster.Leader(ha_etcd=..., ha_name=...) in two processes over
a real etcd member (Debian's etcd-server), reached through etcd's JSON gateway. One serves, the
other stands by naming it; the active process is killed with SIGKILL and the standby takes over
with the job's state, while an agent given both leaders goes on; one in this process, stopped,
hands the job over at once. An agent given only etcd
(etcd://ENDPOINT/NAME) finds the active leader there. Bad HA arguments raise typed errors. Over
an etcd that requires TLS, a client certificate and a user, configured by MUSTER_ETCD_*, the
same works, and a wrong password raises naming the user, never the password."""

import json
import os
import socket
import time
import urllib.request

import pytest

import muster
from ha_processes import (Lines, etcd_member, free_ports, serve_ha_leaders, serve_ha_standby,
                          SECURE_PASSWORD)

PYTHON = "/usr/bin/python3"

# One HA leader process: prints its address, then each role it takes and the active leader it
# knows, until killed.
LEADER = r"""
import sys, time
import muster
etcd, name, port, ttl = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
leader = muster.Leader({"worker": 2}, port=port, ha_etcd=etcd, ha_name=name, ha_lease_ttl=ttl,
                       heartbeat_timeout=5, reconnect_window=15)
print("ready", leader.address, flush=True)
seen = None
while True:
    now = (leader.role, leader.active_leader)
    if now != seen:
        seen = now
        print("role", now[0], "active", now[1], flush=True)
    time.sleep(0.02)
"""


def start_leaders(etcd, name, count=2, ttl=2):
    ports = free_ports(count)
    leaders = [Lines([PYTHON, "-c", LEADER, etcd, name, str(port), str(ttl)]) for port in ports]
    for leader in leaders:
        leader.wait_for("ready")
    return leaders, [f"127.0.0.1:{port}" for port in ports]


def active_of(leaders, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for i, leader in enumerate(leaders):
            if leader.process.poll() is None and leader.lines and \
                    leader.lines[-1].startswith("role active"):
                return i
        time.sleep(0.02)
    raise AssertionError([leader.lines for leader in leaders])


def test_active_killed_the_python_standby_takes_over_with_the_state(etcd):
    name = f"pyha-{os.getpid()}"
    leaders, addresses = start_leaders(etcd, name)
    try:
        active = active_of(leaders)
        standby = 1 - active
        leaders[standby].wait_for(f"role standby active {addresses[active]}")
        # Its lease is kept alive through the gateway: it stays active over three TTLs.
        time.sleep(6)
        lines = list(leaders[active].lines)
        since = lines[next(i for i, line in enumerate(lines) if line.startswith("role active")):]
        assert [line for line in since if line.startswith("role")] == [since[0]], lines
        agent = muster.Agent(",".join(addresses), "worker", 0, leader_reconnect_timeout=30)
        agent.connect()
        agent.insert_key_value("before", b"failover")
        leaders[active].kill()
        leaders[standby].wait_for(f"role active active {addresses[standby]}", timeout=30)
        # The state came from etcd; the agent follows to the new leader.
        assert agent.get_key_value("before", timeout=30) == b"failover"
        agent.insert_key_value("after", b"yes")
        assert agent.try_get_key_value("after") == b"yes"
        agent.shutdown()
    finally:
        for leader in leaders:
            leader.kill()


def test_in_this_process_active_then_stopped_the_other_takes_over_at_once(etcd):
    name = f"pyha-stop-{os.getpid()}"
    # The options of the other leader's (start_leaders): leaders of one job run one configuration.
    with muster.Leader({"worker": 2}, ha_etcd=etcd, ha_name=name, ha_lease_ttl=15,
                       heartbeat_timeout=5, reconnect_window=15, http="127.0.0.1:0") as here:
        assert here.wait_active(30)
        assert here.role == "active" and here.active_leader == here.address
        # The HTTP endpoint serves while this leader is active; a standby serves none.
        assert here.http_url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(here.http_url + "/metrics", timeout=10) as reply:
            assert reply.status == 200
            assert b"muster_tasks" in reply.read()
        with urllib.request.urlopen(here.http_url + "/api/state", timeout=10) as reply:
            assert json.loads(reply.read())["leader"]["address"] == here.address
        with muster.Leader({"worker": 2}, ha_etcd=etcd, ha_name=name, ha_lease_ttl=15,
                           heartbeat_timeout=5, reconnect_window=15,
                           http="127.0.0.1:0") as standby:
            deadline = time.monotonic() + 30
            while standby.role != "standby" or standby.active_leader != here.address:
                assert time.monotonic() < deadline, (standby.role, standby.active_leader)
                time.sleep(0.05)
            assert standby.http_url == ""
        others, addresses = start_leaders(etcd, name, count=1, ttl=15)
        try:
            others[0].wait_for(f"role standby active {here.address}")
            stopped = time.monotonic()
            here.stop()
            assert here.role == "stopped" and not here.running
            assert here.ha_status.startswith(f"stopped: this leader of HA job {name} was "), \
                here.ha_status
            assert here.http_url == ""
            assert not here.wait_active(5)
            # It resigned (its lease revoked through the gateway): no waiting out the 15 s TTL.
            others[0].wait_for(f"role active active {addresses[0]}", timeout=30)
            assert time.monotonic() - stopped < 8
        finally:
            others[0].kill()


def test_a_leader_whose_http_port_is_busy_says_why_it_cannot_serve_then_serves(etcd):
    name = f"pyha-busy-{os.getpid()}"
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        with muster.Leader({"worker": 1}, ha_etcd=etcd, ha_name=name, ha_lease_ttl=2,
                           http=f"127.0.0.1:{port}") as leader:
            deadline = time.monotonic() + 30
            said = leader.ha_status  # read once: the leader tries again and says it again
            while "cannot serve" not in said:
                assert time.monotonic() < deadline, said
                time.sleep(0.05)
                said = leader.ha_status
            assert said.startswith("standby: won the election but cannot serve"), said
            assert f"127.0.0.1:{port}" in said
            assert leader.role == "standby" and leader.http_url == ""
            busy.close()  # the next try takes it
            assert leader.wait_active(30), leader.ha_status
            assert leader.http_url == f"http://127.0.0.1:{port}"
            assert leader.ha_status.startswith(f"active: serving HA job {name} at ")
    finally:
        busy.close()
    with muster.Leader({"worker": 1}, port=0) as plain:  # a leader of no HA job
        assert plain.ha_status == ""


def test_bad_ha_arguments_raise_typed_errors(etcd):
    with pytest.raises(muster.UnavailableError, match="no etcd member answered at 127.0.0.1:1"):
        muster.Leader({"worker": 1}, ha_etcd="127.0.0.1:1", ha_name="x")
    with pytest.raises(muster.InvalidArgumentError, match="need ha_etcd"):
        muster.Leader({"worker": 1}, ha_name="x")
    with pytest.raises(muster.InvalidArgumentError, match="need ha_etcd"):
        muster.Leader({"worker": 1}, ha_lease_ttl=3)
    with pytest.raises(muster.InvalidArgumentError, match="HA name"):
        muster.Leader({"worker": 1}, ha_etcd=etcd, ha_name="bad name")
    with pytest.raises(muster.InvalidArgumentError, match="lease TTL"):
        muster.Leader({"worker": 1}, ha_etcd=etcd, ha_name="x", ha_lease_ttl=1.5)
    with pytest.raises(ValueError, match="ha_lease_ttl"):
        muster.Leader({"worker": 1}, ha_etcd=etcd, ha_name="x", ha_lease_ttl=float("inf"))


def test_an_agent_given_etcd_follows_a_leader_started_after_it_connected(etcd):
    """The agent read leaders A and B; A is killed and B serves; C starts (a host replaced); B is
    killed: the agent reads the leaders again and goes on with C, which it was never given."""
    name = f"replaced-{os.getpid()}"
    flags = ["--job=worker=1", "--ha-lease-ttl=1s"]
    leaders, active, _ = serve_ha_leaders(etcd, name, flags)
    late = agent = None
    try:
        agent = muster.Agent(f"etcd://{etcd}/{name}", "worker", 0, leader_reconnect_timeout=30)
        agent.connect()
        agent.insert_key_value("first", b"1")
        leaders[active].kill()
        agent.insert_key_value("second", b"2")  # at the standby, once it took over
        late, late_address = serve_ha_standby(etcd, name, flags)
        leaders[1 - active].kill()
        agent.insert_key_value("third", b"3")  # at the leader started late
        late.wait_for("active: serving")
        assert late.count(f"active: serving HA job {name} at {late_address}") == 1
        assert [agent.get_key_value(key) for key in ("first", "second", "third")] == [
            b"1", b"2", b"3"]
    finally:
        if agent is not None:
            agent.shutdown()
        for process in leaders + ([late] if late else []):
            process.kill()


def test_an_agent_given_only_etcd_finds_the_active_leader(etcd):
    name = f"agent-{os.getpid()}"
    leaders, _, _ = serve_ha_leaders(etcd, name, ["--job=worker=1", "--ha-lease-ttl=2s"])
    try:
        agent = muster.Agent(f"etcd://{etcd}/{name}", "worker", 0)
        agent.connect()
        agent.insert_key_value("found", b"yes")
        assert agent.get_key_value("found") == b"yes"
        agent.shutdown()
        # A job with no leader registered: asked again until register_timeout, then NotFound.
        start = time.monotonic()
        with pytest.raises(muster.NotFoundError, match=f"no leader of HA job {name}-none"):
            muster.Agent(f"etcd://{etcd}/{name}-none", "worker", 0, register_timeout=0.5,
                         wait_for_leader=True)
        assert 0.4 < time.monotonic() - start < 5
        with pytest.raises(muster.InvalidArgumentError, match="etcd://HOST:PORT"):
            muster.Agent("etcd://127.0.0.1:1", "worker", 0)
    finally:
        for process in leaders:
            process.kill()


def test_over_an_etcd_requiring_tls_and_a_user_from_the_environment(monkeypatch):
    if not os.access("/usr/bin/etcd", os.X_OK):
        pytest.skip("/usr/bin/etcd is missing: run tools/install-deps.sh")
    name = f"secure-{os.getpid()}"
    with etcd_member(secure=True) as (endpoint, env):
        hosts = endpoint[len("https://"):]
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        # A leader in this process (etcd through its JSON gateway, over TLS, with a token).
        with muster.Leader({"worker": 1}, ha_etcd=endpoint, ha_name=name, ha_lease_ttl=5,
                           heartbeat_timeout=5) as here:
            assert here.wait_active(30), here.ha_status
            # An agent given only etcd (HOST:PORT; TLS and the user from the environment).
            agent = muster.Agent(f"etcd://{hosts}/{name}", "worker", 0)
            agent.connect()
            agent.insert_key_value("secure", b"yes")
            assert agent.get_key_value("secure") == b"yes"
            agent.shutdown()
            monkeypatch.setenv("MUSTER_ETCD_PASSWORD", "not-it-4711")
            with pytest.raises(muster.InvalidArgumentError,
                               match='etcd refused user "root"') as refused:
                muster.Agent(f"etcd://{hosts}/{name}", "worker", 0)
            assert "not-it-4711" not in str(refused.value)
            assert SECURE_PASSWORD not in str(refused.value)
            with pytest.raises(muster.InvalidArgumentError, match='etcd refused user "root"'):
                muster.Leader({"worker": 1}, ha_etcd=endpoint, ha_name=name)
            monkeypatch.delenv("MUSTER_ETCD_CACERT")
            monkeypatch.setenv("MUSTER_ETCD_PASSWORD", SECURE_PASSWORD)
            # Without the cluster's CA (the system's instead) no member is trusted.
            with pytest.raises(muster.UnavailableError, match="no etcd member answered"):
                muster.Leader({"worker": 1}, ha_etcd=endpoint, ha_name=name)
