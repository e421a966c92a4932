"""torch elastic's rendezvous on Muster: the `muster` backend of torchrun (--rdzv_backend=muster).

torch's dynamic rendezvous keeps its state (the round, its participants, a wait list) in a
backend that sets it by compare-and-swap with fencing tokens. MusterRendezvousBackend keeps it
in one key of a Muster leader. What Muster adds is liveness: every node (each torchrun process)
holds a task of the job `node` (claimed: the first task no live node holds), so the leader knows
within milliseconds when a node's process dies, and every other node is told. Then

- the dead node's entries count as expired at once (torch waits for 3 missed keep-alives,
  15 s), so the next round does not wait for it;
- after the first round, a last call ends as soon as every live node joined (torch waits its
  whole last_call_timeout, 30 s, for nodes that may come);
- a node whose round lost a participant reports a waiting node (num_nodes_waiting), so its
  elastic agent restarts its workers in a new round instead of leaving them blocked;
- news (a state change, a node's failure) makes the next read of the state skip torch's 1-s
  cache, and wakes the threads that wait for it: see wait_for_news(), which muster.torchrun
  puts under the elastic agent's monitor sleep and the rendezvous's polling.
"""

import datetime
import json
import os
import pickle
import socket
import threading
import time
from typing import Dict, List, Optional, Set, Tuple
from urllib.parse import quote

from torch.distributed.elastic.rendezvous import (RendezvousConnectionError, RendezvousError,
                                                  RendezvousParameters, RendezvousStateError)
from torch.distributed.elastic.rendezvous.dynamic_rendezvous import (DynamicRendezvousHandler,
                                                                     RendezvousBackend,
                                                                     RendezvousTimeout, Token,
                                                                     _get_timeout,
                                                                     _RendezvousStateHolder)
from torch.distributed.elastic.rendezvous.utils import (_matches_machine_hostname,
                                                        parse_rendezvous_endpoint)

from . import _errors
from ._agent import Agent, _read_token
from ._hang_watch import HangWatch
from ._convert import join_address
from ._leader import Leader

__all__ = ["MusterRendezvousBackend", "MusterRendezvousHandler", "NodeMembership",
           "create_backend", "create_handler", "wait_for_news"]

DEFAULT_PORT = 29400
DEFAULT_JOB = "node"
_HEADER = b"muster-rdzv 1 "  # then the write's generation, a newline and torch's state
_LONG_AGO = datetime.datetime(2000, 1, 1)
_CONNECTED = "TASKSTATE_CONNECTED"

# News ---------------------------------------------------------------------------------------

_news = threading.Condition()
_news_seq = 0


def _tell_news() -> None:
    global _news_seq
    with _news:
        _news_seq += 1
        _news.notify_all()


def news_seq() -> int:
    """How many pieces of news have arrived (a rendezvous state change, a node's failure)."""
    with _news:
        return _news_seq


_news_used = 0  # the news a sync of the state has taken in (see _FreshOnNews)


def news_used() -> int:
    """The news up to which the rendezvous state was read again: a sleeper waits for news after
    this, so that news that came while the state was being read is not slept through."""
    with _news:
        return _news_used


def _use_news(seq: int) -> None:
    global _news_used
    with _news:
        _news_used = max(_news_used, seq)


def wait_for_news(timeout: float, since: Optional[int] = None) -> bool:
    """Waits up to `timeout` seconds for news after `since` (news_seq(); default: now). True when
    news came."""
    deadline = time.monotonic() + max(0.0, timeout)
    with _news:
        seen = _news_seq if since is None else since
        while _news_seq == seen:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            _news.wait(left)
        return True


# State encoding ------------------------------------------------------------------------------


def _encode(generation: int, state: bytes) -> bytes:
    return _HEADER + str(generation).encode() + b"\n" + state


