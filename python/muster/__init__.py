"""Muster: the control plane of multi-process ML and HPC jobs.

    import muster
    with muster.Leader({"worker": 2}) as leader:
        agent = muster.Agent(leader.address, "worker", 0)
        agent.connect()
        agent.insert_key_value("config/lr", "0.01")

muster.torch adds a torch.distributed store and the muster:// rendezvous. docs/python.md has
the guide.
"""

import atexit as _atexit
import threading as _threading

from . import _muster
from ._agent import Agent, launch_identity
from ._errors import (AbortedError, AlreadyExistsError, CancelledError, DataLossError,
                      DeadlineExceededError, Error, FailedPreconditionError, InternalError,
                      InvalidArgumentError, NotFoundError, OutOfRangeError, PeerFailedError,
                      PermissionDeniedError, ResourceExhaustedError, StuckTaskError,
                      UnauthenticatedError, UnavailableError, UnimplementedError, UnknownError)
from ._health import (PreemptionNotice, SignalHandlers, barrier_progress_text,
                      notify_preemption_on_signal)
from ._leader import Leader

__all__ = [
    "Agent", "Leader", "launch_identity", "PreemptionNotice", "SignalHandlers",
    "barrier_progress_text", "notify_preemption_on_signal", "Error", "AbortedError",
    "AlreadyExistsError", "CancelledError", "DataLossError", "DeadlineExceededError",
    "FailedPreconditionError", "InternalError", "InvalidArgumentError", "NotFoundError",
    "OutOfRangeError", "PeerFailedError", "PermissionDeniedError", "ResourceExhaustedError",
    "StuckTaskError",
    "UnauthenticatedError", "UnavailableError", "UnimplementedError", "UnknownError",
]

# Callbacks and futures run here, never on Muster's own threads.
_dispatcher = _threading.Thread(target=_muster._run_dispatcher, name="muster-dispatcher",
                                daemon=True)
_dispatcher.start()


def _shutdown() -> None:
    _muster._shutdown()  # closes every agent (shutdown) and leader, stops the actor systems
    _dispatcher.join(timeout=1.0)


_atexit.register(_shutdown)
