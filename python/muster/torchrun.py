"""torchrun with Muster's rendezvous: `/usr/bin/python3 -m muster.torchrun ARGS`.

The installed torch's torchrun (torch.distributed.run), with the same flags, and:

- the `muster` rendezvous backend registered (--rdzv_backend=muster --rdzv_endpoint=HOST:PORT;
  muster.torch, docs/python.md "torchrun");
- the elastic agent's monitor sleep (--monitor_interval, 5 s by default) ends early when there is
  news: a local worker exited, a node of the job failed (Muster tells within milliseconds), or
  the rendezvous state changed (another node starts a new round). torchrun otherwise looks at
  its workers and at waiting nodes only once per interval. Its rendezvous polling (1 s) ends
  early on a state change too;
- torch 1.13 on Python 3.11 reads its default --redirects/--tee ("0") as None and crashes
  before starting a worker (Std.from_str); here "0" means Std.NONE, as torch documents.
"""

import os
import sys
import time
from typing import Set

from torch.distributed.elastic.multiprocessing import api as _mp_api

from . import _rendezvous
from . import torch as _muster_torch  # noqa: F401: registers the backend

__all__ = ["main"]


def _std_from_str(vm: str):
    """torch's Std.from_str, whose lookup of a value misses NONE and ALL on Python 3.11."""
    std = _mp_api.Std

    def to_std(v: str):
        return std(int(v))

    if _mp_api.re.match(_mp_api._VALUE_REGEX, vm):
        return to_std(vm)
    if _mp_api.re.match(_mp_api._MAPPING_REGEX, vm):
        return {int(i): to_std(v) for i, v in (m.split(":") for m in vm.split(","))}
    raise ValueError(f"{vm} does not match: <{_mp_api._VALUE_REGEX}> or "
                     f"<{_mp_api._MAPPING_REGEX}>")


_woken_by: Set[int] = set()


def _exited_child() -> bool:
    """True when a child process exited that has not woken the agent before (it stays waitable:
    torch reaps it)."""
    try:
        info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    if info is None or info.si_pid in _woken_by:
        return False
    _woken_by.add(info.si_pid)
    return True


class _WakingTime:
    """The `time` module as the elastic agent and the rendezvous see it: sleep() returns early
    on news (see the module's text); everything else is time's."""

    _SLICE = 0.05

    def __init__(self, wake_on_child_exit: bool):
        self._wake_on_child_exit = wake_on_child_exit

    def __getattr__(self, name):
        return getattr(time, name)

    def sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        # News that came after the state was last read (even while it was being read) ends the
        # sleep at once: the caller reads the state next.
        since = _rendezvous.news_used()
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or (self._wake_on_child_exit and _exited_child()):
                return
            if _rendezvous.wait_for_news(min(left, self._SLICE), since):
                return


def _install() -> None:
    from torch.distributed.elastic.agent.server import api as agent_api
    from torch.distributed.elastic.rendezvous import utils as rendezvous_utils

    _mp_api.Std.from_str = staticmethod(_std_from_str)
    agent_api.time = _WakingTime(wake_on_child_exit=True)  # the monitor's sleep
    rendezvous_utils.time = _WakingTime(wake_on_child_exit=False)  # _delay: the polling


def main(argv=None) -> None:
    """Runs torchrun (torch.distributed.run.main) with the changes above."""
    _install()
    from torch.distributed import run

    run.main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
