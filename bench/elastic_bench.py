"""What an elastic job's membership costs its tasks, side by side in one run: the safe point
(Agent.wait_for_membership while no task waits to be admitted, which every step of an SPMD loop
may call) against a TCPStore get of an existing key, the round trip torch programs already pay;
and the time from kill -9 of a member until a survivor's on_membership callback has the new
membership.

    PYTHONPATH=build/python /usr/bin/python3 bench/elastic_bench.py [--reps 5]

Prints a Markdown table. Not a test.
"""

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import threading
import time

import torch.distributed as dist

import muster

HERE = os.path.dirname(os.path.abspath(__file__))
MUSTER = os.environ.get("MUSTER_CLI", os.path.join(HERE, "..", "build", "tools", "muster"))
CALLS = 2000

MEMBER = r"""
import sys, time, muster
agent = muster.Agent(sys.argv[1], "worker", 1)
agent.connect()
print("up", flush=True)
time.sleep(600)
"""

# A TCPStore server in a process of its own, as the leader is.
STORE_HOST = r"""
import datetime, socket, time
import torch.distributed as dist
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
store = dist.TCPStore("127.0.0.1", port, 2, True, datetime.timedelta(seconds=30),
                      wait_for_workers=False)
store.set("key", "value")
print(port, flush=True)
time.sleep(600)
"""


def per_call_us(call, reps: int) -> list:
    for _ in range(200):
        call()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(CALLS):
            call()
        samples.append((time.perf_counter() - start) / CALLS * 1e6)
    return samples


def row(name: str, samples: list, unit: str) -> str:
    return (f"| {name} | {statistics.median(samples):.1f} | {min(samples):.1f} | "
            f"{max(samples):.1f} | {unit} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    serve = subprocess.Popen([MUSTER, "serve", "--port=0", "--job=worker=1:4",
                              "--settle-time=100ms"], stdout=subprocess.PIPE, text=True)
    try:
        address = serve.stdout.readline().split("ready at ")[1].split()[0]
        changed = threading.Event()

        def on_membership(membership) -> None:
            if 1 not in membership["members"]:
                changed.set()

        agent = muster.Agent(address, "worker", 0, on_membership=on_membership)
        agent.connect()
        version = agent.wait_for_membership(0, timeout=10)["version"]
        safe_point = per_call_us(lambda: agent.wait_for_membership(version), args.reps)

        host = subprocess.Popen([sys.executable, "-c", STORE_HOST], stdout=subprocess.PIPE,
                                text=True)
        try:
            port = int(host.stdout.readline())
            store = dist.TCPStore("127.0.0.1", port, 2, False, datetime.timedelta(seconds=30))
            tcpstore_get = per_call_us(lambda: store.get("key"), args.reps)
        finally:
            host.kill()
            host.wait()

        notified = []
        for _ in range(args.reps):
            member = subprocess.Popen([sys.executable, "-c", MEMBER, address],
                                      stdout=subprocess.PIPE, text=True)
            member.stdout.readline()
            while 1 not in agent.get_membership()["members"]:
                version = agent.wait_for_membership(version, timeout=10)["version"]
            changed.clear()
            start = time.perf_counter()
            member.kill()
            member.wait()
            if not changed.wait(10):
                raise SystemExit("no new membership within 10 s of the kill")
            notified.append((time.perf_counter() - start) * 1e3)
        agent.close()
    finally:
        serve.terminate()
        serve.wait()
    print(f"{args.reps} repetitions, {CALLS} calls each; Python {sys.version.split()[0]}; the "
          "client in this process, muster serve and the TCPStore server each in their own, on "
          "127.0.0.1\n")
    print("| what | median | min | max | unit |")
    print("|---|---|---|---|---|")
    print(row("safe point, nobody waiting (wait_for_membership)", safe_point, "µs per call"))
    print(row("TCPStore get of an existing key (the floor torch pays)", tcpstore_get,
              "µs per call"))
    print(row("kill -9 of a member → survivor's on_membership", notified, "ms"))


if __name__ == "__main__":
    main()
