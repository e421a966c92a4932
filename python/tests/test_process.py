"""Python processes using muster: Ctrl-C in a blocking call, and interpreter exit with agents,
leaders and calls still pending."""

import os
import signal
import subprocess
import sys
import time

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


def run(code: str) -> subprocess.Popen:
    return subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=dict(os.environ))


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
        assert elapsed < 0.5
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
