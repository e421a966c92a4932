"""Muster's exceptions: one class per status code, all subclasses of muster.Error."""

from typing import Dict, Optional, Type


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


def from_status(code: int, message: str, source_task: Optional[str] = None) -> Error:
    """The exception for a status code (absl numbering) and message."""
    return _BY_NUMBER.get(code, UnknownError)(message, source_task)
