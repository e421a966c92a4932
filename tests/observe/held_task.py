#!/usr/bin/python3
"""One task of examples/worker's job that holds the others at their barrier: it connects and
exchanges topology as the worker does, but never arrives at barrier ready_to_train, so the
barrier stays open naming it (test_live_page.py). Leaves the job when stdin closes. Needs the
muster package on PYTHONPATH (<build>/python).

  held_task.py --leader HOST:PORT --task 3 [--job worker]"""
import argparse
import sys

import muster


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--leader", required=True)
    parser.add_argument("--job", default="worker")
    parser.add_argument("--task", type=int, required=True)
    args = parser.parse_args()
    agent = muster.Agent(args.leader, args.job, args.task)
    agent.connect()
    agent.wait_for_all_tasks()
    print("connected", flush=True)
    sys.stdin.read()  # until the test closes stdin (or stops this process)
    agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
