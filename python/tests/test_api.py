"""muster.Agent and muster.Leader against a leader in this process: key-value calls, errors,
timeouts, futures, watches, barriers, failure callbacks and closing."""

import datetime
import gc
import re
import threading
import time
import urllib.request

import pytest

import muster
from muster import _errors


def test_leader_properties_and_bad_arguments():
    with muster.Leader({"worker": 1}, port=0) as leader:
        host, port = leader.address.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) == leader.port > 0
        assert leader.running and leader.incarnation != 0
    assert not leader.running
    with pytest.raises(muster.InvalidArgumentError, match="jobs is empty"):
        muster.Leader({})
    with pytest.raises(muster.InvalidArgumentError, match="unknown policy"):
        muster.Leader({"worker": 1}, policy="chaos")
    with pytest.raises(muster.InvalidArgumentError, match="not one of the jobs"):
        muster.Leader({"worker": 1}, recoverable_jobs=["ps"])


def test_key_values_before_connect_str_and_bytes(agents):
    a, b = agents
    assert a.state == "DISCONNECTED"
    a.insert_key_value("config/lr", "0.01")
    a.insert_key_value("config/blob", b"\x00\xff")
    assert b.try_get_key_value("config/lr") == b"0.01"
    assert b.get_key_value("config/blob", timeout=1) == b"\x00\xff"
    assert b.get_key_value_dir("config") == [("config/blob", b"\x00\xff"), ("config/lr", b"0.01")]
    with pytest.raises(muster.AlreadyExistsError):
        a.insert_key_value("config/lr", "0.02")
    a.insert_key_value("config/lr", "0.02", allow_overwrite=True)
    a.update_key_value("config/lr", "0.03")
    assert b.try_get_key_value("config/lr") == b"0.03"
    assert a.increment_key_value("counter", 5) == 5
    assert b.increment_key_value("counter", -2) == 3
    assert a.compare_and_swap("cas", None, "first") == (True, b"first")
    assert a.compare_and_swap("cas", "wrong", "second") == (False, b"first")
    assert a.compare_and_swap("cas", b"first", "second") == (True, b"second")
    a.delete_key_value("config")
    with pytest.raises(muster.NotFoundError) as missing:
        b.try_get_key_value("config/lr")
    assert isinstance(missing.value, KeyError)
    assert missing.value.code == "NOT_FOUND" and "config/lr" in missing.value.message
    assert a.state == "DISCONNECTED"


def test_timeouts_and_bad_values(agents):
    a, _ = agents
    start = time.monotonic()
    with pytest.raises(muster.DeadlineExceededError) as late:
        a.get_key_value("never", timeout=datetime.timedelta(milliseconds=300))
    assert 0.25 <= time.monotonic() - start < 3
    assert isinstance(late.value, TimeoutError)
    with pytest.raises(ValueError, match="timeout"):
        a.get_key_value("never", timeout=-1)
    with pytest.raises(TypeError):
        a.insert_key_value("k", 3)
    with pytest.raises(muster.InvalidArgumentError):
        a.insert_key_value("", "empty key")


def test_futures(agents):
    a, b = agents
    pending = b.get_key_value_async("later", timeout=5)
    assert not pending.done()
    a.insert_key_value_async("later", "now").result(timeout=5)
    assert pending.result(timeout=5) == b"now"
    failed = a.try_get_key_value_async("absent")
    with pytest.raises(muster.NotFoundError):
        failed.result(timeout=5)


def test_watch_reports_every_change_in_order(agents):
    a, b = agents
    events = []
    done = threading.Event()

    def on_change(kind, key, value, revision):
        events.append((kind, key, value))
        if kind == "DELETED":
            done.set()

    b.start_watch_key("watched", on_change)
    a.insert_key_value("watched/x", "1")
    a.update_key_value("watched/x", "2")
    a.delete_key_value("watched/x")
    assert done.wait(5)
    assert events == [("INSERTED", "watched/x", b"1"), ("UPDATED", "watched/x", b"2"),
                      ("DELETED", "watched/x", None)]
    b.stop_watch_key("watched")


def test_barrier_and_its_timeout_naming_the_missing_task(agents):
    a, b = agents
    a.connect()
    b.connect()
    other = threading.Thread(target=lambda: b.wait_at_barrier("step", 5))
    other.start()
    a.wait_at_barrier("step", 5)
    other.join(5)
    with pytest.raises(muster.DeadlineExceededError, match="worker/1"):
        a.wait_at_barrier("alone", 0.3)


