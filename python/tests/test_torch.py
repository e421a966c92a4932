"""PyTorch through Muster: muster.torch.Store passes PyTorch's own Python-store check and keeps
TCPStore's semantics; 4 processes run gloo through muster://, and when one rank is killed or
hangs the others end (non-zero) within seconds, naming it, instead of hanging in a collective."""

import datetime
import os
import signal
import socket
import subprocess
import threading
import time

import pytest
import torch.distributed as dist

import muster
import muster.torch

PYTHON = "/usr/bin/python3"
RANK = os.path.join(os.path.dirname(__file__), "torch_rank.py")


def test_pytorch_python_store_check_passes():
    with muster.Leader({"worker": 1}) as leader, muster.Agent(leader.address, "worker", 0) as a:
        dist._test_python_store(muster.torch.Store(a, datetime.timedelta(seconds=5)))


def test_store_semantics_as_tcpstore():
    with muster.Leader({"worker": 1}) as leader, muster.Agent(leader.address, "worker", 0) as a:
        store = muster.torch.Store(a, datetime.timedelta(seconds=1))
        store.set("path/like//key", "v")
        assert store.get("path/like//key") == b"v"
        assert store.add("n", 3) == 3 and store.add("n", 4) == 7 and store.get("n") == b"7"
        assert store.compare_set("c", "", "first") == b"first"   # missing + "": set
        assert store.compare_set("c", "wrong", "x") == b"first"  # mismatch: current
        assert store.compare_set("c", "first", "second") == b"second"
        assert store.compare_set("absent", "e", "d") == b"e"     # missing: expected
        assert store.check(["c"]) and not store.check(["c", "absent"])
        assert store.delete_key("c") and not store.delete_key("c")
        store.multi_set(["a", "b"], ["1", b"2"])
        assert store.multi_get(["a", "b"]) == [b"1", b"2"]
        assert store.num_keys() == 4
        with pytest.raises(RuntimeError, match="timeout"):
            store.get("never")
        with pytest.raises(RuntimeError, match="timeout"):
            store.wait(["never"], datetime.timedelta(milliseconds=200))
        store.set_timeout(datetime.timedelta(milliseconds=100))
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="timeout"):
            store.get("never")
        assert time.monotonic() - start < 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ranks:
    """world_size rank processes; their output is collected line by line."""

    def __init__(self, url, roles, delay_rank0=0.0):
        self.procs = {}
        self.lines = {r: [] for r in range(len(roles))}
        self.ready = {r: threading.Event() for r in range(len(roles))}
        order = sorted(range(len(roles)), key=lambda r: r == 0)  # rank 0 last
        for rank in order:
            if rank == 0 and delay_rank0:
                time.sleep(delay_rank0)
            proc = subprocess.Popen([PYTHON, RANK, url, str(rank), str(len(roles)), roles[rank]],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.procs[rank] = proc
            threading.Thread(target=self._read, args=(rank, proc), daemon=True).start()

    def _read(self, rank, proc):
        for line in proc.stdout:
            self.lines[rank].append(line.rstrip())
            if "ready" in line:
                self.ready[rank].set()

    def output(self, rank):
        return "\n".join(self.lines[rank])

    def wait(self, rank, timeout):
        return self.procs[rank].wait(timeout=timeout)

    def kill_all(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def test_four_ranks_all_reduce_and_leave_cleanly_with_a_late_leader():
    url = f"muster://127.0.0.1:{free_port()}"
    ranks = Ranks(url, ["ok"] * 4, delay_rank0=1.0)  # ranks 1-3 wait for rank 0's leader
    try:
        for rank in range(4):
            assert ranks.wait(rank, 120) == 0, ranks.output(rank)
            assert f"rank {rank} all_reduce ok" in ranks.output(rank)
    finally:
        ranks.kill_all()


@pytest.mark.parametrize("how", ["kill", "stop", "crash"])
def test_a_dead_or_hung_rank_ends_the_others_naming_it(how):
    url = f"muster://127.0.0.1:{free_port()}?heartbeat_timeout=2"
    roles = ["blocked", "blocked", "crash" if how == "crash" else "victim", "blocked"]
    ranks = Ranks(url, roles)
    try:
        for rank in range(4):
            assert ranks.ready[rank].wait(120), ranks.output(rank)
        time.sleep(0.5)  # the others are inside the all_reduce by now
        victim = ranks.procs[2]
        start = time.monotonic()
        if how != "crash":
            victim.send_signal(signal.SIGKILL if how == "kill" else signal.SIGSTOP)
        # kill: at once; stop: heartbeat timeout + 2 s; crash: its 1 s (less the 0.5) + 2 s
        bound = {"kill": 2.0, "stop": 2.0 + 2.0, "crash": 0.5 + 2.0}[how]
        for rank in (0, 1, 3):
            code = ranks.wait(rank, 60)
            elapsed = time.monotonic() - start
            out = ranks.output(rank)
            print(f"{how}: rank {rank} exited {code} after {elapsed:.2f} s")
            assert code != 0, out
            assert "all_reduce returned" not in out
            assert "rank 2" in out, out
            assert elapsed < bound, out
    finally:
        if how == "stop":
            ranks.procs[2].send_signal(signal.SIGCONT)
        ranks.kill_all()