def _decode(value: bytes, key: str) -> Tuple[int, bytes]:
    generation, newline, state = value[len(_HEADER):].partition(b"\n")
    if not value.startswith(_HEADER) or not newline or not generation.isdigit():
        raise RendezvousStateError(
            f"The rendezvous state at Muster key {key!r} is corrupt: it does not start with "
            f"{_HEADER!r} and a generation (its first bytes: {value[:32]!r}). Another program "
            "wrote the key: use another --rdzv_id, or delete the key (muster kv rm).")
    return int(generation), state


def _run_key(run_id: str, name: str) -> str:
    """The Muster key (or directory) `name` of rendezvous `run_id`."""
    return f"torch/rendezvous/{quote(run_id, safe='')}/{name}"


def _connection_error(error: Exception, what: str) -> RendezvousConnectionError:
    return RendezvousConnectionError(f"The Muster rendezvous could not {what}: {error}")


# Membership ----------------------------------------------------------------------------------


def _this_node() -> Tuple[str, int]:
    # What torch's _NodeDescGenerator names this process's rendezvous node by.
    return socket.getfqdn(), os.getpid()


class NodeMembership:
    """This process's node in the rendezvous: the task of job `job` it claimed (the first one no
    live node holds), the node's name in torch's state (host name and pid) published under
    `directory`, and a thread that brings news of the job's task states.

    liveness() says which of the published nodes are alive: those whose task is CONNECTED with
    the incarnation they published."""

    def __init__(self, leader: str, job: str, directory: str, *, heartbeat_timeout: float,
                 claim_timeout: float, token: Optional[str] = None):
        self._job = job
        self._directory = directory.rstrip("/")
        self._closed = False
        self.agent, self.task = self._claim(leader, job, heartbeat_timeout, claim_timeout, token)
        self.name = _this_node()
        entry = {"task": self.task, "incarnation": self.agent.incarnation,
                 "addr": self.name[0], "pid": self.name[1]}
        try:
            self.agent.insert_key_value(
                f"{self._directory}/{self.task}-{self.agent.incarnation}",
                json.dumps(entry, sort_keys=True), allow_overwrite=True)
        except _errors.Error as e:
            self.agent.close()
            raise _connection_error(e, "publish this node") from None
        self._watcher = threading.Thread(target=self._watch_tasks, daemon=True,
                                         name="muster-rendezvous-tasks")
        self._watcher.start()

    def _job_states(self, agent: Agent) -> List[Dict]:
        try:
            _, states = agent.watch_job_state(self._job)
        except _errors.InvalidArgumentError as e:
            raise RendezvousError(
                f"The Muster leader has no job {self._job!r} for the rendezvous's nodes ({e}). "
                f"Start it with `muster serve --job {self._job}=MAX_NODES --recoverable-job "
                f"{self._job}`, or name its job with --rdzv_conf job=NAME.") from None
        return states

    def _claim(self, leader: str, job: str, heartbeat_timeout: float, claim_timeout: float,
               token: Optional[str]) -> Tuple[Agent, int]:
        """The agent of the first task no live node holds, connected, and that task's id."""
        deadline = time.monotonic() + claim_timeout

        def new_reader() -> Agent:
            # Reads before registering: an agent that never connects reaches the leader anyway.
            return Agent(leader, job, 0, token=token, wait_for_leader=True,
                         register_timeout=claim_timeout)

        reader = new_reader()
        try:
            while True:
                try:
                    states = self._job_states(reader)
                except (_errors.UnavailableError, _errors.DeadlineExceededError):
                    # The node that hosts the leader may start after this one, as with c10d.
                    if time.monotonic() >= deadline:
                        raise
                    reader.close()
                    wait_for_news(0.5)
                    reader = new_reader()
                    continue
                for i, state in enumerate(states):
                    if state["state"] == _CONNECTED:
                        continue
                    agent = Agent(leader, job, i, recoverable=True, claim=True, token=token,
                                  heartbeat_timeout=heartbeat_timeout,
                                  register_timeout=max(1.0, deadline - time.monotonic()),
                                  on_error=lambda error: _tell_news())
                    try:
                        agent.connect()
                        return agent, i
                    except (_errors.AlreadyExistsError, _errors.AbortedError):
                        agent.close()  # taken meanwhile, or in an error it cannot leave
                    except BaseException:
                        agent.close()
                        raise
                if time.monotonic() >= deadline:
                    raise RendezvousError(
                        f"Every task of the Muster job {job!r} ({len(states)}) is held by a live "
                        f"node; none was free for {claim_timeout:.0f} s. Give the job more tasks "
                        f"(muster serve --job {job}=N) or start fewer nodes.")
                wait_for_news(1.0)
        except _errors.Error as e:
            raise _connection_error(e, f"join the leader at {leader}") from None
        finally:
            reader.close()

    def _watch_tasks(self) -> None:
        version = None
        while not self._closed:
            try:
                version, _ = self.agent.watch_job_state(self._job, version)
            except _errors.Error:
                if self._closed:
                    return
                try:
                    if self.agent.state != "RUNNING":
                        return
                except _errors.Error:  # closed meanwhile
                    return
                time.sleep(0.1)
                continue
            _tell_news()

    def liveness(self) -> Tuple[Set[Tuple[str, int]], Dict[Tuple[str, int], List[str]]]:
        """(alive, dead): the (host name, pid) of the published nodes whose task holds their
        incarnation, and the others', each with the keys that published it."""
        entries = self.agent.get_key_value_dir(self._directory)
        states = self._job_states(self.agent)
        alive: Set[Tuple[str, int]] = set()
        dead: Dict[Tuple[str, int], List[str]] = {}
        for key, value in entries:
            try:
                entry = json.loads(value)
                task, incarnation = int(entry["task"]), int(entry["incarnation"])
                name = (str(entry["addr"]), int(entry["pid"]))
            except (ValueError, KeyError, TypeError):
                continue  # not an entry of this module: ignored
            if (0 <= task < len(states) and states[task]["state"] == _CONNECTED and
                    states[task]["incarnation"] == incarnation):
                alive.add(name)
            else:
                dead.setdefault(name, []).append(key)
        return alive, {name: keys for name, keys in dead.items() if name not in alive}

    def forget(self, keys: List[str]) -> None:
        """Deletes the entries of dead nodes that the state no longer names (best effort)."""
        for key in keys:
            self.agent.delete_key_value_async(key)

    def close(self) -> None:
        """Leaves the job, and waits for the watcher thread to end: a daemon thread still
        returning from a call into the extension while the interpreter finalizes would be
        ended inside it (std::terminate)."""
        self._closed = True
        self.agent.close()
        if self._watcher is not threading.current_thread():
            self._watcher.join(timeout=10)