def test_peer_error_reaches_on_error_with_its_source_task(leader):
    errors = []
    got = threading.Event()

    def on_error(error):
        errors.append(error)
        got.set()

    a = muster.Agent(leader.address, "worker", 0)
    b = muster.Agent(leader.address, "worker", 1, on_error=on_error)
    try:
        a.connect()
        b.connect()
        a.report_error("disk full", "RESOURCE_EXHAUSTED")
        assert got.wait(5)
        assert isinstance(errors[0], muster.ResourceExhaustedError)
        assert errors[0].source_task == "/job:worker/task:0"
        assert "disk full" in errors[0].message
        assert b.state == "ERROR" and isinstance(b.error, muster.ResourceExhaustedError)
        with pytest.raises(muster.FailedPreconditionError):
            b.connect()
    finally:
        a.close()
        b.close()


def test_connect_errors(leader):
    with muster.Agent(leader.address, "worker", 7, register_timeout=2) as unknown:
        with pytest.raises(muster.InvalidArgumentError, match="task:7"):
            unknown.connect()
    with muster.Agent("127.0.0.1:1", "worker", 0, register_timeout=0.3) as nobody:
        with pytest.raises(muster.UnavailableError, match="nothing listening at 127.0.0.1:1"):
            nobody.connect()


def test_closed_agent_and_garbage_collection_with_pending_calls(leader):
    agent = muster.Agent(leader.address, "worker", 0)
    agent.connect()
    pending = agent.get_key_value_async("never")
    agent.close()
    with pytest.raises(muster.Error):
        pending.result(timeout=10)
    with pytest.raises(muster.FailedPreconditionError, match="closed"):
        agent.try_get_key_value("x")
    other = muster.Agent(leader.address, "worker", 1)
    other.connect()
    waiting = other.get_key_value_async("never")
    del other
    gc.collect()
    with pytest.raises(muster.Error):
        waiting.result(timeout=10)


def parked_gets(leader):
    """The leader's count of gets waiting for their keys, from its /metrics page."""
    with urllib.request.urlopen(leader.http_url + "/metrics", timeout=10) as reply:
        text = reply.read().decode()
    return float(re.search(r"^muster_kv_parked_calls (\S+)$", text, re.M).group(1))


@pytest.mark.parametrize("shutdown_on_destruction", [True, False])
def test_close_ends_blocking_calls_waiting_in_other_threads(shutdown_on_destruction):
    with muster.Leader({"worker": 2}, http="127.0.0.1:0") as leader:
        agent = muster.Agent(leader.address, "worker", 0,
                             shutdown_on_destruction=shutdown_on_destruction)
        agent.connect()
        errors = {}

        def wait(name, call):
            try:
                call()
            except Exception as error:  # noqa: BLE001: the test checks what it is
                errors[name] = error

        threads = [
            threading.Thread(target=wait, daemon=True,
                             args=("get", lambda: agent.get_key_value("never"))),
            threading.Thread(target=wait, daemon=True,
                             args=("barrier", lambda: agent.wait_at_barrier(
                                 "never", 600, tasks=[("worker", 0), ("worker", 1)]))),
        ]
        for thread in threads:
            thread.start()
        def barrier_arrived() -> int:
            try:
                return agent.get_barrier_progress("never")["arrived"]
            except muster.NotFoundError:  # the barrier call has not reached the leader yet
                return 0

        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (
                parked_gets(leader) == 1 and barrier_arrived() == 1):
            time.sleep(0.01)
        assert not errors, errors
        agent.close()  # from another thread than the waiting calls'
        for thread in threads:
            thread.join(timeout=10)
            assert not thread.is_alive(), "close() left a blocking call waiting"
        for name in ("get", "barrier"):
            assert isinstance(errors[name], muster.CancelledError), errors[name]
            # Shutting down (the default) or destroyed without a shutdown.
            assert re.search("task:0 (is shutting down|was destroyed while the call waited)",
                             str(errors[name])), errors[name]


def test_every_status_code_has_its_class():
    assert len(_errors.CODES) == 16
    for name, number in _errors.CODES.items():
        error = _errors.from_status(number, "message", None)
        assert isinstance(error, muster.Error)
        assert error.code == name and error.code_number == number
        assert str(error) == f"{name}: message"
    assert isinstance(_errors.from_status(99, "?"), muster.UnknownError)
    assert issubclass(muster.UnavailableError, ConnectionError)
    assert issubclass(muster.InvalidArgumentError, ValueError)


