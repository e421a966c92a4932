"""The job-health calls of muster.Agent: progress, preemption, barrier progress, and the
key-value reductions (docs/agent.md, "Progress and preemption")."""

from concurrent.futures import Future
from typing import Any, Dict, List, Tuple

from ._convert import Duration, seconds
from ._health import Deadline, unix_seconds


class HealthCalls:
    """Methods of muster.Agent (which sets self._core, the muster._muster.Agent)."""

    # Progress and preemption -------------------------------------------------------------

    def report_progress(self, step: int) -> None:
        """Records this task's training step. Cheap (no message, no round trip): the next
        heartbeat carries it, and a leader with a stuck rule (Leader(stuck_after=...,
        max_step_lag=...), muster serve --stuck-after/--max-step-lag) compares it with the
        steps of the job's other tasks; a stuck task fails with StuckTaskError. Thread-safe."""
        self._core.report_progress(int(step))

    def notify_preemption(self, reason: str, deadline: Deadline = None) -> bool:
        """Tells the job that it will be preempted at `deadline` (Unix seconds or a datetime;
        None: unknown) for `reason`. Every task's on_preemption is called, then all agree on
        the step at which they stop (reached_sync_point). Returns True when this call started
        the protocol, False when another task's notice already had. Raises
        FailedPreconditionError (not connected), InvalidArgumentError (reason over 4 KiB),
        ValueError (a negative or NaN deadline)."""
        return self._core.notify_preemption(str(reason), unix_seconds(deadline))

    def notify_preemption_async(self, reason: str, deadline: Deadline = None) -> Future:
        """notify_preemption() without blocking (safe in a signal handler): a
        concurrent.futures.Future of its result (a muster.Error subclass as its exception)."""
        return self._core.notify_preemption_async(str(reason), unix_seconds(deadline))

    def reached_sync_point(self, step: int) -> bool:
        """Call once per training step, with the step. Returns True on exactly one step, the
        same in every task, once a preemption was notified: the highest step any live task
        had reached when the notice arrived, plus one. Stop (checkpoint, exit) when it does.
        Also reports the step (as report_progress). Cheap until a notice arrives; after it,
        the call for a later step waits (GIL released, Ctrl-C interrupts it) until the
        leader sent the sync step. Raises FailedPreconditionError or CancelledError when the
        agent failed or shut down while waiting."""
        return self._core.reached_sync_point(int(step))

    # Elastic jobs ------------------------------------------------------------------------

    def wait_for_membership(
        self, known_version: int = 0, timeout: Duration = None
    ) -> Dict[str, Any]:
        """This task's safe point in an elastic job (a job of MIN:MAX tasks, e.g.
        `muster serve --job worker=2:8`), where the program may re-form its communicators.
        Returns the membership as a dict: job, version, members (task ids, ascending: a
        member's rank is its position), waiting (connected tasks not admitted yet),
        min_tasks and max_tasks. A member running with `known_version` gets it at once when it
        changed since, or when no task waits to be admitted; otherwise the call waits until
        every member called it, and all of them and the admitted tasks get the new one. A
        task not admitted yet (version 0) waits until a membership includes it. `timeout` in
        seconds (None: no deadline). A version that is not the job's (from before a leader
        restart) gets the current membership at once. Raises InvalidArgumentError (a job of
        fixed size, a negative version), FailedPreconditionError (not connected; a later call
        of this task took this one's place), DeadlineExceededError (names the members that did
        not arrive)."""
        return self._core.wait_for_membership(int(known_version), seconds(timeout))

    def wait_for_membership_async(
        self, known_version: int = 0, timeout: Duration = None
    ) -> Future:
        """wait_for_membership() without blocking: a concurrent.futures.Future of its result
        (a muster.Error subclass as its exception)."""
        return self._core.wait_for_membership_async(int(known_version), seconds(timeout))

    def get_membership(self, job: str = "") -> Dict[str, Any]:
        """The membership of elastic job `job` now (this task's job when empty), without
        waiting, as wait_for_membership() returns it. Raises InvalidArgumentError (not an
        elastic job)."""
        return self._core.get_membership(str(job))

    # Barrier progress --------------------------------------------------------------------

    def get_barrier_progress(self, barrier_id: str) -> Dict[str, Any]:
        """The open instance of barrier `barrier_id`: a dict with barrier_id, counter,
        arrived, total, waiting_for (names of the tasks that have not arrived), waited_ms
        (since its first call), deadline_in_ms (until its timeout) and first_task.
        muster.barrier_progress_text() makes it one line. Raises NotFoundError (no open
        instance), InvalidArgumentError (empty id)."""
        return self._core.get_barrier_progress(barrier_id)

    def get_barrier_progress_async(self, barrier_id: str) -> Future:
        """get_barrier_progress() without blocking: a concurrent.futures.Future of its result
        (a muster.Error subclass as its exception)."""
        return self._core.get_barrier_progress_async(barrier_id)

    # Key-value reductions ----------------------------------------------------------------

    def reduce_key_value_dir(self, directory: str, op: str) -> int:
        """Folds the integer values (decimal strings) of every key under `directory` with `op`,
        "max", "min" or "sum". Raises InvalidArgumentError (the root directory, an unknown op),
        NotFoundError (no keys), FailedPreconditionError (a value is not a 64-bit integer),
        OutOfRangeError (the sum overflows)."""
        return self._core.reduce_key_value_dir(directory, str(op))

    def reduce_key_value_dir_async(self, directory: str, op: str) -> Future:
        """reduce_key_value_dir() without blocking: a concurrent.futures.Future of its result
        (a muster.Error subclass as its exception)."""
        return self._core.reduce_key_value_dir_async(directory, str(op))

    def wait_for_keys(self, directory: str, count: int,
                      timeout: Duration = None) -> List[Tuple[str, bytes]]:
        """Waits until at least `count` keys exist under `directory`, then returns all of them
        as (key, value) pairs in key order: an all-gather is one insert_key_value and one
        wait_for_keys per task. timeout: seconds or a timedelta (None: no limit). Raises
        DeadlineExceededError (saying how many keys there were), InvalidArgumentError (the
        root directory, count < 1), CancelledError (shutdown)."""
        return self._core.wait_for_keys(directory, int(count), seconds(timeout))

    def wait_for_keys_async(self, directory: str, count: int, timeout: Duration = None) -> Future:
        """wait_for_keys() without blocking: a concurrent.futures.Future of its result (a
        muster.Error subclass as its exception)."""
        return self._core.wait_for_keys_async(directory, int(count), seconds(timeout))