# Backend -------------------------------------------------------------------------------------


class MusterRendezvousBackend(RendezvousBackend):
    """torch's RendezvousBackend over one key of a Muster leader, set by compare-and-swap.

    The key holds a header, the write's generation and torch's state; the token of a state is
    the whole value, so a token matches only the write it came from. With a NodeMembership, the
    state handed to torch counts the entries of dead nodes as expired and ends a last call that
    every live node joined (see the module's text)."""

    def __init__(self, agent: Agent, run_id: str,
                 membership: Optional[NodeMembership] = None) -> None:
        if not run_id:
            raise ValueError("The run id must be a non-empty string.")
        self._agent = agent
        self._key = _run_key(run_id, "state")
        self._membership = membership

    @property
    def name(self) -> str:
        return "muster"

    @property
    def key(self) -> str:
        """The Muster key that holds the state."""
        return self._key

    def get_state(self) -> Optional[Tuple[bytes, Token]]:
        try:
            value = self._agent.try_get_key_value(self._key)
        except _errors.NotFoundError:
            return None
        except _errors.Error as e:
            raise _connection_error(e, f"read {self._key!r}") from None
        _, state = _decode(value, self._key)
        return self._seen(state), value

    def set_state(self, state: bytes,
                  token: Optional[Token] = None) -> Optional[Tuple[bytes, Token, bool]]:
        generation = 1
        if token is not None:
            try:
                generation = _decode(token, self._key)[0] + 1
            except (RendezvousStateError, TypeError):
                # Not a token of this backend: nothing is set (as torch's c10d backend does).
                current = self.get_state()
                return None if current is None else (*current, False)
        desired = _encode(generation, bytes(state))
        try:
            succeeded, current = self._agent.compare_and_swap(self._key, token, desired)
        except _errors.Error as e:
            raise _connection_error(e, f"write {self._key!r}") from None
        if succeeded:
            return self._seen(bytes(state)), desired, True
        if current is None:
            return None  # deleted meanwhile: there is no state
        _, stored = _decode(current, self._key)
        return self._seen(stored), current, False

    def _seen(self, state: bytes) -> bytes:
        """The state as this node should see it: dead nodes expired, a last call ended when every
        live node joined. Unchanged without a membership or when torch's state cannot be read
        here (torch then reports it)."""
        if self._membership is None:
            return state
        try:
            alive, dead = self._membership.liveness()
        except _errors.Error as e:
            raise _connection_error(e, "read the nodes' liveness") from None
        try:
            decoded = pickle.loads(state)
            heartbeats = decoded.last_heartbeats
            participants = decoded.participants
        except Exception:  # noqa: BLE001: torch's own sync raises RendezvousStateError for it
            return state
        changed = False
        for node in heartbeats:
            if (node.fqdn, node.pid) in dead and heartbeats[node] > _LONG_AGO:
                heartbeats[node] = _LONG_AGO
                changed = True
        # A dead node that the state no longer names cannot come back into it (only a node adds
        # itself): its entries are not needed any more.
        named = {(n.fqdn, n.pid) for n in (*heartbeats, *participants, *decoded.wait_list)}
        stale = [key for name, keys in dead.items() if name not in named for key in keys]
        if stale:
            self._membership.forget(stale)
        # After the first round (the job is recovering or growing), a last call waits only
        # for the nodes alive; the first round keeps torch's, for nodes still starting up.
        joined = {(n.fqdn, n.pid) for n in participants} - dead.keys()
        if (decoded.round > 0 and not decoded.complete and decoded.deadline is not None and
                alive and alive <= joined and decoded.deadline > _LONG_AGO):
            decoded.deadline = _LONG_AGO
            changed = True
        return pickle.dumps(decoded) if changed else state