def test_failed_task_makes_an_internal_error_a_peer_failed_error():
    error = _errors.from_status(13, "Barrier failed", None, None, "/job:worker/task:2")
    assert type(error) is muster.PeerFailedError
    assert isinstance(error, muster.InternalError)
    assert error.task == "/job:worker/task:2" and error.code == "INTERNAL"
    assert type(_errors.from_status(13, "other")) is muster.InternalError
    # Only an INTERNAL status reports a failed peer this way.
    assert type(_errors.from_status(4, "late", None, None, "/job:worker/task:2")) is \
        muster.DeadlineExceededError


def test_identity_from_a_launchers_environment(monkeypatch):
    for name in ("MUSTER_LEADER", "MUSTER_JOB", "MUSTER_TASK"):
        monkeypatch.delenv(name, raising=False)
    assert muster.launch_identity() is None
    with pytest.raises(muster.InvalidArgumentError, match="no launcher found"):
        muster.Agent.from_environment()
    with muster.Leader({"worker": 2}, port=0) as leader:
        monkeypatch.setenv("MUSTER_LEADER", leader.address)
        monkeypatch.setenv("MUSTER_JOB", "worker")
        monkeypatch.setenv("MUSTER_TASK", "1")
        assert muster.launch_identity() == (leader.address, "worker", 1)
        agent = muster.Agent.from_environment(heartbeat_timeout=5)
        agent.connect()
        states = agent.get_task_state([("worker", 1)])
        assert states[0]["state"] == "TASKSTATE_CONNECTED"
        agent.close()
    monkeypatch.setenv("MUSTER_TASK", "one")
    with pytest.raises(muster.InvalidArgumentError, match="MUSTER_TASK='one'"):
        muster.launch_identity()


def test_leader_reconnect_timeout_option():
    with pytest.raises(ValueError, match="timeout"):
        muster.Agent("127.0.0.1:1", "worker", 0, leader_reconnect_timeout=-1)
    with pytest.raises(TypeError):
        muster.Agent("127.0.0.1:1", "worker", 0, leader_reconnect_timeout="30")
    leader = muster.Leader({"worker": 2}, heartbeat_timeout=10)
    waits = muster.Agent(leader.address, "worker", 0, leader_reconnect_timeout=30)
    quick = muster.Agent(leader.address, "worker", 1,
                         leader_reconnect_timeout=datetime.timedelta(0))
    try:
        waits.connect()
        quick.connect()
        waits.insert_key_value("k", "v")
        assert not waits.reconnecting and not quick.reconnecting
        leader.stop()  # no leader comes back: the first waits for one, the second fails
        deadline = time.monotonic() + 10
        while not waits.reconnecting and time.monotonic() < deadline:
            time.sleep(0.01)
        assert waits.reconnecting and waits.state == "RUNNING" and waits.error is None
        while quick.state != "ERROR" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert quick.state == "ERROR" and not quick.reconnecting
        assert isinstance(quick.error, muster.UnavailableError)
        start = time.monotonic()
        waits.shutdown()  # while reconnecting: ends locally, at once
        assert time.monotonic() - start < 5
        assert waits.state == "DISCONNECTED" and not waits.reconnecting
    finally:
        waits.close()
        quick.close()
        leader.stop()


def test_claim_takes_a_free_task_and_leaves_a_held_one_to_its_holder():
    with muster.Leader({"worker": 2}, recoverable_jobs=["worker"]) as leader:
        with muster.Agent(leader.address, "worker", 0, recoverable=True) as holder:
            holder.connect()
            errors = []
            claimer = muster.Agent(leader.address, "worker", 0, recoverable=True, claim=True,
                                   on_error=errors.append)
            with pytest.raises(muster.AlreadyExistsError, match="worker/task:0 is held by"):
                claimer.connect()
            assert claimer.state == "DISCONNECTED"  # not ERROR: no reset() to reach the holder
            claimer.close()
            assert errors == []
            assert holder.state == "RUNNING"
            assert holder.get_task_state([0])[0]["incarnation"] == holder.incarnation
            with muster.Agent(leader.address, "worker", 1, recoverable=True, claim=True) as free:
                free.connect()
                assert free.state == "RUNNING"


def test_job_state_reads_work_before_connect():
    with muster.Leader({"worker": 2}) as leader:
        with muster.Agent(leader.address, "worker", 1) as running:
            running.connect()
            reader = muster.Agent(leader.address, "worker", 0)
            version, states = reader.watch_job_state("worker")
            assert [s["state"] for s in states] == ["TASKSTATE_DISCONNECTED",
                                                    "TASKSTATE_CONNECTED"]
            assert reader.get_task_state([1])[0]["incarnation"] == running.incarnation
            assert reader.state == "DISCONNECTED"
            reader.close()
