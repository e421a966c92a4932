"""muster.Agent: one task's connection to the leader (the C++ muster::Agent)."""

import os
import sys
from concurrent.futures import Future
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from . import _errors
from ._agent_health import HealthCalls
from ._convert import Duration, seconds
from ._health import PreemptionNotice, log_barrier_progress
from ._muster import Agent as _CoreAgent
from ._muster import detect_cluster as _detect_cluster
from ._muster import parse_spare_assignment as _parse_spare_assignment

Value = Union[str, bytes, bytearray, memoryview]
Task = Union[int, Tuple[str, int]]
# The default period of wait_at_barrier's progress report when only on_progress is given (the
# C++ BarrierProgressOptions' default).
DEFAULT_PROGRESS_EVERY = 10.0


def to_bytes(value: Value) -> bytes:
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"a value is str or bytes, not {type(value).__name__}")


def _read_token(token: Optional[str]) -> str:
    if token is not None:
        return token
    path = os.environ.get("MUSTER_TOKEN_FILE")
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().rstrip()
    except OSError as e:
        raise _errors.NotFoundError(
            f"cannot read the job token file {path} (MUSTER_TOKEN_FILE): {e.strerror}") from None


def launch_identity() -> Optional[Tuple[str, str, int]]:
    """(leader, job, task) from the environment `muster run` gives each task process, or None
    when this process was not started by a launcher."""
    if os.environ.get("MUSTER_SPARE"):
        raise _errors.FailedPreconditionError(_SPARE_WITHOUT_TASK)
    leader = os.environ.get("MUSTER_LEADER")
    job = os.environ.get("MUSTER_JOB")
    task = os.environ.get("MUSTER_TASK")
    if not leader or not job or task is None:
        return None
    try:
        return leader, job, int(task)
    except ValueError:
        raise _errors.InvalidArgumentError(f"MUSTER_TASK={task!r} is not a task id") from None


_SPARE_WITHOUT_TASK = (
    "this process is a spare of muster run --spares and has no task yet: take one first "
    "(muster.take_spare_assignment(); Agent.from_environment() and muster:// do)")


def take_spare_assignment(**options) -> bool:
    """In a spare process of `muster run --spares N` (MUSTER_SPARE set): waits until its
    launcher gives it a task (a failed task's next generation), then sets that task's variables
    (MUSTER_TASK, MUSTER_GENERATION, RANK, ...) in os.environ, as if the launcher had started it
    as that task, and returns True. In any other process: False at once. Agent.from_environment()
    and init_method="muster://" call it first, so a spare does its own start-up (imports, a
    model on the CPU) before either and waits there; what depends on LOCAL_RANK (a GPU) comes
    after. Ctrl-C interrupts the wait. `options` are Agent()'s connection settings (token,
    heartbeat_timeout, rpc_timeout, ...) for the wait."""
    key = os.environ.get("MUSTER_SPARE")
    if not key:
        return False
    leader = os.environ.get("MUSTER_LEADER")
    if not leader:
        raise _errors.InvalidArgumentError(
            "MUSTER_SPARE is set but MUSTER_LEADER is not: a spare's launcher sets both")
    # Not a task: its key-value calls need no registration.
    options = {k: v for k, v in options.items()
               if k not in ("leader", "job", "task", "claim", "on_error", "on_preemption",
                            "on_membership")}
    options.update(shutdown_on_destruction=False, wait_for_leader=True)
    waiter = Agent(leader, "spare", 0, **options)
    try:
        text = waiter.get_key_value(key).decode()
        waiter.delete_key_value(key)  # read: nothing else needs it
    finally:
        waiter.close()
    for name, value in _parse_spare_assignment(text):
        os.environ[name] = value
    del os.environ["MUSTER_SPARE"]
    return True


def cluster_placement() -> Optional[Dict[str, Any]]:
    """Where this process runs, as its launcher or cluster says: a dict with source (muster
    run, torchrun, Open MPI, PMIx, MPICH, Slurm, Kubernetes, RANK and WORLD_SIZE), evidence
    (the variables read), leader ("HOST:PORT", or MUSTER_LEADER as given), job, task, num_tasks, local_task,
    num_local_tasks, node, num_nodes, generation, round and text (one line saying all of it);
    None when no launcher is found. Raises InvalidArgumentError naming the variables at fault:
    sources of one launch that disagree, a leader that cannot be derived (docs/python.md,
    "Where a process runs")."""
    return _detect_cluster()


