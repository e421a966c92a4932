#!/usr/bin/python3
"""A stand-in for Slurm's srun in tests: `fake_srun.py N NODELIST -- CMD ARGS...` runs N copies of
CMD as the tasks of one step, one per node, each with the variables srun gives a task
(SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST, ...). SIGINT and SIGTERM are passed
on; the copies die with it; it exits with the highest status of its tasks, as srun does."""

import ctypes
import os
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1


def main() -> int:
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        print("usage: fake_srun.py N NODELIST -- CMD ARGS...", file=sys.stderr)
        return 2
    count, nodes, command = int(sys.argv[1]), sys.argv[2], sys.argv[4:]
    libc = ctypes.CDLL(None, use_errno=True)

    def die_with_parent() -> None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    tasks = []
    for i in range(count):
        env = dict(os.environ, SLURM_JOB_ID="4242", SLURM_STEP_ID="0", SLURM_PROCID=str(i),
                   SLURM_LOCALID="0", SLURM_NODEID=str(i), SLURM_STEP_NUM_TASKS=str(count),
                   SLURM_NTASKS=str(count), SLURM_STEP_NUM_NODES=str(count),
                   SLURM_NNODES=str(count), SLURM_STEP_NODELIST=nodes, SLURM_JOB_NODELIST=nodes,
                   SLURM_STEP_TASKS_PER_NODE=f"1(x{count})")
        tasks.append(subprocess.Popen(command, env=env, preexec_fn=die_with_parent))

    def forward(signum, frame):
        for task in tasks:
            task.send_signal(signum)

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    codes = [task.wait() for task in tasks]
    return max(code if code >= 0 else 128 - code for code in codes)


if __name__ == "__main__":
    sys.exit(main())
