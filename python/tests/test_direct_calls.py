"""Direct key-value calls from Python: blocking calls are answered over the agent's own
connections to the leader's direct port (asynchronous ones and agents told not to go through its
network thread), with the same values and exceptions; close() from another thread ends a waiting
direct get; muster.torch.Store's calls go direct."""

import threading
import time

import pytest

import muster


def test_blocking_calls_go_direct_async_ones_do_not(agents):
    agent = agents[0]
    agent.connect()
    agent.insert_key_value("d/a", b"one")
    with pytest.raises(muster.AlreadyExistsError):
        agent.insert_key_value("d/a", b"two")
    assert agent.get_key_value("d/a", timeout=5) == b"one"
    assert agent.try_get_key_value("d/a") == b"one"
    with pytest.raises(muster.NotFoundError):
        agent.try_get_key_value("d/none")
    assert agent.increment_key_value("d/n", 4) == 4
    assert agent.compare_and_swap("d/a", b"one", b"two") == (True, b"two")
    assert [key for key, _ in agent.get_key_value_dir("d")] == ["d/a", "d/n"]
    agent.delete_key_value("d/n")
    assert agent.direct_calls_answered == 9
    assert agent.try_get_key_value_async("d/a").result(timeout=10) == b"two"
    assert agent.direct_calls_answered == 9


def test_an_agent_without_direct_calls_answers_the_same(leader):
    agent = muster.Agent(leader.address, "worker", 0, direct_calls=False)
    try:
        agent.connect()
        agent.insert_key_value("k", b"v")
        assert agent.get_key_value("k") == b"v"
        assert agent.direct_calls_answered == 0
    finally:
        agent.close()


def test_close_from_another_thread_ends_a_waiting_direct_get(leader):
    agent = muster.Agent(leader.address, "worker", 0)
    agent.connect()
    outcome = {}

    def wait():
        try:
            agent.get_key_value("never")
        except muster.Error as error:
            outcome["error"] = error

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.3)
    assert waiter.is_alive()
    started = time.monotonic()
    agent.close()
    waiter.join(timeout=10)
    assert not waiter.is_alive()
    assert time.monotonic() - started < 5
    assert isinstance(outcome.get("error"), muster.CancelledError), outcome


def test_torch_store_calls_go_direct(agents):
    torch_store = pytest.importorskip("muster.torch")
    agent = agents[0]
    agent.connect()
    store = torch_store.Store(agent)
    store.set("k", "v")
    assert store.get("k") == b"v"
    assert store.add("n", 2) == 2
    assert store.compare_set("k", "v", "w") == b"w"
    store.wait(["k"])
    assert agent.direct_calls_answered >= 5
