"""PyTorch on Muster: a torch.distributed Store over a muster.Agent, and the muster://
rendezvous, so that every rank of a job is a Muster task whose failure the others learn of.

    import torch.distributed as dist
    import muster.torch  # registers muster://
    dist.init_process_group("gloo", init_method="muster://10.0.0.1:29500?rank=0&world_size=4")

URL parameters (MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE fill what the URL leaves out):
    rank, world_size   this process's rank and the number of ranks, unless init_process_group
                       gets them as its rank= and world_size= arguments (never both: torch
                       then refuses a URL that has them)
    job                the Muster job name of the ranks (default "worker")
    heartbeat_timeout  seconds without heartbeats before a rank counts as failed (default 10)
    external_leader    1: a leader already runs at HOST:PORT (muster serve); by default rank 0
                       hosts it in its process, like TCPStore's master
    leader_reconnect_timeout  seconds a rank waits for a lost external leader to come back
                       (muster serve --state-dir restarted, or an HA job's standby taking
                       over) before it fails (default 0: at once)
    on_peer_failure    exit (default) | raise: what a rank does when another fails

An HA job's leaders (muster serve --ha-etcd, docs/operations.md "High availability") are given
as a list, muster://HOST:PORT,HOST:PORT?...: they run on their own (external_leader), and each
rank's agent finds the active one; with leader_reconnect_timeout it follows a failover (without
it, a rank fails when the active leader is lost).

Under `muster run` (docs/operations.md) the launcher's environment names the leader, which
already runs, and this rank's task (MUSTER_LEADER, MUSTER_JOB, MUSTER_TASK): "muster://" alone
joins it. Under Slurm (srun), Open MPI, PMIx, MPICH or a Kubernetes indexed Job, what the URL
and those variables leave out comes from the launcher's (muster.cluster_placement(); rank 0
hosts the leader at the step's first node, or index 0's pod, on MUSTER_PORT or 7400).

On a peer's failure (killed, hung past the heartbeat timeout, reported error), by default every
other rank prints one line naming the failed rank and why, and ends with exit code 1 at once,
even while blocked inside a collective. set_peer_failure_handler() changes that.

Importing this module also registers the torch elastic rendezvous backend `muster`:
`python -m muster.torchrun --rdzv_backend=muster --rdzv_endpoint=HOST:PORT ...` (torchrun with
it, docs/python.md "torchrun"); MusterRendezvousBackend is the backend itself. A torchrun
worker that calls report_progress(step) every step is killed by its node when its step stands
still for --rdzv_conf hang_timeout=SECONDS, so that a hung job starts again.
"""

import datetime
import ipaddress
import os
import signal
import sys
import threading
import time
import _thread
from concurrent.futures import Future, wait as _wait_futures
from typing import Callable, List, Optional, Sequence, Union
from urllib.parse import parse_qs, quote, urlparse

import torch.distributed as dist

from . import _errors, _muster
from ._agent import (Agent, announce, cluster_placement, launch_identity, take_spare_assignment,
                     to_bytes)
from ._convert import join_address, split_address
from ._hang_watch import report_progress
from ._leader import Leader

__all__ = ["MusterRendezvousBackend", "Store", "StoreTimeoutError", "native_store",
           "report_progress", "set_peer_failure_handler"]

_DEFAULT_TIMEOUT = datetime.timedelta(minutes=5)
# The longest wait the leader takes (a year); a longer timeout waits without a limit.
_MAX_WAIT_SECONDS = 365 * 24 * 3600


class StoreTimeoutError(_errors.DeadlineExceededError, RuntimeError):
    """A Store call that timed out (a RuntimeError, as TCPStore's timeouts are)."""

    code, code_number = "DEADLINE_EXCEEDED", 4


def _timedelta(timeout: Union[datetime.timedelta, float]) -> datetime.timedelta:
    if isinstance(timeout, datetime.timedelta):
        return timeout
    return datetime.timedelta(seconds=float(timeout))


def _value(value) -> bytes:
    return bytes(value) if isinstance(value, list) else to_bytes(value)


