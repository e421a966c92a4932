"""Python processes using muster: Ctrl-C in a blocking call, interpreter exit with agents,
leaders and calls still pending, and a barrier whose participant is killed."""

import ast
import os
import signal
import subprocess
import sys
import time

import muster

PYTHON = "/usr/bin/python3"

BLOCKED_GET = r"""
import sys, time, muster
leader = muster.Leader({"worker": 1})
agent = muster.Agent(leader.address, "worker", 0)
agent.connect()
print("blocking", flush=True)
try:
    agent.get_key_value("never")
except KeyboardInterrupt:
    print("interrupted", flush=True)
    # The agent still works after the interrupted call.
    agent.insert_key_value("after", "ok")
    print(agent.try_get_key_value("after").decode(), flush=True)
"""

EXIT_WITH_PENDING = r"""
import muster
leader = muster.Leader({"worker": 2}, shutdown_barrier_timeout=1)
agents = [muster.Agent(leader.address, "worker", i) for i in range(2)]
for a in agents:
    a.connect()
pending = [a.get_key_value_async("never") for a in agents]
barrier = agents[0].wait_at_barrier_async("never", 60)
print("exiting", flush=True)
"""


# Task argv[2] of a 3-task job: "victim" waits to be killed; "blocking" waits at barrier "done"
# in a blocking call; "async" waits in a future and says "at_barrier" once the blocking one has
# arrived too. Both print how the barrier failed.
BARRIER_TASK = r"""
import sys, time, muster
address, task, role = sys.argv[1], int(sys.argv[2]), sys.argv[3]
agent = muster.Agent(address, "worker", task)
agent.connect()
if role == "victim":
    print("ready", flush=True)
    time.sleep(600)
try:
    if role == "blocking":
        print("calling", flush=True)
        agent.wait_at_barrier("done", 60)
    else:
        pending = agent.wait_at_barrier_async("done", 60)
        while not pending.done():
            try:
                if agent.get_barrier_progress("done")["arrived"] == 2:
                    break
            except muster.NotFoundError:
                pass
            time.sleep(0.005)
        print("at_barrier", flush=True)
        pending.result(timeout=60)
    print("passed", flush=True)
except muster.InternalError as e:  # the clause written before PeerFailedError still catches it
    print(f"caught {type(e).__name__} task={getattr(e, 'task', None)}", flush=True)
    print(f"message {e.message}", flush=True)
"""

THREADS = r"""
import collections, os, sys, threading, time, muster

def native_threads():
    # A thread goes by the interpreter's name until it has named itself (CAF's clock does so
    # once it first runs, which on a loaded machine may be after connect() returned).
    deadline = time.monotonic() + 5
    while True:
        names = collections.Counter()
        for tid in os.listdir("/proc/self/task"):
            if int(tid) != os.getpid():
                with open(f"/proc/self/task/{tid}/comm") as comm:
                    names[comm.read().strip()] += 1
        if "python3" not in names or time.monotonic() > deadline:
            return dict(names)
        time.sleep(0.01)

agent = muster.Agent(sys.argv[1], "worker", 0)
agent.connect()
agent.insert_key_value("k", "v")
print("blocking calls", native_threads(), flush=True)
ran = threading.Event()
future = agent.try_get_key_value_async("k")
future.add_done_callback(lambda f: ran.set())
print("future", future.result(timeout=10), ran.wait(10), flush=True)
print("after a future", native_threads(), flush=True)
agent.close()
"""


def run(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([PYTHON, "-c", code, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ))


def test_ctrl_c_interrupts_a_blocking_call_quickly():
    child = run(BLOCKED_GET)
    try:
        assert child.stdout.readline().strip() == "blocking"
        time.sleep(0.3)  # the call is blocked at the leader by now
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        line = child.stdout.readline().strip()
        elapsed = time.monotonic() - sent
        assert line == "interrupted", child.stdout.read()
        print(f"KeyboardInterrupt after {elapsed * 1000:.1f} ms")
        assert elapsed < 1.5  # 50 ms as a rule; a loaded machine may take longer
        assert child.stdout.readline().strip() == "ok"
        assert child.wait(timeout=20) == 0
    finally:
        child.kill()


def test_interpreter_exit_with_pending_calls_is_clean():
    child = run(EXIT_WITH_PENDING)
    try:
        out, _ = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 0, out
    assert "exiting" in out
    assert "Traceback" not in out and "Fatal" not in out


def test_killed_barrier_participant_raises_peer_failed_error_naming_it():
    with muster.Leader({"worker": 3}) as leader:
        victim = run(BARRIER_TASK, leader.address, "2", "victim")
        blocking = run(BARRIER_TASK, leader.address, "0", "blocking")
        waiting = run(BARRIER_TASK, leader.address, "1", "async")
        try:
            assert victim.stdout.readline().strip() == "ready"
            assert blocking.stdout.readline().strip() == "calling"
            assert waiting.stdout.readline().strip() == "at_barrier"
            victim.send_signal(signal.SIGKILL)
            for survivor in (blocking, waiting):
                out, _ = survivor.communicate(timeout=30)
                assert survivor.returncode == 0, out
                assert "caught PeerFailedError task=/job:worker/task:2" in out, out
                assert "Barrier Id: done::0, Task: /job:worker/task:2" in out, out
                assert ".." not in out, out
        finally:
            for child in (victim, blocking, waiting):
                child.kill()
                child.wait()


def test_an_agent_process_runs_four_threads_of_muster_and_one_more_once_it_calls_back(leader):
    """A connected agent that only makes blocking calls: one scheduler thread (which CAF names
    caf.multiplexer too), the network thread, the actor clock, and CAF's middleman actor (a
    detached actor, which blocks in connect); CAF's printer runs on the scheduler, not on a
    thread of its own. The thread that completes futures and runs callbacks starts with the
    first of them."""
    child = subprocess.Popen([PYTHON, "-c", THREADS, leader.address], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 0, out + err
    lines = out.splitlines()
    own = {"caf.multiplexer": 2, "caf.clock": 1, "caf.actor": 1}
    assert lines[0].startswith("blocking calls "), out
    assert ast.literal_eval(lines[0][len("blocking calls "):]) == own, out
    assert lines[1] == "future b'v' True", out
    assert lines[2].startswith("after a future "), out
    assert ast.literal_eval(lines[2][len("after a future "):]) == {**own, "muster-dispatch": 1}, out
