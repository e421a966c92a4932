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

from . import _muster
from ._agent import Agent, cluster_placement, launch_identity, take_spare_assignment
from ._errors import (AbortedError, AlreadyExistsError, CancelledError, DataLossError,
                      DeadlineExceededError, Error, FailedPreconditionError, InternalError,
                      InvalidArgumentError, NotFoundError, OutOfRangeError, PeerFailedError,
                      PermissionDeniedError, ResourceExhaustedError, StuckTaskError,
                      UnauthenticatedError, UnavailableError, UnimplementedError, UnknownError)
from ._health import (PreemptionNotice, SignalHandlers, barrier_progress_text,
                      notify_preemption_on_signal)
from ._leader import Leader

__all__ = [
    "Agent", "Leader", "cluster_placement", "launch_identity", "take_spare_assignment",
    "PreemptionNotice", "SignalHandlers",
    "barrier_progress_text", "notify_preemption_on_signal", "Error", "AbortedError",
    "AlreadyExistsError", "CancelledError", "DataLossError", "DeadlineExceededError",
    "FailedPreconditionError", "InternalError", "InvalidArgumentError", "NotFoundError",
    "OutOfRangeError", "PeerFailedError", "PermissionDeniedError", "ResourceExhaustedError",
    "StuckTaskError",
    "UnauthenticatedError", "UnavailableError", "UnimplementedError", "UnknownError",
]


def _shutdown() -> None:
    # Closes every agent (shutdown) and leader, stops the callback thread and the actor systems.
    _muster._shutdown()


_atexit.register(_shutdown)