# Handler -------------------------------------------------------------------------------------


class _FreshOnNews(_RendezvousStateHolder):
    """torch's state holder, whose cached state (kept 1 s) is read again once news came."""

    def __init__(self, holder: _RendezvousStateHolder) -> None:
        self._holder = holder
        self._seen = -1

    @property
    def state(self):
        return self._holder.state

    def mark_dirty(self) -> None:
        self._holder.mark_dirty()

    def sync(self):
        seq = news_seq()
        if seq != self._seen and hasattr(self._holder, "_last_sync_time"):
            self._holder._last_sync_time = -1  # news since the last read: no cached state
        result = self._holder.sync()
        self._seen = seq
        _use_news(seq)
        return result


class MusterRendezvousHandler(DynamicRendezvousHandler):
    """torch's dynamic rendezvous handler, whose state is read again on news, and which also
    reports a node as waiting when its round lost a participant (so that the elastic agent
    restarts its workers in a new round at once)."""

    _round_size = 0
    _round = -1

    def __init__(self, node, settings, backend_name, store, state_holder) -> None:
        super().__init__(node, settings, backend_name, store, _FreshOnNews(state_holder))

    def next_rendezvous(self):
        store, rank, world_size = super().next_rendezvous()
        self._round = self._state_holder.state.round
        self._round_size = world_size
        return store, rank, world_size

    def num_nodes_waiting(self) -> int:
        waiting = super().num_nodes_waiting()
        state = self._state_holder.state
        lost = state.round != self._round or len(state.participants) < self._round_size
        if waiting == 0 and self._round >= 0 and lost:
            return 1  # a participant of this round is gone: start the next one
        return waiting


# Construction from torchrun's parameters -----------------------------------------------------

_lock = threading.Lock()
_made: List[Tuple[NodeMembership, Optional[Leader], Optional[HangWatch]]] = []