class Store(dist.Store):
    """A torch.distributed.Store with TCPStore's semantics over a muster.Agent's key-value
    calls. Keys live under the directory `prefix` of the Muster store (each torch key is one
    escaped path segment, so any string is a key).

    get() and wait() block until the keys exist, up to the store's timeout, then raise
    StoreTimeoutError (its text contains "timeout"). add() counts from 0 for a missing key.
    multi_get() and multi_set() send their requests together: one round trip of latency.
    Keep a reference to the Store while C++ code (c10d) uses it, as for any Python store.
    """

    def __init__(self, agent: Agent, timeout: Union[datetime.timedelta, float] = _DEFAULT_TIMEOUT,
                 prefix: str = "torch/store"):
        super().__init__()
        self._agent = agent
        self._prefix = prefix.strip("/") + "/"
        super().set_timeout(_timedelta(timeout))

    def _key(self, key: str) -> str:
        # "%" for the empty key: quote() never makes it, and "" would name the prefix itself.
        return self._prefix + (quote(key, safe="") or "%")

    def _timeout_seconds(self, timeout: Optional[datetime.timedelta] = None) -> Optional[float]:
        # The store's timeout as c10d keeps it: a PrefixStore around this one sets it there
        # without calling set_timeout below.
        t = self.timeout if timeout is None else timeout
        s = t.total_seconds()
        # torch: a zero timeout means no limit
        return None if s <= 0 or s > _MAX_WAIT_SECONDS else s

    @staticmethod
    def _together(call: Callable[..., object], call_async: Callable[..., Future],
                  arguments: List[tuple]) -> List[Future]:
        """A future for each call with `arguments`: made by `call_async` (the requests sent
        together), or, in a callback (whose thread completes the futures, so waiting for one
        there never ends), by the blocking `call`, one after the other."""
        if not _muster._on_dispatcher_thread():
            return [call_async(*args) for args in arguments]
        done = []
        for args in arguments:
            f: Future = Future()
            try:
                f.set_result(call(*args))
            except BaseException as e:  # noqa: B902: handed over as the future's
                f.set_exception(e)
            done.append(f)
        return done

    def _timed_out(self, keys: Sequence[str], timeout: Optional[float]) -> StoreTimeoutError:
        return StoreTimeoutError(
            f"Wait timeout after {timeout} s for key(s) {', '.join(map(repr, keys))} of the "
            f"muster store {self._prefix!r}; raise the store timeout or check the writer")

    def set(self, key: str, value: Union[str, bytes]) -> None:
        """Sets `key` to `value` (overwriting), waking every get and wait of it."""
        self._agent.insert_key_value(self._key(key), _value(value), allow_overwrite=True)

    def get(self, key: str) -> bytes:
        """The value of `key`, waiting for it up to the store timeout (then an error whose text
        contains "timeout", as TCPStore's)."""
        timeout = self._timeout_seconds()
        try:
            return self._agent.get_key_value(self._key(key), timeout)
        except _errors.DeadlineExceededError as e:
            raise self._timed_out([key], timeout) from e

    def add(self, key: str, amount: int) -> int:
        """Adds `amount` to the integer at `key` (a missing key counts from 0); the new value."""
        return self._agent.increment_key_value(self._key(key), int(amount))

    def compare_set(self, key: str, expected_value: Union[str, bytes],
                    desired_value: Union[str, bytes]) -> bytes:
        """TCPStore's compare_set: sets `desired_value` if `key` holds `expected_value` (or is
        missing and `expected_value` is empty); returns the value the key holds afterwards, or
        `expected_value` when a missing key was not created."""
        # From C++ (c10d's PrefixStore) the values arrive as lists of byte values.
        expected, desired = _value(expected_value), _value(desired_value)
        if expected == b"":
            # Missing, or holding b"": either matches an empty expected value.
            succeeded, current = self._agent.compare_and_swap(self._key(key), None, desired)
            if not succeeded and current == b"":
                succeeded, current = self._agent.compare_and_swap(self._key(key), b"", desired)
            return desired if succeeded else (current if current is not None else expected)
        succeeded, current = self._agent.compare_and_swap(self._key(key), expected, desired)
        if succeeded:
            return desired
        return expected if current is None else current

    def delete_key(self, key: str) -> bool:
        """Deletes `key`; True when it existed."""
        try:
            self._agent.try_get_key_value(self._key(key))
        except _errors.NotFoundError:
            return False
        self._agent.delete_key_value(self._key(key))
        return True

    def num_keys(self) -> int:
        """How many keys this store (its prefix) holds."""
        return len(self._agent.get_key_value_dir(self._prefix.rstrip("/")))

    # The names c10d's C++ side looks these up by (through a PrefixStore around this store).
    getNumKeys = num_keys
    deleteKey = delete_key

    def check(self, keys: List[str]) -> bool:
        """True when every key exists (no waiting)."""
        if len(keys) == 1:
            try:
                self._agent.try_get_key_value(self._key(keys[0]))
            except _errors.NotFoundError:
                return False
            return True
        futures = self._together(self._agent.try_get_key_value,
                                 self._agent.try_get_key_value_async,
                                 [(self._key(k),) for k in keys])
        ok = True
        for f in futures:
            try:
                f.result()
            except _errors.NotFoundError:
                ok = False
        return ok

    def wait(self, keys: List[str],
             timeout: Optional[Union[datetime.timedelta, float]] = None) -> None:
        """Waits until every key exists, up to `timeout` (default: the store timeout)."""
        seconds_left = self._timeout_seconds(None if timeout is None else _timedelta(timeout))
        if len(keys) == 1:  # waited for on this thread: no future, no hand-off to another thread
            try:
                self._agent.get_key_value(self._key(keys[0]), seconds_left)
            except _errors.DeadlineExceededError as e:
                raise self._timed_out(keys, seconds_left) from e
            return
        futures = self._together(self._agent.get_key_value, self._agent.get_key_value_async,
                                 [(self._key(k), seconds_left) for k in keys])
        missing = []
        for key, f in zip(keys, futures):
            try:
                f.result()
            except _errors.DeadlineExceededError:
                missing.append(key)
        if missing:
            raise self._timed_out(missing, seconds_left)

    def set_timeout(self, timeout: Union[datetime.timedelta, float]) -> None:
        """The timeout of get, wait and multi_get from now on (seconds or a timedelta)."""
        super().set_timeout(_timedelta(timeout))

    def multi_get(self, keys: List[str]) -> List[bytes]:
        """The values of `keys`, each waited for up to the timeout; requests sent together."""
        timeout = self._timeout_seconds()
        futures = self._together(self._agent.get_key_value, self._agent.get_key_value_async,
                                 [(self._key(k), timeout) for k in keys])
        _wait_futures(futures)
        values = []
        for key, f in zip(keys, futures):
            try:
                values.append(f.result())
            except _errors.DeadlineExceededError as e:
                raise self._timed_out([key], timeout) from e
        return values

    def multi_set(self, keys: List[str], values: List[Union[str, bytes]]) -> None:
        """Sets every key to its value; the requests are sent together."""
        if len(keys) != len(values):
            raise ValueError(f"multi_set: {len(keys)} keys but {len(values)} values")
        futures = self._together(self._agent.insert_key_value,
                                 self._agent.insert_key_value_async,
                                 [(self._key(k), to_bytes(v), True) for k, v in zip(keys, values)])
        for f in futures:
            f.result()

    @property
    def agent(self) -> Agent:
        """The muster.Agent whose key-value calls this store makes."""
        return self._agent


