"""torch elastic's rendezvous on Muster: MusterRendezvousBackend keeps torch's backend contract
(state and fencing tokens: current, old, None, not ours; corrupt state; a lost leader), torchrun
finds it as `muster`, nodes claim distinct tasks, and a dead node's entries expire at once."""

import datetime
import pickle
import select
import signal
import socket
import subprocess
import time

import pytest
from torch.distributed.elastic.rendezvous import (RendezvousConnectionError, RendezvousError,
                                                  RendezvousParameters, RendezvousStateError,
                                                  rendezvous_handler_registry)
from torch.distributed.elastic.rendezvous.dynamic_rendezvous import _NodeDesc, _RendezvousState

import muster
import muster.torch
from muster import _rendezvous
from muster.torch import MusterRendezvousBackend

PYTHON = "/usr/bin/python3"


@pytest.fixture
def backend():
    with muster.Leader({"node": 1}) as leader:
        agent = muster.Agent(leader.address, "node", 0)
        yield MusterRendezvousBackend(agent, "run 1"), agent, leader
        agent.close()


def test_state_and_tokens_follow_torchs_backend_contract(backend):
    b, _, _ = backend
    assert b.name == "muster"
    assert b.get_state() is None
    first = b.set_state(b"s1")  # token None: set only when there is no state
    assert first is not None and first[0] == b"s1" and first[2] is True
    t1 = first[1]
    assert b.get_state() == (b"s1", t1)
    assert b.set_state(b"s2") == (b"s1", t1, False)  # None, but a state exists
    state, t2, ok = b.set_state(b"s2", t1)  # the current token
    assert (state, ok) == (b"s2", True) and t2 != t1
    assert b.set_state(b"s3", t1) == (b"s2", t2, False)  # an old token: the current state
    assert b.set_state(b"s3", "not a token") == (b"s2", t2, False)  # not ours: nothing set
    assert b.set_state(b"s3", b"not ours either") == (b"s2", t2, False)
    same, t3, ok = b.set_state(b"s2", t2)  # the same state again is a new write, a new token
    assert (same, ok) == (b"s2", True) and t3 != t2
    assert b.set_state(b"s4", t2) == (b"s2", t3, False)


def test_an_invalid_token_without_state_returns_none(backend):
    b, _, _ = backend
    assert b.set_state(b"s", "not a token") is None


def test_corrupt_state_raises_rendezvous_state_error(backend):
    b, agent, _ = backend
    _, token, _ = b.set_state(b"s1")
    agent.insert_key_value(b.key, b"written by someone else", allow_overwrite=True)
    with pytest.raises(RendezvousStateError, match="is corrupt"):
        b.get_state()
    with pytest.raises(RendezvousStateError, match="another --rdzv_id"):
        b.set_state(b"s2", token)


def test_a_lost_leader_raises_rendezvous_connection_error(backend):
    b, _, leader = backend
    leader.stop()
    with pytest.raises(RendezvousConnectionError, match="could not read"):
        b.get_state()
    with pytest.raises(RendezvousConnectionError, match="could not write"):
        b.set_state(b"s")


def test_runs_keep_their_states_apart(backend):
    b, agent, _ = backend
    other = MusterRendezvousBackend(agent, "run/2")
    b.set_state(b"one")
    assert other.get_state() is None
    with pytest.raises(ValueError):
        MusterRendezvousBackend(agent, "")


def test_torchrun_finds_the_muster_backend():
    with muster.Leader({"node": 1}, recoverable_jobs=["node"]) as leader:
        params = RendezvousParameters("muster", leader.address, "r", 1, 1, is_host=False)
        handler = rendezvous_handler_registry.create_handler(params)
        try:
            assert isinstance(handler, _rendezvous.MusterRendezvousHandler)
            assert handler.get_backend() == "muster"
            assert handler.get_run_id() == "r"
            # This node holds the job's one task.
            with muster.Agent(leader.address, "node", 0) as reader:
                assert reader.get_task_state([0])[0]["state"] == "TASKSTATE_CONNECTED"
        finally:
            _rendezvous.close_all()


# Nodes: a claimed task each, liveness from the leader -----------------------------------------

NODE = r"""
import sys, time
from muster import _rendezvous
m = _rendezvous.NodeMembership(sys.argv[1], "node", "torch/rendezvous/r/nodes",
                               heartbeat_timeout=10, claim_timeout=float(sys.argv[2]))
print(m.task, flush=True)
time.sleep(600)
"""


