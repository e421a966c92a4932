"""Hung workers under muster.torchrun (--rdzv_conf hang_timeout=SECONDS).

A worker reports its training step with muster.torch.report_progress(step): it replaces a small
file of its own ("PID STEP") in the directory its node gave it ($MUSTER_PROGRESS_DIR, set in
the node's environment, which torch passes on to the workers it starts). The node's HangWatch
reads the files; a live worker of its own whose step has not changed for hang_timeout seconds
(counted from its first report: start-up before it is not watched) is hung: the watch says so
on the node's standard error and kills it. torch's elastic agent then sees a failed worker
and restarts the node's workers in a new round, which every other node hears of at once
through Muster (docs/python.md, "torchrun"). A hang inside a collective stops every rank's
steps, so each node finds its own and the whole job starts again, as torch would after a
failure; without the watch such a job waits for gloo's or NCCL's timeout (30 min by default).
"""

import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, Tuple

PROGRESS_DIR_ENV = "MUSTER_PROGRESS_DIR"

__all__ = ["HangWatch", "report_progress"]


def report_progress(step: int, done: bool = False) -> None:
    """Records this worker's training step for its node's hang watch (see the module's text);
    done=True ends the watch of this worker (call it after the last step, before a final wait
    for slower ranks or a checkpoint). Nothing happens outside muster.torchrun's workers with a
    hang_timeout. Cheap: one small file replaced, no message; a watch that went away (or a file
    that cannot be written) only stops watching, and only a step that is no integer raises."""
    directory = os.environ.get(PROGRESS_DIR_ENV)
    if not directory:
        return
    path = os.path.join(directory, os.environ.get("LOCAL_RANK", "0"))
    step = int(step)  # a step that is no integer is the caller's error (TypeError, ValueError)
    try:
        if done:
            os.unlink(path)
            return
        temporary = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
        with open(temporary, "w") as f:
            f.write(f"{os.getpid()} {step}\n")
        os.replace(temporary, path)
    except OSError:
        pass


def _own_live_child(pid: int) -> bool:
    """True when `pid` is a live (not a zombie) child of this process: only the node's own
    workers are ever killed, whatever a file says."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return len(fields) > 1 and fields[0] != "Z" and int(fields[1]) == os.getpid()


class HangWatch:
    """The node's side: a directory for its workers' steps, and a thread that kills a worker
    whose step stood still for `timeout` seconds."""

    def __init__(self, timeout: float, period: Optional[float] = None):
        if timeout <= 0:
            raise ValueError("hang_timeout must be positive (seconds)")
        self.timeout = timeout
        self.directory = tempfile.mkdtemp(prefix="muster-progress-")
        os.environ[PROGRESS_DIR_ENV] = self.directory
        # local rank -> (pid, step, when that step was first seen)
        self._seen: Dict[str, Tuple[int, int, float]] = {}
        self._closed = threading.Event()
        self._period = period if period is not None else min(1.0, timeout / 4)
        self._thread = threading.Thread(target=self._run, daemon=True, name="muster-hang-watch")
        self._thread.start()

    def _run(self) -> None:
        while not self._closed.wait(self._period):
            try:
                self.check(time.monotonic())
            except Exception as e:  # noqa: BLE001: the watch must outlive a bad scan
                print(f"muster: hang watch: {e!r}", file=sys.stderr, flush=True)

    def _read(self) -> Dict[str, Tuple[int, int]]:
        steps: Dict[str, Tuple[int, int]] = {}
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return steps
        for name in names:
            if name.endswith(".tmp"):
                continue
            try:
                with open(os.path.join(self.directory, name)) as f:
                    pid, step = (int(field) for field in f.read().split())
            except (OSError, ValueError):
                continue  # being replaced, or not a worker's
            steps[name] = (pid, step)
        return steps

    def check(self, now: float) -> List[Tuple[str, int, int]]:
        """Kills the hung workers; returns them as (local rank, pid, step)."""
        hung = []
        steps = self._read()
        for rank in list(self._seen):
            if rank not in steps:
                del self._seen[rank]
        for rank, (pid, step) in steps.items():
            if not _own_live_child(pid):
                self._forget(rank, pid)
                continue
            seen = self._seen.get(rank)
            if seen is None or seen[:2] != (pid, step):
                self._seen[rank] = (pid, step, now)
                continue
            stalled = now - seen[2]
            if stalled < self.timeout:
                continue
            print(f"muster: worker local rank {rank} (pid {pid}) made no progress for "
                  f"{stalled:.1f} s at step {step} (hang_timeout {self.timeout:g} s): stopping "
                  f"it, so that the job starts again", file=sys.stderr, flush=True)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass  # gone meanwhile
            self._forget(rank, pid)
            hung.append((rank, pid, step))
        return hung

    def _forget(self, rank: str, pid: int) -> None:
        """Forgets the worker `pid` of `rank`, and its file unless a new worker replaced it."""
        self._seen.pop(rank, None)
        path = os.path.join(self.directory, rank)
        try:
            with open(path) as f:
                if int(f.read().split()[0]) == pid:
                    os.unlink(path)
        except (OSError, ValueError, IndexError):
            pass

    def close(self) -> None:
        self._closed.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)
        if os.environ.get(PROGRESS_DIR_ENV) == self.directory:
            del os.environ[PROGRESS_DIR_ENV]