def native_store(agent: Agent, timeout: Union[datetime.timedelta, float] = _DEFAULT_TIMEOUT,
                 prefix: str = "torch/store") -> dist.Store:
    """A torch.distributed.Store with Store's semantics and keys, written in C++: c10d and gloo
    call it on their own threads without Python (no GIL, no Python frames), as they call
    TCPStore. What the muster:// rendezvous gives c10d. It has the methods of every c10d store
    (not Store's multi_get, multi_set and agent); errors are those muster.Agent raises for the
    same calls (StoreTimeoutError for a timeout). It does not keep `agent` open: after
    agent.close() its calls raise FailedPreconditionError. A wait on the main thread ends at
    Ctrl-C (KeyboardInterrupt). ImportError when the package was built without libtorch-dev."""
    from . import _muster_torch
    return _muster_torch.NativeStore(_muster._store_handle(agent._core), _timedelta(timeout),
                                     prefix.strip("/"))


def _store_for_c10d(agent: Agent, timeout: datetime.timedelta, prefix: str) -> dist.Store:
    """native_store, or Store in a package built without libtorch-dev."""
    try:
        return native_store(agent, timeout, prefix)
    except ImportError:
        return Store(agent, timeout, prefix)


# Rendezvous ----------------------------------------------------------------------------------

