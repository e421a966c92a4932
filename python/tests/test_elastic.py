"""Elastic jobs: a job of MIN:MAX tasks forms after its settle time, admits a late task at the
safe point (Agent.wait_for_membership), and shrinks when a member leaves, in this process and
across real processes of `muster serve` and Python workers, one of them killed."""

import os
import signal
import subprocess
import threading
import time

import pytest

import muster

PYTHON = "/usr/bin/python3"
MUSTER_CLI = os.environ.get("MUSTER_CLI", os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "tools", "muster"))

# A task of the elastic job "worker": at its safe point every 50 ms, it prints each new
# membership as "membership VERSION MEMBERS".
WORKER = r"""
import sys, time, muster
agent = muster.Agent(sys.argv[1], "worker", int(sys.argv[2]))
agent.connect()
version = 0
while True:
    m = agent.wait_for_membership(version, timeout=60)
    if m["version"] != version:
        version = m["version"]
        print("membership", version, ",".join(map(str, m["members"])), flush=True)
    time.sleep(0.05)
"""


class Lines:
    """The lines a process prints, read by a thread of their own."""

    def __init__(self, process: subprocess.Popen):
        self.process = process
        self.lines = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if text in line:
                    return line
            time.sleep(0.02)
        raise AssertionError(f"no line with {text!r} in {timeout} s: {self.lines}")


def test_forms_admits_a_late_task_at_the_safe_point_and_shrinks():
    with muster.Leader({"worker": (2, 3), "ps": 1}, settle_time=1.0) as leader:
        seen = []
        agents = [muster.Agent(leader.address, "worker", i, rpc_timeout=10,
                               on_membership=seen.append if i == 0 else None)
                  for i in range(3)]
        try:
            agents[0].connect()
            agents[1].connect()
            early = agents[0].get_membership()
            assert early["version"] == 0 and early["waiting"] == [0, 1], early
            assert (early["min_tasks"], early["max_tasks"]) == (2, 3)
            formed = agents[0].wait_for_membership(0, timeout=10)
            assert formed["version"] == 1 and formed["members"] == [0, 1], formed
            # Nobody waits: the safe point answers at once with the same membership.
            assert agents[1].wait_for_membership(1, timeout=10)["version"] == 1
            agents[2].connect()
            late = agents[2].wait_for_membership_async(0, timeout=10)
            first = agents[0].wait_for_membership_async(1, timeout=10)
            time.sleep(0.2)
            assert not late.done() and not first.done()
            second = agents[1].wait_for_membership(1, timeout=10)
            for got in (second, first.result(timeout=10), late.result(timeout=10)):
                assert got["version"] == 2 and got["members"] == [0, 1, 2], got
            agents[1].shutdown()
            shrunk = agents[0].wait_for_membership(2, timeout=10)
            assert shrunk["version"] == 3 and shrunk["members"] == [0, 2], shrunk
            # Every new membership was pushed to task 0's callback, in order.
            deadline = time.monotonic() + 10
            while len(seen) < 3 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert [(m["version"], m["members"]) for m in seen] == [
                (1, [0, 1]), (2, [0, 1, 2]), (3, [0, 2])], seen
        finally:
            for agent in agents:
                agent.close()


def test_misuse_raises_typed_errors():
    with pytest.raises(muster.InvalidArgumentError, match="least number of tasks"):
        muster.Leader({"worker": "3:2"})
    with pytest.raises(ValueError):
        muster.Leader({"worker": (1, 2)}, settle_time=-1)
    with pytest.raises(TypeError):
        muster.Agent("127.0.0.1:1", "worker", 0, on_membership=3)
    with muster.Leader({"worker": (1, 2), "ps": 1}, settle_time=0.1) as leader:
        ps = muster.Agent(leader.address, "ps", 0, rpc_timeout=10)
        worker = muster.Agent(leader.address, "worker", 0, rpc_timeout=10)
        try:
            ps.connect()
            with pytest.raises(muster.InvalidArgumentError, match="is not elastic"):
                ps.wait_for_membership(0, timeout=1)
            with pytest.raises(muster.InvalidArgumentError, match="no elastic job"):
                ps.get_membership()
            with pytest.raises(muster.FailedPreconditionError, match="must be RUNNING"):
                worker.wait_for_membership(0, timeout=1)  # refused by the agent itself
            worker.connect()
            with pytest.raises(muster.InvalidArgumentError, match="a version of 0 or more"):
                worker.wait_for_membership(-1, timeout=1)
            # A version ahead of the job's (kept across a leader restart) gets the current one.
            assert worker.wait_for_membership(7, timeout=10)["members"] == [0]
            # A timeout beyond any the leader takes (a year) is sent as one it takes.
            assert worker.wait_for_membership(1, timeout=1e300)["version"] == 1
            with pytest.raises(ValueError):
                worker.wait_for_membership(0, timeout=-1)
        finally:
            ps.close()
            worker.close()


def test_elastic_job_across_processes_admits_a_late_task_and_drops_a_killed_one():
    serve = subprocess.Popen(
        [MUSTER_CLI, "serve", "--port=0", "--job=worker=2:3", "--settle-time=300ms"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    workers = []
    try:
        leader_lines = Lines(serve)
        ready = leader_lines.wait_for("muster leader ready at ")
        address = ready.split("ready at ")[1].split()[0]

        def start(task: int) -> Lines:
            process = subprocess.Popen([PYTHON, "-c", WORKER, address, str(task)],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True)
            workers.append(process)
            return Lines(process)

        zero, one = start(0), start(1)
        for worker in (zero, one):
            worker.wait_for("membership 1 0,1")
        two = start(2)
        for worker in (zero, one, two):
            worker.wait_for("membership 2 0,1,2")
        os.kill(workers[1].pid, signal.SIGKILL)
        killed_at = time.monotonic()
        for worker in (zero, two):
            worker.wait_for("membership 3 0,2")
        # The leader saw the connection drop: the survivors hear it well before any timeout.
        assert time.monotonic() - killed_at < 10
        assert workers[0].poll() is None and workers[2].poll() is None
    finally:
        for process in workers + [serve]:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL if process is not serve else signal.SIGTERM)
            process.wait(timeout=30)
