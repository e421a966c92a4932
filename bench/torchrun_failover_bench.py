"""What a node's death costs a torchrun job: two "nodes" (torchrun processes on this host) of two
gloo workers each, --nnodes=1:2, one node killed (kill -9 of its agent and its workers). For
torch's own c10d rendezvous and for Muster's (python -m muster.torchrun), side by side in one
run: the time from the kill until the survivor's workers run again (their first all_reduce
done, in a world of their own), and until the survivor's job finished.

    PYTHONPATH=build/python /usr/bin/python3 bench/torchrun_failover_bench.py [--reps 3]

Both run with torchrun's defaults (monitor_interval 5 s, last_call 30 s, keep-alive 5 s x 3)
and the same worker script; c10d through Debian's torch.distributed.run with only its
--redirects/--tee crash fixed (muster.torchrun's Std.from_str). Prints a Markdown table with the
target of the work (survivor running again within 5 s of the kill) and a verdict. Not a test.
"""

import argparse
import glob
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

PYTHON = "/usr/bin/python3"
TARGET_S = 5.0

WORKER = r"""
import os, sys, time
import torch, torch.distributed as dist
out, steps = sys.argv[1], int(sys.argv[2])
dist.init_process_group("gloo")
world = dist.get_world_size()
t = torch.tensor([1.0]); dist.all_reduce(t)
with open(os.path.join(out, f"run-{os.getppid()}-{os.environ['LOCAL_RANK']}-{world}"), "w") as f:
    f.write(f"{time.time()}\n")
for _ in range(steps):
    t = torch.tensor([1.0]); dist.all_reduce(t); time.sleep(0.05)
dist.destroy_process_group()
"""

# torchrun as installed, with only the crash of its default --redirects/--tee fixed.
C10D_RUN = ("import sys; from torch.distributed.elastic.multiprocessing import api; "
            "from muster.torchrun import _std_from_str; "
            "api.Std.from_str = staticmethod(_std_from_str); "
            "from torch.distributed import run; run.main(sys.argv[1:])")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args) -> subprocess.Popen:
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


def wait_listening(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on port {port} after {timeout} s")
        time.sleep(0.02)


def started(out: str, node: int, world: int) -> list:
    return [float(open(f).read()) for f in glob.glob(os.path.join(out, f"run-{node}-*-{world}"))]


def one_run(backend: str, steps: int) -> tuple:
    with tempfile.TemporaryDirectory() as out:
        script = os.path.join(out, "worker.py")
        with open(script, "w") as f:
            f.write(WORKER)
        port = free_port()
        launcher = ([PYTHON, "-m", "muster.torchrun"] if backend == "muster"
                    else [PYTHON, "-c", C10D_RUN])
        args = launcher + ["--nnodes=1:2", "--nproc_per_node=2", f"--rdzv_backend={backend}",
                           f"--rdzv_endpoint=127.0.0.1:{port}", "--rdzv_id=bench",
                           "--max_restarts=3", script, out, str(steps)]
        # The first node hosts the rendezvous (its store or leader) and survives: with both
        # backends the host's death ends the job.
        nodes = [start(args)]
        wait_listening(port)
        nodes.append(start(args))
        survivor, victim = nodes
        try:
            deadline = time.monotonic() + 120
            while len(started(out, survivor.pid, 4)) < 2 or len(started(out, victim.pid, 4)) < 2:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{backend}: the job never ran on both nodes")
                time.sleep(0.02)
            os.killpg(victim.pid, signal.SIGKILL)
            killed = time.time()
            victim.wait()
            while len(started(out, survivor.pid, 2)) < 2:
                if time.monotonic() > deadline + 120:
                    raise RuntimeError(f"{backend}: the survivor never ran again")
                time.sleep(0.02)
            running = max(started(out, survivor.pid, 2)) - killed
            survivor.wait(300)
            finished = time.time() - killed
            return running, finished, survivor.returncode
        finally:
            for node in nodes:
                if node.poll() is None:
                    os.killpg(node.pid, signal.SIGKILL)
                    node.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40, help="all_reduce steps per round")
    args = parser.parse_args()
    rows = {}
    for rep in range(args.reps):
        for backend in ("c10d", "muster"):
            rows.setdefault(backend, []).append(one_run(backend, args.steps))
            print(f"rep {rep + 1} {backend}: {rows[backend][-1]}", file=sys.stderr)
    print(f"Node killed in a 2-node x 2-worker gloo job (--nnodes=1:2), {args.reps} runs, "
          "median (min-max), seconds after the kill\n")
    print("| rendezvous | survivor's workers running again | survivor's job finished | "
          "exit codes | target (running again) | verdict |")
    print("|---|---|---|---|---|---|")
    for backend, runs in rows.items():
        running = [r[0] for r in runs]
        finished = [r[1] for r in runs]
        verdict = "met" if statistics.median(running) <= TARGET_S else "not met"
        print(f"| {backend} | {statistics.median(running):.1f} ({min(running):.1f}-"
              f"{max(running):.1f}) | {statistics.median(finished):.1f} ({min(finished):.1f}-"
              f"{max(finished):.1f}) | {','.join(str(r[2]) for r in runs)} | <= {TARGET_S:.0f} s "
              f"| {verdict if backend == 'muster' else '-'} |")


if __name__ == "__main__":
    main()