_PeerHandler = Union[str, Callable[[_errors.Error], None]]
_peer_failure: _PeerHandler = "exit"
_lock = threading.Lock()
_jobs: List[dict] = []  # what each rendezvous made: kept alive until exit
_crashed = False


def set_peer_failure_handler(handler: _PeerHandler) -> None:
    """What ranks joined through muster:// later do when another rank fails: "exit" (default:
    print one line naming the rank and why, exit code 1), "raise" (the main thread gets the
    muster.Error at its next Python instruction, through SIGUSR1; a main thread blocked inside
    a collective stays blocked until it returns), or a callable taking the muster.Error."""
    global _peer_failure
    if handler not in ("exit", "raise") and not callable(handler):
        raise ValueError("on_peer_failure is \"exit\", \"raise\" or a callable")
    _peer_failure = handler


_pending_errors: List[_errors.Error] = []


def _raise_pending(signum, frame):
    if _pending_errors:
        raise _pending_errors.pop(0)


def _raise_in_main(error: _errors.Error) -> None:
    _pending_errors.append(error)
    _thread.interrupt_main(signal.SIGUSR1)  # runs _raise_pending in the main thread


def _param(query: dict, name: str, env: Optional[str] = None) -> Optional[str]:
    if name in query:
        return query[name][-1]
    return os.environ.get(env) if env else None


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def _rendezvous_handler(url: str, timeout: datetime.timedelta = _DEFAULT_TIMEOUT, **kwargs):
    parsed = urlparse(url)
    query = parse_qs(parsed.query)

    def error(msg: str) -> ValueError:
        return ValueError(f"muster:// rendezvous: {msg} (url {url})")

    # Started by `muster run`: its leader is already up, and MUSTER_* name this task (a spare
    # waits here until it is given one).
    take_spare_assignment()
    launched = launch_identity()
    # The leader: the URL's, muster run's, MUSTER_LEADER, MASTER_ADDR and MASTER_PORT, then the
    # detected launcher's.
    # An HA job's leaders, "HOST:PORT,HOST:PORT" (in the URL, or MUSTER_LEADER from `muster run
    # --leader LIST`): they run on their own, and the agent follows the active one.
    leaders = None

    def leader_list(text: str, where: str):
        parts = [part.strip() for part in text.split(",") if part.strip()]
        addresses = [split_address(part) for part in parts]
        if not parts or any(address is None for address in addresses):
            raise error(f"{where} {text!r} is not HOST:PORT or HOST:PORT,HOST:PORT")
        return ",".join(parts), addresses[0]

    if "," in parsed.netloc:
        leaders, (host, port) = leader_list(parsed.netloc, "the leaders")
    else:
        host, port = parsed.hostname, parsed.port
    leader_env = os.environ.get("MUSTER_LEADER")  # muster run's too
    if not host and leader_env:
        if leader_env.startswith("etcd://"):
            # An HA job's leaders in etcd (muster run --leader etcd://...): the agent reads them;
            # MASTER_ADDR and MASTER_PORT name the first.
            leaders = leader_env
        elif "," in leader_env:
            leaders, (host, port) = leader_list(leader_env, "MUSTER_LEADER")
        else:
            address = split_address(leader_env)
            if address is None:
                raise error(f"MUSTER_LEADER={leader_env!r} is not HOST:PORT")
            host, port = address
    host = host or os.environ.get("MASTER_ADDR")
    if port is None and os.environ.get("MASTER_PORT", "").isdigit():
        port = int(os.environ["MASTER_PORT"])
    rank_text = _param(query, "rank", "RANK")
    world_text = _param(query, "world_size", "WORLD_SIZE")
    placement = None
    # An HA job's leaders (a list, or etcd://) need no HOST:PORT of rank 0's.
    address_missing = not leaders and (not host or port is None)
    if not launched and (address_missing or rank_text is None or world_text is None):
        # What the URL and those variables leave out comes from the launcher or cluster this
        # process runs under (Slurm, MPI, Kubernetes).
        try:
            placement = cluster_placement()
        except _errors.InvalidArgumentError as e:
            raise error(str(e)) from None
    # A node's name may resolve to a loopback address in its own /etc/hosts (Debian maps the
    # host's name to 127.0.1.1): rank 0 listens on every interface unless given an address (or
    # localhost), as TCPStore's master does.
    bind = host if host is None or host == "localhost" or _is_address(host) else "0.0.0.0"
    if placement is not None:
        announce(placement)
        detected = split_address(placement["leader"])  # None: MUSTER_LEADER=etcd://...
        if not host and detected is not None:
            host = bind = detected[0]
            # A node's name may resolve to a loopback address in its own /etc/hosts: rank 0
            # listens on every interface unless the name is an address.
            if not _is_address(host):
                bind = "0.0.0.0"
        if port is None and detected is not None:
            port = detected[1]
        for name, given, detected in (("rank", rank_text, placement["task"]),
                                      ("world_size", world_text, placement["num_tasks"])):
            if given is not None and given.strip() != str(detected):
                raise error(f"{name} {given} disagrees with {placement['text']}")
        rank_text, world_text = str(placement["task"]), str(placement["num_tasks"])
    if not leaders and (not host or port is None):
        raise error("no leader address: give muster://HOST:PORT or MASTER_ADDR and MASTER_PORT")
    if rank_text is None or world_text is None:
        raise error("rank and world_size are needed (URL parameters, or RANK and WORLD_SIZE)")
    rank, world_size = int(rank_text), int(world_text)
    if world_size < 1 or not 0 <= rank < world_size:
        raise error(f"rank {rank} is not within world_size {world_size}")
    job = _param(query, "job") or (launched[1] if launched else
                                   placement["job"] if placement else "worker")
    task = launched[2] if launched and job == launched[1] else rank
    heartbeat_timeout = float(_param(query, "heartbeat_timeout") or 10.0)
    reconnect_timeout = float(_param(query, "leader_reconnect_timeout") or 0.0)
    external = (_param(query, "external_leader") or
                ("1" if launched or leaders else "0")).lower() in ("1", "true", "yes")
    if leaders and not external:
        raise error("an HA job's leaders run on their own: external_leader=0 cannot host one")
    policy = _param(query, "on_peer_failure") or _peer_failure
    if isinstance(policy, str) and policy not in ("exit", "raise"):
        raise error(f"on_peer_failure={policy!r}: expected exit or raise")
    if policy == "raise" and threading.current_thread() is not threading.main_thread():
        raise error("on_peer_failure=raise needs the rendezvous in the main thread")

    made = {}
    if rank == 0 and not external:
        made["leader"] = Leader({job: world_size}, host=bind, port=port,
                                heartbeat_timeout=heartbeat_timeout,
                                shutdown_barrier_timeout=timeout)
    try:
        store = _join(made, policy, leaders, host, port, job, task, rank, heartbeat_timeout,
                      reconnect_timeout, timeout)
        if not external and rank != 0:
            # Rank 0 made the job as large as its world_size: a rank that disagrees would wait
            # in the store's barrier until the timeout.
            if not _job_has(made["agent"], job, world_size):
                made_size = len(made["agent"].watch_job_state(job)[1])
                wrong = error(f"world_size {world_size} disagrees with rank 0's, {made_size} "
                              f"(the job {job!r} it made): give every rank the same world_size")
                # The job ends with it (each rank told, naming this one) rather than wait.
                made["agent"].report_error(str(wrong), "INVALID_ARGUMENT")
                raise wrong
    except BaseException:
        # Nothing of a rendezvous that failed stays behind: the port is free for the next try.
        if "agent" in made:
            made["agent"].close()
        if "leader" in made:
            made["leader"].stop()
        raise
    with _lock:
        _jobs.append(made)
    yield (store, rank, world_size)
    raise RuntimeError("muster:// cannot rendezvous again in the same process")


