"""Muster's exceptions: one class per status code, all subclasses of muster.Error."""

from typing import Any, Dict, Optional, Type


class Error(Exception):
    """A failed Muster call.

    Attributes:
        code: the status code's name, e.g. "DEADLINE_EXCEEDED" (as in the C++ API).
        code_number: its number (absl::StatusCode).
        message: what failed and what to do, naming the task, barrier or key.
        source_task: the task the error comes from ("/job:worker/task:3") when the leader
            reported another task's failure, else None.
    """

    code = "UNKNOWN"
    code_number = 2

    def __init__(self, message: str, source_task: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.source_task = source_task

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class CancelledError(Error):
    code, code_number = "CANCELLED", 1


class UnknownError(Error):
    code, code_number = "UNKNOWN", 2


class InvalidArgumentError(Error, ValueError):
    code, code_number = "INVALID_ARGUMENT", 3


class DeadlineExceededError(Error, TimeoutError):
    code, code_number = "DEADLINE_EXCEEDED", 4


class StuckTaskError(DeadlineExceededError):
    """A task the leader declared stuck (its step stalled, or lagged its job's median): the
    error the stuck task fails with, and the one the other tasks of a fate-sharing job receive.
    Raised (and passed to on_error) instead of a plain DeadlineExceededError when the status
    carries the leader's TaskStuck report.

    Attributes (besides muster.Error's):
        task: the stuck task, "/job:worker/task:3".
        step: its last reported step.
        reason: "stalled" (its step did not advance for stuck_after while the steps of other
            tasks of its job did) or "lagging" (more than max_step_lag behind the job's median).
        stalled_for: seconds since its step last changed.
        min_other_step, max_other_step: the lowest and highest steps of the other reporting
            tasks of its job.
        median_step: the median step of its job's reporting tasks.
    """

    def __init__(self, message: str, source_task: Optional[str] = None, *, task: str = "",
                 step: int = 0, reason: str = "unspecified", stalled_for: float = 0.0,
                 min_other_step: int = 0, max_other_step: int = 0, median_step: int = 0):
        super().__init__(message, source_task)
        self.task = task
        self.step = step
        self.reason = reason
        self.stalled_for = stalled_for
        self.min_other_step = min_other_step
        self.max_other_step = max_other_step
        self.median_step = median_step


class NotFoundError(Error, KeyError):
    code, code_number = "NOT_FOUND", 5

    def __str__(self) -> str:  # KeyError would quote the message
        return Error.__str__(self)


class AlreadyExistsError(Error):
    code, code_number = "ALREADY_EXISTS", 6


class PermissionDeniedError(Error, PermissionError):
    code, code_number = "PERMISSION_DENIED", 7


class ResourceExhaustedError(Error):
    code, code_number = "RESOURCE_EXHAUSTED", 8


class FailedPreconditionError(Error):
    code, code_number = "FAILED_PRECONDITION", 9


class AbortedError(Error):
    code, code_number = "ABORTED", 10


class OutOfRangeError(Error):
    code, code_number = "OUT_OF_RANGE", 11


class UnimplementedError(Error, NotImplementedError):
    code, code_number = "UNIMPLEMENTED", 12


class InternalError(Error):
    code, code_number = "INTERNAL", 13


class PeerFailedError(InternalError):
    """A call that failed because another task failed: a barrier (or wait_for_all_tasks) whose
    participant died, hung past the heartbeat timeout or was already in error. An
    InternalError, so `except muster.InternalError` still catches it.

    Attributes (besides muster.Error's):
        task: the task that failed, "/job:worker/task:3".
    """

    def __init__(self, message: str, source_task: Optional[str] = None, *, task: str = ""):
        super().__init__(message, source_task)
        self.task = task


class UnavailableError(Error, ConnectionError):
    code, code_number = "UNAVAILABLE", 14


class DataLossError(Error):
    code, code_number = "DATA_LOSS", 15


class UnauthenticatedError(Error, PermissionError):
    code, code_number = "UNAUTHENTICATED", 16


_BY_NUMBER: Dict[int, Type[Error]] = {
    cls.code_number: cls
    for cls in (CancelledError, UnknownError, InvalidArgumentError, DeadlineExceededError,
                NotFoundError, AlreadyExistsError, PermissionDeniedError,
                ResourceExhaustedError, FailedPreconditionError, AbortedError, OutOfRangeError,
                UnimplementedError, InternalError, UnavailableError, DataLossError,
                UnauthenticatedError)
}

CODES: Dict[str, int] = {cls.code: number for number, cls in _BY_NUMBER.items()}


def from_status(code: int, message: str, source_task: Optional[str] = None,
                stuck: Optional[Dict[str, Any]] = None,
                failed_task: Optional[str] = None) -> Error:
    """The exception for a status code (absl numbering) and message. `stuck`: the leader's
    report of a stuck task (StuckTaskError's attributes), which makes a DEADLINE_EXCEEDED a
    StuckTaskError. `failed_task`: the task whose failure ended the call (the status's
    failed-task payload), which makes an INTERNAL a PeerFailedError."""
    if stuck is not None and code == DeadlineExceededError.code_number:
        return StuckTaskError(message, source_task, **stuck)
    if failed_task is not None and code == InternalError.code_number:
        return PeerFailedError(message, source_task, task=failed_task)
    return _BY_NUMBER.get(code, UnknownError)(message, source_task)
