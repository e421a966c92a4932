"""What a restart costs a task with a real start-up, with and without a spare: `muster run
--restart one-for-one` of two tasks of a Python program that imports torch, creates a tensor and
connects (Agent.from_environment), one of them killed (kill -9). Side by side in one run: the time
from the kill until the task's next generation is connected again (its READY line), with a new
process (--spares 0) and with a spare (--spares 1), which did its start-up before.

    PYTHONPATH=build/python /usr/bin/python3 bench/spare_restart_bench.py [--reps 5]

Prints a Markdown table. Not a test.
"""

import argparse
import os
import signal
import statistics
import subprocess
import time

PYTHON = "/usr/bin/python3"
HERE = os.path.dirname(os.path.abspath(__file__))
MUSTER = os.environ.get("MUSTER_CLI", os.path.join(HERE, "..", "build", "tools", "muster"))

WORKER = r"""
import os, time
import torch
import muster
torch.ones(4).sum()  # the start-up a spare does ahead of need
if "MUSTER_SPARE" in os.environ:
    print("SPARE_READY", flush=True)
agent = muster.Agent.from_environment(heartbeat_timeout=2)
agent.connect()
task, gen = int(os.environ["MUSTER_TASK"]), int(os.environ["MUSTER_GENERATION"])
print(f"READY task={task} generation={gen} pid={os.getpid()} at={time.time()}", flush=True)
if gen > 0:
    agent.insert_key_value("go", "1", allow_overwrite=True)
agent.get_key_value("go")
agent.shutdown()
"""


def read_until(process, needle: str, deadline: float) -> str:
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        if needle in line:
            return line
    raise RuntimeError(f"no {needle!r} within the deadline")


def once(spares: int) -> float:
    """Seconds from the kill to the replacement's READY."""
    process = subprocess.Popen(
        [MUSTER, "run", "--port=0", "--job=worker=2", "--restart=one-for-one",
         f"--spares={spares}", "--heartbeat-timeout=2s", "--stop-timeout=3s", "--", PYTHON,
         "-c", WORKER], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        needles = ["READY task=0 generation=0", "READY task=1 generation=0"]
        if spares:
            needles.append("SPARE_READY")
        seen = {}
        while len(seen) < len(needles):
            line = process.stdout.readline()
            if not line or time.monotonic() > deadline:
                raise RuntimeError("the job did not start")
            for needle in needles:
                if needle in line:
                    seen[needle] = line  # a spare is ready once its start-up is done
        pid = int(seen["READY task=1 generation=0"].split("pid=")[1].split()[0])
        killed_at = time.time()
        os.kill(pid, signal.SIGKILL)
        line = read_until(process, "READY task=1 generation=1", deadline)
        ready_at = float(line.split("at=")[1])
        process.wait(timeout=60)
        return ready_at - killed_at
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for spares in (0, 1):
        times = [once(spares) for _ in range(args.reps)]
        rows.append((spares, statistics.median(times), min(times), max(times)))
    print("| restart of a killed task (torch imported, connected) | median s | min s | max s |")
    print("|---|---|---|---|")
    for spares, median, low, high in rows:
        what = "a spare takes it (--spares 1)" if spares else "a new process (--spares 0)"
        print(f"| {what} | {median:.3f} | {low:.3f} | {high:.3f} |")


if __name__ == "__main__":
    main()