def _job_has(agent: Agent, job: str, tasks: int) -> bool:
    """Whether `job` has exactly `tasks` tasks: its last one exists and the next does not (two
    small calls, whatever the job's size)."""
    def known(task: int) -> bool:
        try:
            agent.get_task_state([(job, task)])
            return True
        except _errors.InvalidArgumentError:  # not in the cluster configuration
            return False
    return known(tasks - 1) and not known(tasks)


def _join(made: dict, policy: _PeerHandler, leaders: Optional[str], host: Optional[str],
          port: Optional[int], job: str, task: int, rank: int, heartbeat_timeout: float,
          reconnect_timeout: float, timeout: datetime.timedelta) -> "Store":
    """The rank's agent, connected, and its store (kept in `made`)."""
    on_error = None
    exit_code = 0
    if policy == "exit":
        exit_code = 1
    elif policy == "raise":
        signal.signal(signal.SIGUSR1, _raise_pending)
        on_error = _raise_in_main
    else:
        on_error = policy
    # Ranks start in any order: like TCPStore's clients, they wait for the leader (rank 0's).
    agent = Agent(leaders or join_address(host, port), job, task,
                  heartbeat_timeout=heartbeat_timeout, register_timeout=timeout,
                  shutdown_barrier_timeout=timeout, on_error=on_error,
                  leader_reconnect_timeout=reconnect_timeout, wait_for_leader=True,
                  _exit_code_on_error=exit_code,
                  _exit_prefix=f"muster.torch: rank {rank}")
    made["agent"] = agent
    made["exit_on_peer_failure"] = policy == "exit"
    agent.connect()
    # Each job its own keys (jobs may share a leader). A store in C++: gloo's calls of a process
    # of many ranks do not queue for the GIL.
    made["store"] = _store_for_c10d(agent, timeout, f"torch/store/{quote(job, safe='')}")
    return made["store"]