def _start_node(leader, claim_timeout=20.0):
    return subprocess.Popen([PYTHON, "-c", NODE, leader.address, str(claim_timeout)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _state_with(nodes, deadline=None, round_=1, waiting=()):
    state = _RendezvousState()
    state.round = round_
    now = datetime.datetime.utcnow()
    for node in nodes:
        state.participants[node] = 0
        state.last_heartbeats[node] = now
    for node in waiting:
        state.wait_list.add(node)
        state.last_heartbeats[node] = now
    state.deadline = deadline
    return pickle.dumps(state)


def test_nodes_claim_distinct_tasks_and_a_dead_nodes_task_is_claimed_again():
    with muster.Leader({"node": 2}, recoverable_jobs=["node"]) as leader:
        first, second = _start_node(leader), _start_node(leader)
        try:
            tasks = sorted(int(p.stdout.readline()) for p in (first, second))
            assert tasks == [0, 1]
            third = _start_node(leader, claim_timeout=30)
            # Every task is held: the third waits for one, and claims none meanwhile.
            assert select.select([third.stdout], [], [], 1.5)[0] == []
            assert third.poll() is None
            first.send_signal(signal.SIGKILL)
            first.wait()
            start = time.monotonic()
            assert third.stdout.readline().strip() in ("0", "1")
            assert time.monotonic() - start < 5
            third.kill()
            third.wait()
        finally:
            for p in (first, second):
                p.kill()
                p.wait()


def test_a_node_started_before_its_leader_waits_for_it():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    class NotYet:
        address = f"127.0.0.1:{port}"

    node = _start_node(NotYet)
    try:
        time.sleep(1.5)
        assert node.poll() is None
        with muster.Leader({"node": 1}, port=port, recoverable_jobs=["node"]):
            assert node.stdout.readline().strip() == "0"
    finally:
        node.kill()
        node.wait()


def test_claim_gives_up_with_a_clear_error_when_no_task_frees():
    with muster.Leader({"node": 1}, recoverable_jobs=["node"]) as leader:
        holder = _start_node(leader)
        try:
            assert holder.stdout.readline().strip() == "0"
            with pytest.raises(RendezvousError, match="held by a live node"):
                _rendezvous.NodeMembership(leader.address, "node", "torch/rendezvous/r/nodes",
                                           heartbeat_timeout=10, claim_timeout=1)
        finally:
            holder.kill()
            holder.wait()


def test_a_leader_without_the_job_is_refused_naming_what_to_start():
    with muster.Leader({"worker": 1}) as leader:
        with pytest.raises(RendezvousError, match="muster serve --job node=MAX_NODES"):
            _rendezvous.NodeMembership(leader.address, "node", "torch/rendezvous/r/nodes",
                                       heartbeat_timeout=10, claim_timeout=1)


def test_a_dead_nodes_entries_expire_at_once_and_a_later_last_call_ends_when_all_joined():
    with muster.Leader({"node": 3}, recoverable_jobs=["node"]) as leader:
        me = _rendezvous.NodeMembership(leader.address, "node", "torch/rendezvous/r/nodes",
                                        heartbeat_timeout=10, claim_timeout=10)
        other = _start_node(leader)
        try:
            int(other.stdout.readline())
            backend = MusterRendezvousBackend(me.agent, "r", me)
            mine = _NodeDesc(me.name[0], me.name[1], 0)
            theirs = _NodeDesc(me.name[0], other.pid, 0)
            stranger = _NodeDesc("elsewhere", 1, 0)  # not a Muster node: left to torch
            later = datetime.datetime.utcnow() + datetime.timedelta(seconds=30)

            # The first round keeps torch's last call, for nodes still starting up.
            _, token, _ = backend.set_state(_state_with([mine, theirs], later, round_=0))
            assert pickle.loads(backend.get_state()[0]).deadline == later

            # Later rounds: both alive, both joined: the last call ends; the stranger is left
            # alone.
            _, token, _ = backend.set_state(_state_with([mine, theirs, stranger], later), token)
            seen = pickle.loads(backend.get_state()[0])
            assert seen.deadline < datetime.datetime(2001, 1, 1)
            assert all(t > datetime.datetime(2001, 1, 1) for t in seen.last_heartbeats.values())

            # Only one joined while the other lives (it waits for the next round): the last
            # call runs on.
            backend.set_state(_state_with([mine], later, waiting=[theirs]), token)
            assert pickle.loads(backend.get_state()[0]).deadline == later

            other.send_signal(signal.SIGKILL)
            other.wait()
            deadline = time.monotonic() + 5
            while True:
                state, token = backend.get_state()
                seen = pickle.loads(backend.set_state(_state_with([mine, theirs], later),
                                                      token)[0])
                if seen.last_heartbeats[theirs] < datetime.datetime(2001, 1, 1):
                    break
                assert time.monotonic() < deadline, "the dead node never expired"
                time.sleep(0.05)
            assert seen.last_heartbeats[mine] > datetime.datetime(2001, 1, 1)
            assert seen.deadline < datetime.datetime(2001, 1, 1)  # every live node joined

            # Once the state no longer names the dead node, its entry goes; the live one stays.
            nodes = "torch/rendezvous/r/nodes"
            assert len(me.agent.get_key_value_dir(nodes)) == 2
            _, token = backend.get_state()
            backend.set_state(_state_with([mine], later), token)
            deadline = time.monotonic() + 5
            while len(me.agent.get_key_value_dir(nodes)) != 1:
                assert time.monotonic() < deadline, "the dead node's entry stayed"
                time.sleep(0.02)
            assert f'"pid": {me.name[1]}' in me.agent.get_key_value_dir(nodes)[0][1].decode()
        finally:
            other.kill()
            other.wait()
            me.close()


def test_news_wakes_a_waiter():
    since = _rendezvous.news_seq()
    assert not _rendezvous.wait_for_news(0.05, since)
    _rendezvous._tell_news()
    assert _rendezvous.wait_for_news(5, since)