def _host_leader(params: RendezvousParameters, host: str, port: int, job: str,
                 heartbeat_timeout: float, token: str) -> Optional[Leader]:
    explicit = params.get_as_bool("is_host")
    is_host = explicit if explicit is not None else _matches_machine_hostname(host)
    if not is_host:
        return None
    try:
        return Leader({job: params.max_nodes}, host="0.0.0.0", port=port,
                      heartbeat_timeout=heartbeat_timeout, recoverable_jobs=[job], token=token)
    except _errors.Error as e:
        if explicit:
            raise RendezvousConnectionError(
                f"is_host: this node could not host the Muster leader on port {port}: {e}"
            ) from None
        return None  # another node on this host hosts it: join that one


def create_backend(params: RendezvousParameters):
    """(MusterRendezvousBackend, muster.torch.Store) for torchrun's rendezvous parameters.

    --rdzv_endpoint HOST:PORT (default port 29400) is the Muster leader. As with torch's c10d
    backend, a node whose host name or address matches HOST hosts it in its process (the
    first such node on that host; is_host=1 or 0 decides), with a job of max_nodes tasks;
    otherwise the node joins a running one (muster serve --job node=MAX --recoverable-job node).
    --rdzv_conf keys: job (default "node"), heartbeat_timeout (seconds a silent node counts as
    alive, default 10), read_timeout (the store's timeout, default 60), is_host, hang_timeout
    (seconds a worker that reports steps with muster.torch.report_progress may go without a new
    one before its node kills it; default 0: not watched; see muster._hang_watch)."""
    from .torch import Store  # muster.torch imports this module

    host, port = parse_rendezvous_endpoint(params.endpoint, default_port=DEFAULT_PORT)
    job = params.get("job", DEFAULT_JOB)
    heartbeat_timeout = float(params.get("heartbeat_timeout", 10))
    read_timeout = float(params.get_as_int("read_timeout", 60))
    hang_timeout = float(params.get("hang_timeout", 0))
    if read_timeout <= 0 or heartbeat_timeout <= 0 or hang_timeout < 0:
        raise ValueError("read_timeout and heartbeat_timeout must be positive, hang_timeout 0 "
                         "(off) or positive (seconds)")
    token = _read_token(None)
    leader = _host_leader(params, host, port, job, heartbeat_timeout, token)
    try:
        membership = NodeMembership(join_address(host, port), job, _run_key(params.run_id, "nodes"),
                                    heartbeat_timeout=heartbeat_timeout,
                                    claim_timeout=float(params.get_as_int("join_timeout", 600)),
                                    token=token)
    except BaseException:
        if leader is not None:
            leader.stop()
        raise
    hang_watch = HangWatch(hang_timeout) if hang_timeout > 0 else None
    with _lock:
        _made.append((membership, leader, hang_watch))
    backend = MusterRendezvousBackend(membership.agent, params.run_id, membership)
    try:
        membership.agent.start_watch_key(backend.key, lambda *change: _tell_news())
    except _errors.Error as e:
        raise _connection_error(e, f"watch {backend.key!r}") from None
    return backend, Store(membership.agent, datetime.timedelta(seconds=read_timeout),
                          _run_key(params.run_id, "store"))


def create_handler(params: RendezvousParameters) -> MusterRendezvousHandler:
    """The `muster` rendezvous handler (what torchrun's --rdzv_backend=muster makes)."""
    backend, store = create_backend(params)
    timeout = RendezvousTimeout(_get_timeout(params, "join"), _get_timeout(params, "last_call"),
                                _get_timeout(params, "close"))
    return MusterRendezvousHandler.from_backend(params.run_id, store, backend, params.min_nodes,
                                                params.max_nodes, timeout)


def close_all() -> None:
    """Leaves every rendezvous this process joined, and stops a leader it hosts (at exit)."""
    with _lock:
        made = list(_made)
        _made.clear()
    for membership, leader, hang_watch in made:
        if hang_watch is not None:
            hang_watch.close()
        try:
            membership.close()
        except _errors.Error:
            pass
        if leader is not None:
            leader.stop()
