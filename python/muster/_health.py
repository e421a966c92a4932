"""Job health helpers: the preemption notice, barrier progress text, and notifying the job of
a preemption from a signal handler (docs/agent.md, "Progress and preemption")."""

import datetime
import logging
import math
import signal
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, NamedTuple, Optional, Union

from . import _errors
from ._muster import barrier_progress_text as _barrier_progress_text

if TYPE_CHECKING:  # the Agent imports this module
    from ._agent import Agent

_log = logging.getLogger("muster")

Deadline = Union[float, int, datetime.datetime, None]


class PreemptionNotice(NamedTuple):
    """What on_preemption receives when the leader announces that the job will be preempted.

    Attributes:
        notified_by: the task whose notify_preemption() started the protocol
            ("/job:worker/task:0").
        deadline: when the preemption happens, Unix time in seconds; None when unknown.
        reason: the reason that task gave.
    """

    notified_by: str
    deadline: Optional[float]
    reason: str


def unix_seconds(deadline: Deadline) -> Optional[float]:
    """A deadline as Unix seconds (float) from seconds or a datetime (naive: local time); None
    stays None (unknown). Raises ValueError for negative, NaN or infinite values."""
    if deadline is None:
        return None
    if isinstance(deadline, datetime.datetime):
        return deadline.timestamp()
    if isinstance(deadline, bool) or not isinstance(deadline, (int, float)):
        raise TypeError(
            f"a deadline is Unix seconds (float) or a datetime.datetime, not {deadline!r}")
    if not math.isfinite(deadline) or deadline < 0:
        raise ValueError(f"a deadline is Unix seconds >= 0 (or None: unknown), not {deadline!r}")
    return float(deadline)


def barrier_progress_text(info: Dict[str, Any]) -> str:
    """One line for a barrier progress dict (get_barrier_progress(), on_progress), the same
    on every participant: "barrier step: 1/2 arrived after 12s; missing worker/[1]"."""
    return _barrier_progress_text(info)


def log_barrier_progress(info: Dict[str, Any]) -> None:
    """The on_progress of wait_at_barrier(progress_every=...) without one: an INFO line on the
    "muster" logger."""
    _log.info("%s", barrier_progress_text(info))


class SignalHandlers:
    """What notify_preemption_on_signal() replaced: call it (or restore()) to put the previous
    handlers back. `previous` maps each signal to its previous handler."""

    def __init__(self, previous: Dict[int, Any]):
        self.previous = previous

    def restore(self) -> None:
        """Reinstalls the previous handlers (from the main thread)."""
        for signum, handler in self.previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)

    def __call__(self) -> None:
        self.restore()


def notify_preemption_on_signal(agent: "Agent",
                                signals: Iterable[Union[int, signal.Signals]] = (
                                    signal.SIGTERM,),
                                grace: float = 30.0, reason: str = "SIGTERM",
                                on_notified: Optional[Callable[[Future], None]] = None
                                ) -> SignalHandlers:
    """Turns `signals` into a preemption notice: the handler (installed for each signal, in the
    main thread) calls agent.notify_preemption_async(reason, deadline=now + grace) and returns
    at once; the process keeps running, so every task stops at the same step
    (reached_sync_point) and can checkpoint before the deadline. The signal's previous handler
    is not called. Call this from the main thread (signal.signal's rule), after connect().

    Args:
        agent: the connected agent of this task.
        signals: the signals to handle (default SIGTERM, what schedulers send before a kill).
        grace: seconds between the signal and the preemption, the deadline the notice carries.
        reason: the notice's reason.
        on_notified: called with the notify Future once it completed (on Muster's callback
            thread); by default a failure is logged on the "muster" logger.

    Returns:
        SignalHandlers: call it (or .restore()) to reinstall the previous handlers.
    """
    grace = float(grace)
    if not math.isfinite(grace) or grace < 0:
        raise ValueError(f"grace is seconds >= 0, not {grace!r}")
    numbers = [int(s) for s in signals]
    if not numbers:
        raise ValueError("signals is empty: give at least one, e.g. (signal.SIGTERM,)")

    def report(future: Future) -> None:
        if on_notified is not None:
            on_notified(future)
        elif future.exception() is not None:
            _log.warning("muster: could not notify the job of the preemption: %s",
                         future.exception())

    def handler(signum: int, frame: Any) -> None:
        try:
            future = agent.notify_preemption_async(reason, deadline=time.time() + grace)
        except _errors.Error as error:  # e.g. a closed agent: never raise inside the handler
            _log.warning("muster: could not notify the job of the preemption: %s", error)
            return
        future.add_done_callback(report)

    previous = {}
    try:
        for number in numbers:
            previous[number] = signal.signal(number, handler)
    except BaseException:
        SignalHandlers(previous).restore()
        raise
    return SignalHandlers(previous)