# How long an unhandled exception waits for news of a failed peer before this rank reports
# itself as the cause (Muster learns of a killed rank within milliseconds).
_PEER_FAILURE_GRACE = 0.5


def _excepthook(kind, value, traceback):
    global _crashed
    _crashed = True
    # First the grace for a failed peer: a traceback printed now would come before (or, cut
    # short by the exit, in the middle of) the one line that names the rank that failed.
    _await_peer_failure()
    _previous_excepthook(kind, value, traceback)


def _await_peer_failure() -> None:
    """A collective that fails because a peer died (gloo's "Connection closed by peer" or
    "Connection reset by peer") raises a moment before Muster's notice of that peer's failure
    may arrive: gloo sees the closed socket directly, Muster through the leader. The notice is
    given _PEER_FAILURE_GRACE to come: with on_peer_failure="exit" it then ends this process with
    the one line naming the rank that failed, and the exception is never printed. Only if no
    notice comes does the caller print the exception, and this rank reports itself as failed."""
    with _lock:
        agents = [made["agent"] for made in _jobs if made.get("exit_on_peer_failure")]
    deadline = time.monotonic() + _PEER_FAILURE_GRACE
    while agents and time.monotonic() < deadline:
        if any(agent.state != "RUNNING" for agent in agents):
            # Muster is ending this process, naming the failed peer (a rank that hosts the leader
            # first lets it tell the others): wait for that here instead of tearing the job's
            # leader down under the other ranks.
            time.sleep(5.0)
            return
        time.sleep(0.01)


def _leave() -> None:
    """At exit: leave each job cleanly (through the shutdown barrier), or, after an unhandled
    exception, report this rank's failure so that the others end at once instead of hanging."""
    with _lock:
        jobs = list(_jobs)
        _jobs.clear()
    for made in jobs:
        agent = made["agent"]
        try:
            if _crashed and agent.state == "RUNNING":
                agent.report_error("the process ended with an unhandled exception", "ABORTED")
            agent.close()
        except _errors.Error:
            pass
        if "leader" in made:
            made["leader"].stop()


_previous_excepthook = sys.excepthook
sys.excepthook = _excepthook
import atexit as _atexit  # noqa: E402

_atexit.register(_leave)
dist.register_rendezvous_handler("muster", _rendezvous_handler)

# torch elastic's rendezvous backend (torchrun --rdzv_backend=muster).
from torch.distributed.elastic.rendezvous import rendezvous_handler_registry  # noqa: E402

from . import _rendezvous  # noqa: E402
from ._rendezvous import MusterRendezvousBackend  # noqa: E402,F401

rendezvous_handler_registry.register("muster", _rendezvous.create_handler)
_atexit.register(_rendezvous.close_all)
