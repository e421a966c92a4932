"""A Python-hosted leader with a state dir, stopped and started again on the same port and dir:
agents with leader_reconnect_timeout keep their calls and continue, and their watches resume
(or, when the leader's change history no longer reaches back, are listed in dropped_watches);
without the timeout, or against a leader started afresh, they fail."""

import threading
import time

import pytest

import muster


def _agent(leader, task, reconnect, on_error=None):
    return muster.Agent(leader.address, "worker", task, heartbeat_timeout=2.0,
                        leader_reconnect_timeout=reconnect, on_error=on_error)


def test_restarted_leader_blocked_get_and_barrier_complete(tmp_path):
    state = str(tmp_path / "state")
    leader = muster.Leader({"worker": 2}, state_dir=state, reconnect_window=10.0)
    assert "empty, a new job" in leader.recovery
    port = leader.port
    errors = []
    a = _agent(leader, 0, 30.0, errors.append)
    b = _agent(leader, 1, 30.0, errors.append)
    for agent in (a, b):
        agent.connect()
    got, passed = {}, {}
    getter = threading.Thread(target=lambda: got.update(v=a.get_key_value("boot/key", timeout=30)))
    waiter = threading.Thread(target=lambda: passed.update(v=b.wait_at_barrier("meet", 30)))
    getter.start()
    waiter.start()
    a.increment_key_value("count", 1)
    leader.stop()  # with a state dir, a pause: the waiting calls are not answered
    restarted = muster.Leader({"worker": 2}, port=port, state_dir=state, reconnect_window=10.0)
    assert restarted.incarnation == leader.incarnation
    assert "recovered 2 tasks (2 connected" in restarted.recovery
    with _agent(restarted, 0, 0.0) as writer:  # key-value calls before connect: no task
        writer.insert_key_value("boot/key", "after-restart")
        assert writer.try_get_key_value("count") == b"1"
    getter.join(30)
    assert got["v"] == b"after-restart"
    a.wait_at_barrier("meet", 30)
    waiter.join(30)
    assert "v" in passed
    assert a.increment_key_value("count", 1) == 2  # exactly once across the restart
    a.shutdown()
    b.shutdown()
    assert errors == []
    restarted.stop()


def test_leader_back_without_its_state_agent_fails(tmp_path):
    leader = muster.Leader({"worker": 1}, heartbeat_timeout=2.0)  # memory only
    port = leader.port
    errors = []
    failed = threading.Event()
    agent = _agent(leader, 0, 10.0, lambda error: (errors.append(error), failed.set()))
    agent.connect()
    leader.stop()
    fresh = muster.Leader({"worker": 1}, port=port)
    assert failed.wait(15)
    assert len(errors) == 1 and errors[0].code == "UNAVAILABLE"
    assert "refused" in errors[0].message or "without the state" in errors[0].message
    fresh.stop()


def test_reconnect_window_needs_a_state_dir():
    with pytest.raises(muster.InvalidArgumentError, match="needs state_dir"):
        muster.Leader({"worker": 1}, reconnect_window=5.0)


def _wait_until(condition, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return condition()


def test_watch_the_restarted_leader_cannot_resume_is_dropped(tmp_path):
    state = str(tmp_path / "state")
    leader = muster.Leader({"worker": 1}, state_dir=state, reconnect_window=10.0)
    port = leader.port
    errors, lr_events, ctl_events = [], [], []
    agent = _agent(leader, 0, 30.0, errors.append)
    agent.connect()
    for key in ("cfg/other", "ctl/b"):  # the watches start at a revision above 0
        agent.insert_key_value(key, "0")
    agent.start_watch_key("/cfg//lr", lambda kind, key, value, rev: lr_events.append(value))
    agent.start_watch_key("ctl/a", lambda kind, key, value, rev: ctl_events.append(value))
    agent.insert_key_value("ctl/a", "before")
    # 1100 changes to another key of the directory cfg: the leader keeps the last 1024 changes
    # of a directory, none of them of cfg/lr, so the watch's revision falls out of the history.
    writes = [agent.insert_key_value_async("cfg/other", str(i), allow_overwrite=True)
              for i in range(1100)]
    for write in writes:
        write.result(30)
    assert agent.dropped_watches == []
    leader.stop()  # with a state dir, a pause
    assert _wait_until(lambda: agent.reconnecting)
    restarted = muster.Leader({"worker": 1}, port=port, state_dir=state, reconnect_window=10.0)
    assert _wait_until(lambda: not agent.reconnecting and agent.dropped_watches)
    assert agent.dropped_watches == ["cfg/lr"]  # the normalized key
    assert agent.state == "RUNNING" and agent.error is None
    agent.insert_key_value("ctl/a", "after", allow_overwrite=True)  # the resumed watch goes on
    assert _wait_until(lambda: ctl_events == [b"before", b"after"])
    agent.insert_key_value("cfg/lr", "unseen")  # the dropped watch gets nothing
    agent.start_watch_key("cfg/lr", lambda kind, key, value, rev: lr_events.append(value))
    assert agent.dropped_watches == []  # watched again
    agent.update_key_value("cfg/lr", "seen")
    assert _wait_until(lambda: lr_events == [b"seen"])
    agent.shutdown()
    assert errors == []
    restarted.stop()