def announce(placement: Dict[str, Any]) -> None:
    """The one line that says where this process runs (cluster_placement()), on stderr."""
    print(f"muster: {placement['text']}", file=sys.stderr, flush=True)


class Agent(HealthCalls):
    """A task of a Muster job: registers with the leader, heartbeats, and makes every call of
    the coordination service. Methods block (Ctrl-C interrupts them) unless named *_async,
    which return a concurrent.futures.Future. Errors are muster.Error subclasses.

    Args:
        leader: "HOST:PORT" of the leader (muster serve's ready line, or Leader.address); an
            HA job's leaders as "HOST:PORT,HOST:PORT", or "etcd://ETCD:2379[,...]/HA-NAME" to
            read them from etcd now, and again when none of those read is active (NotFoundError
            when none is registered, UnavailableError when etcd does not answer, both after
            register_timeout with wait_for_leader).
        job, task: this task's job name and index.
        heartbeat_timeout: seconds (or a timedelta) without heartbeats before the leader judges
            the task stale; heartbeats go out every half of it. None (default): the leader's,
            which it sends when the agent connects. A value longer than the leader's makes
            connect() raise FailedPreconditionError naming both (leave it None, lower it, or
            start the leader with a longer --heartbeat-timeout); a shorter one is kept.
        register_timeout: how long connect() keeps trying (None: an hour); with an etcd://
            leader, reading the leaders when the agent is made counts against it.
        wait_for_leader: what connect() does when nothing listens at `leader` (the connection
            is refused). False: raise UnavailableError "nothing listening at HOST:PORT" at
            once. True: a leader that is not up yet is expected; keep trying until
            register_timeout (then DeadlineExceededError saying "nothing listening"). None
            (default): True in a process started by `muster run` (MUSTER_LEADER, MUSTER_JOB and
            MUSTER_TASK set), else False. A leader that closes the connection before its
            handshake (TLS on one side only, another CA) raises UnavailableError at once
            (waiting without TLS here: only once register_timeout has passed).
        rpc_timeout: the bound of calls that do not block at the leader (default 30 s).
        shutdown_barrier_timeout: how long shutdown() waits for the others (default 10 s).
        leader_reconnect_timeout: how long a connected agent waits for a lost leader to come
            back (a leader restarted with its --state-dir) before its calls fail with
            UnavailableError and on_error fires; meanwhile calls block and are re-sent once
            the leader is back (default 0: a lost leader fails everything at once; None: no
            limit). See docs/agent.md, "Surviving a leader restart".
        recoverable: the task may fail and rejoin (its job must be recoverable at the leader).
        incarnation: this process's incarnation id (0: a random one).
        claim: take the task only if no live incarnation holds it: connect() then raises
            AlreadyExistsError naming the holder instead of failing the holder; the agent stays
            DISCONNECTED (on_error is not called, connect() may be called again); claim another
            task of the job with a new Agent. How processes
            without fixed task ids (torchrun nodes) share a recoverable job.
        token: the job token (default: the file named by $MUSTER_TOKEN_FILE, if set).
        shutdown_on_destruction: close() (and garbage collection) leaves the job with
            shutdown(); False: only drop the connection, as a crashed process would.
        on_error: called with the muster.Error when this agent goes to ERROR (another task
            failed, the leader was lost, a task is stuck: StuckTaskError, ...), on Muster's
            callback thread.
        on_preemption: called once with a muster.PreemptionNotice (notified_by, deadline,
            reason) when the leader announces that the job will be preempted (any task's
            notify_preemption(), this one's too), on Muster's callback thread; then stop at
            the step where reached_sync_point() returns True.
        on_membership: called with each new membership of this task's elastic job (a dict
            as wait_for_membership() returns it), on Muster's callback thread, in order: a
            member that left shows here at once (docs/supervision.md, "Elastic jobs").
        direct_calls: blocking key-value calls (not ephemeral writes) are made on the calling
            thread over connections of the agent's own to the leader's direct port, when the
            leader offers one (docs/agent.md, "Direct calls"); False: always through the
            agent's network thread.

    TLS: set MUSTER_TLS_CERT, MUSTER_TLS_KEY and MUSTER_TLS_CA (see docs/operations.md).
    """

    def __init__(self, leader: str, job: str, task: int, *, heartbeat_timeout: Duration = None,
                 register_timeout: Duration = None, rpc_timeout: Duration = None,
                 shutdown_barrier_timeout: Duration = None, recoverable: bool = False,
                 incarnation: int = 0, token: Optional[str] = None,
                 shutdown_on_destruction: bool = True,
                 on_error: Optional[Callable[[_errors.Error], None]] = None,
                 on_preemption: Optional[Callable[[PreemptionNotice], None]] = None,
                 leader_reconnect_timeout: Duration = 0.0,
                 wait_for_leader: Optional[bool] = None, claim: bool = False,
                 on_membership: Optional[Callable[[Dict[str, Any]], None]] = None,
                 direct_calls: bool = True,
                 _exit_code_on_error: int = 0, _exit_prefix: str = "muster"):
        if on_error is not None and not callable(on_error):
            raise TypeError("on_error must be callable")
        if on_preemption is not None and not callable(on_preemption):
            raise TypeError("on_preemption must be callable")
        if on_membership is not None and not callable(on_membership):
            raise TypeError("on_membership must be callable")
        notice_callback = None
        if on_preemption is not None:
            def notice_callback(notified_by: str, deadline: Optional[float], reason: str):
                on_preemption(PreemptionNotice(notified_by, deadline, reason))
        self._job = job
        self._core = _CoreAgent(
            leader=leader, job=job, task=int(task),
            heartbeat_timeout=seconds(heartbeat_timeout),
            register_timeout=seconds(register_timeout), rpc_timeout=seconds(rpc_timeout),
            shutdown_barrier_timeout=seconds(shutdown_barrier_timeout),
            recoverable=recoverable, incarnation=int(incarnation), token=_read_token(token),
            shutdown_on_destruction=shutdown_on_destruction, on_error=on_error,
            exit_code_on_error=int(_exit_code_on_error), exit_prefix=_exit_prefix,
            on_preemption=notice_callback,
            leader_reconnect_timeout=seconds(leader_reconnect_timeout),
            wait_for_leader=(launch_identity() is not None if wait_for_leader is None
                             else bool(wait_for_leader)),
            claim=bool(claim), on_membership=on_membership, direct_calls=bool(direct_calls))

    @classmethod
    def from_environment(cls, **kwargs) -> "Agent":
        """The agent of the task this process's launcher or cluster names (cluster_placement():
        muster run, torchrun, Open MPI, PMIx, MPICH, Slurm, a Kubernetes indexed Job or
        JobSet, RANK and WORLD_SIZE), the way jax.distributed.initialize() finds its process.
        A spare of `muster run --spares` first waits for its task (take_spare_assignment()).
        Prints one line on standard error saying what it found (not under muster run, which
        names every task it starts). Keyword arguments are those of Agent() (leader, job or
        task given there win); wait_for_leader defaults to True, since a job's processes start
        in any order: a leader that never comes fails connect() after register_timeout. Raises
        InvalidArgumentError when no launcher is found, or naming the variables at fault."""
        take_spare_assignment(**kwargs)
        placement = cluster_placement()
        if placement is None:
            raise _errors.InvalidArgumentError(
                "no launcher found in the environment (muster run, torchrun, mpirun, srun, a "
                "Kubernetes indexed Job): start this process with one, or set MUSTER_LEADER, "
                "MUSTER_JOB and MUSTER_TASK")
        if placement["source"] != "muster run":
            announce(placement)
        args = {"leader": placement["leader"], "job": placement["job"],
                "task": placement["task"]}
        args["wait_for_leader"] = True  # the tasks of a cluster start in any order
        args.update(kwargs)
        return cls(**args)

    # Lifecycle ---------------------------------------------------------------------------

    def connect(self) -> None:
        """Registers the task with the leader and starts heartbeats. Nothing listening at the
        leader's address raises UnavailableError at once, unless wait_for_leader: then it
        retries until register_timeout. Ctrl-C raises KeyboardInterrupt at once. Raises
        FailedPreconditionError (not DISCONNECTED), InvalidArgumentError (unknown task),
        AbortedError, AlreadyExistsError, UnavailableError (nothing listening; the leader
        closed the connection before its handshake: TLS on one side only, another CA),
        DeadlineExceededError (no leader within register_timeout; register barrier timeout
        naming missing tasks)."""
        self._core.connect()

    def connect_async(self) -> Future:
        """connect() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.connect_async()

    def wait_for_all_tasks(self, local_devices: bytes = b"") -> bytes:
        """Waits for every task (the reference's WaitForAllTasks). local_devices and the result
        are serialized muster.proto.CoordinationServiceDeviceInfo messages."""
        return self._core.wait_for_all_tasks(to_bytes(local_devices))

    def wait_for_all_tasks_async(self, local_devices: bytes = b"") -> Future:
        """wait_for_all_tasks() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.wait_for_all_tasks_async(to_bytes(local_devices))

    def report_error(self, message: str, code: Union[int, str] = "INTERNAL") -> None:
        """Puts this task in ERROR at the leader (which tells the others) and here."""
        number = _errors.CODES.get(code) if isinstance(code, str) else int(code)
        if number is None:
            raise ValueError(f"unknown status code {code!r}")
        self._core.report_error(number, message)

    def report_error_async(self, message: str, code: Union[int, str] = "INTERNAL") -> Future:
        """report_error() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        number = _errors.CODES.get(code) if isinstance(code, str) else int(code)
        if number is None:
            raise ValueError(f"unknown status code {code!r}")
        return self._core.report_error_async(number, message)

    def reset(self) -> None:
        """ERROR -> DISCONNECTED (the leader is told), so that connect() may be called again."""
        self._core.reset()

    def reset_async(self) -> Future:
        """reset() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.reset_async()

    def shutdown(self) -> None:
        """Leaves the job (through the shutdown barrier when the leader has one). Blocked gets
        and barriers end with CancelledError."""
        self._core.shutdown()

    def shutdown_async(self) -> Future:
        """shutdown() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.shutdown_async()

    def close(self) -> None:
        """Releases the agent: shuts down first when connected (see shutdown_on_destruction).
        Later calls raise FailedPreconditionError. Idempotent."""
        self._core.close()

    def __enter__(self) -> "Agent":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def state(self) -> str:
        """"DISCONNECTED", "RUNNING" or "ERROR"."""
        return self._core.state()

    @property
    def error(self) -> Optional[_errors.Error]:
        """The error that put the agent in ERROR; None in the other states."""
        return self._core.error()

    @property
    def reconnecting(self) -> bool:
        """True while the agent (RUNNING) waits for its lost leader to come back
        (leader_reconnect_timeout); its calls then block until the leader is back."""
        return self._core.reconnecting()

    @property
    def dropped_watches(self) -> List[str]:
        """The watched keys (normalized: "cfg/lr") whose watch ended when the leader came back
        from a restart but could not resume it (its change history no longer reached back to
        the last revision delivered; OutOfRangeError at the leader): their callbacks get no more
        events. The agent stays RUNNING and on_error is not called. A key leaves the list when
        it is watched again (start_watch_key): read its current value first
        (get_key_value_dir), then watch it again."""
        return self._core.dropped_watches()

    @property
    def incarnation(self) -> int:
        """This process's incarnation id: random per Agent unless given, sent with every
        registration and heartbeat (a new one tells the leader the task restarted)."""
        return self._core.incarnation()

    @property
    def task(self) -> str:
        """"/job:NAME/task:I"."""
        return self._core.task()

    @property
    def direct_calls_answered(self) -> int:
        """How many key-value calls were answered over the agent's direct connections so far
        (direct_calls)."""
        return self._core.direct_calls_answered()

    # Tasks -------------------------------------------------------------------------------

    def _tasks(self, tasks: Optional[Iterable[Task]]) -> List[Tuple[str, int]]:
        if tasks is None:
            return []
        return [(self._job, t) if isinstance(t, int) else (str(t[0]), int(t[1])) for t in tasks]

    def get_task_state(self, tasks: Iterable[Task]) -> List[Dict]:
        """The leader's view of `tasks` (ints: tasks of this job; or (job, index) pairs): dicts
        with task, state, error_code, error_message, incarnation, last_heartbeat_age_ms,
        connected_age_ms (-1: not connected), step (the last step the task reported, None
        when none) and step_age_ms (since that step changed; -1: none)."""
        return self._core.get_task_state(self._tasks(tasks))

    def get_task_state_async(self, tasks: Iterable[Task]) -> Future:
        """get_task_state() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.get_task_state_async(self._tasks(tasks))

    def get_alive_tasks(self, tasks: Iterable[Task]) -> List[Tuple[str, int]]:
        """The connected tasks among `tasks`, agreed by every caller of the same set:
        (task, incarnation) pairs."""
        return self._core.get_alive_tasks(self._tasks(tasks))

    def get_alive_tasks_async(self, tasks: Iterable[Task]) -> Future:
        """get_alive_tasks() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.get_alive_tasks_async(self._tasks(tasks))

    def watch_job_state(self, job: str = "", version: Optional[int] = None):
        """(version, task states) of `job` (all jobs: ""); with a version, waits for a newer one."""
        return self._core.watch_job_state(job, version)

    def watch_job_state_async(self, job: str = "", version: Optional[int] = None) -> Future:
        """watch_job_state() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.watch_job_state_async(job, version)

    # Key-value store -----------------------------------------------------------------------
    # These work before connect() too (the agent then reaches the leader without registering),
    # as get_task_state and watch_job_state do.

    def get_key_value(self, key: str, timeout: Duration = None) -> bytes:
        """The value of `key`, waiting until it exists (timeout: None waits forever).
        Raises DeadlineExceededError after the timeout."""
        return self._core.get_key_value(key, seconds(timeout))

    def get_key_value_async(self, key: str, timeout: Duration = None) -> Future:
        """get_key_value() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.get_key_value_async(key, seconds(timeout))

    def try_get_key_value(self, key: str) -> bytes:
        """The value of `key`; raises NotFoundError when it does not exist."""
        return self._core.try_get_key_value(key)

    def try_get_key_value_async(self, key: str) -> Future:
        """try_get_key_value() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.try_get_key_value_async(key)

    def get_key_value_dir(self, directory: str) -> List[Tuple[str, bytes]]:
        """Every (key, value) under `directory`, in key order."""
        return self._core.get_key_value_dir(directory)

    def get_key_value_dir_async(self, directory: str) -> Future:
        """get_key_value_dir() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.get_key_value_dir_async(directory)

    def insert_key_value(self, key: str, value: Value, allow_overwrite: bool = False, *,
                         ephemeral: bool = False) -> None:
        """Sets `key`; raises AlreadyExistsError when it exists and allow_overwrite is False.
        ephemeral: the key belongs to this task's current incarnation, and the leader deletes
        it when that ends (shutdown, failure, restart), with a watch event like any delete;
        raises FailedPreconditionError when this task is not connected. A later write that is
        not ephemeral makes the key persistent."""
        self._core.insert_key_value(key, to_bytes(value), allow_overwrite, ephemeral)

    def insert_key_value_async(self, key: str, value: Value, allow_overwrite: bool = False, *,
                               ephemeral: bool = False) -> Future:
        """insert_key_value() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.insert_key_value_async(key, to_bytes(value), allow_overwrite,
                                                 ephemeral)

    def update_key_value(self, key: str, value: Value, *, ephemeral: bool = False) -> None:
        """Replaces the value of an existing key; raises NotFoundError otherwise. ephemeral:
        as in insert_key_value()."""
        self._core.update_key_value(key, to_bytes(value), ephemeral)

    def update_key_value_async(self, key: str, value: Value, *,
                               ephemeral: bool = False) -> Future:
        """update_key_value() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.update_key_value_async(key, to_bytes(value), ephemeral)

    def delete_key_value(self, key: str) -> None:
        """Deletes `key` and every key under it; a missing key is fine."""
        self._core.delete_key_value(key)

    def delete_key_value_async(self, key: str) -> Future:
        """delete_key_value() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.delete_key_value_async(key)

    def increment_key_value(self, key: str, delta: int = 1) -> int:
        """Adds `delta` to the counter at `key` (a missing key counts from 0); the new value."""
        return self._core.increment_key_value(key, int(delta))

    def increment_key_value_async(self, key: str, delta: int = 1) -> Future:
        """increment_key_value() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.increment_key_value_async(key, int(delta))

    def compare_and_swap(self, key: str, expected: Optional[Value], desired: Value, *,
                         ephemeral: bool = False) -> Tuple[bool, Optional[bytes]]:
        """Sets `desired` if the value is `expected` (None: if the key is absent).
        Returns (succeeded, the value after the call or None when absent). ephemeral: a
        swap stores an ephemeral key, as insert_key_value(ephemeral=True) does."""
        return self._core.compare_and_swap(
            key, None if expected is None else to_bytes(expected), to_bytes(desired), ephemeral)

    def compare_and_swap_async(self, key: str, expected: Optional[Value], desired: Value, *,
                               ephemeral: bool = False) -> Future:
        """compare_and_swap() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.compare_and_swap_async(
            key, None if expected is None else to_bytes(expected), to_bytes(desired), ephemeral)

    def start_watch_key(self, key: str,
                        callback: Callable[[str, str, Optional[bytes], int], None]) -> None:
        """Calls callback(kind, key, value, revision) for every change of `key` and of the keys
        under it, in order: kind is "INSERTED", "UPDATED" or "DELETED" (value None)."""
        if not callable(callback):
            raise TypeError("callback must be callable")
        self._core.start_watch_key(key, callback)

    def stop_watch_key(self, key: str) -> None:
        """Stops the watch of `key` that start_watch_key began; its callback is not called
        again."""
        self._core.stop_watch_key(key)

    # Barriers ------------------------------------------------------------------------------

    def wait_at_barrier(self, barrier_id: str, timeout: Duration,
                        tasks: Optional[Sequence[Task]] = None, *,
                        progress_every: Duration = None,
                        on_progress: Optional[Callable[[Dict[str, Any]], None]] = None) -> None:
        """Waits until every task of `tasks` (None: every task of the cluster) arrived at
        `barrier_id`. Raises DeadlineExceededError naming the missing tasks, or the error of a
        failed participant.

        Progress: with on_progress and/or progress_every (seconds; default 10 with
        on_progress), on_progress is called every progress_every while this call waits, with
        the barrier's get_barrier_progress() dict, on Muster's callback thread (none starts
        after the wait ended). Without on_progress, each report is an INFO line of
        muster.barrier_progress_text() on the "muster" logger."""
        every, report = self._progress(progress_every, on_progress)
        self._core.wait_at_barrier(barrier_id, seconds(timeout), self._tasks(tasks), every,
                                   report)

    def wait_at_barrier_async(self, barrier_id: str, timeout: Duration,
                              tasks: Optional[Sequence[Task]] = None, *,
                              progress_every: Duration = None,
                              on_progress: Optional[Callable[[Dict[str, Any]], None]] = None
                              ) -> Future:
        """wait_at_barrier() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        every, report = self._progress(progress_every, on_progress)
        return self._core.wait_at_barrier_async(barrier_id, seconds(timeout),
                                                self._tasks(tasks), every, report)

    @staticmethod
    def _progress(progress_every: Duration, on_progress: Optional[Callable]):
        if on_progress is not None and not callable(on_progress):
            raise TypeError("on_progress must be callable")
        if progress_every is None and on_progress is None:
            return None, None
        every = seconds(progress_every)
        if every is None:
            every = DEFAULT_PROGRESS_EVERY
        if not every > 0:
            raise ValueError(f"progress_every must be > 0 seconds, not {progress_every!r}")
        return every, on_progress if on_progress is not None else log_barrier_progress

    def cancel_barrier(self, barrier_id: str) -> None:
        """Withdraws this task's arrival at an ongoing barrier (its waiters get CancelledError)."""
        self._core.cancel_barrier(barrier_id)

    def cancel_barrier_async(self, barrier_id: str) -> Future:
        """cancel_barrier() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.cancel_barrier_async(barrier_id)
