"""Muster from Python against PyTorch's TCPStore, side by side in one run (127.0.0.1):

  1. init_process_group("gloo") wall time for world sizes 4, 16 and 64 (one process per rank on
     this machine) through muster:// and through env:// (TCPStore). Every rank imports torch
     first and reports ready; the clock starts when all are told to go and stops when the last
     rank has returned from init_process_group.
  2. Round trips from Python: set and get of a 16-byte value, each a blocking call, against a
     server in another process (`muster serve` / a TCPStore master), through muster.torch.Store,
     the plain muster.Agent, and TCPStore.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py [--sizes 4,16,64] [--reps 3]

Prints Markdown tables (median [min-max] over the repetitions). Not a test: no pass/fail.
"""

import argparse
import datetime
import os
import socket
import statistics
import subprocess
import sys
import time

PYTHON = "/usr/bin/python3"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RANK = r"""
import sys, time, os
import torch.distributed as dist
import muster.torch
url, rank, world = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if url.startswith("env://"):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[4], RANK=str(rank),
                      WORLD_SIZE=str(world))
print("ready", flush=True)
sys.stdin.readline()
dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world)
print("done", time.time(), flush=True)
sys.stdin.readline()
dist.destroy_process_group()
"""

CLIENT = r"""
import sys, time, datetime, statistics
import torch.distributed as dist
kind, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
value = b"0123456789abcdef"
if kind == "tcpstore":
    store = dist.TCPStore("127.0.0.1", port, 2, False, datetime.timedelta(seconds=30))
    set_, get = store.set, store.get
else:
    import muster, muster.torch
    agent = muster.Agent(f"127.0.0.1:{port}", "worker", 0)
    if kind == "muster-store":
        store = muster.torch.Store(agent, datetime.timedelta(seconds=30))
        set_, get = store.set, store.get
    else:
        set_ = lambda k, v: agent.insert_key_value(k, v, True)
        get = agent.try_get_key_value
for i in range(200):  # warm up
    set_("k", value); get("k")
def per_op(fn):
    times = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(times)
print(per_op(lambda: set_("k", value)), per_op(lambda: get("k")), flush=True)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(ROOT, "build", "python") + os.pathsep + e.get("PYTHONPATH", "")
    return e


def init_time(scheme: str, world: int) -> float:
    port = free_port()
    url = f"muster://127.0.0.1:{port}" if scheme == "muster" else "env://"
    procs = [subprocess.Popen([PYTHON, "-c", RANK, url, str(r), str(world), str(port)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env())
             for r in range(world)]
    try:
        for p in procs:
            assert p.stdout.readline().strip() == "ready"
        go = time.time()
        for p in procs:
            p.stdin.write("go\n")
            p.stdin.flush()
        done = []
        for p in procs:
            words = p.stdout.readline().split()
            assert words and words[0] == "done", words
            done.append(float(words[1]))
        for p in procs:
            p.stdin.write("end\n")
            p.stdin.flush()
        for p in procs:
            p.wait(timeout=120)
        return max(done) - go
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def round_trips(kind: str, n: int):
    port = free_port()
    if kind == "tcpstore":
        server = subprocess.Popen(
            [PYTHON, "-c",
             "import sys, time, datetime, torch.distributed as d;"
             "s = d.TCPStore('127.0.0.1', int(sys.argv[1]), 2, True, datetime.timedelta(seconds=60));"
             "print('up', flush=True); time.sleep(600)", str(port)],
            stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "up"
    else:
        server = subprocess.Popen([os.path.join(ROOT, "build", "tools", "muster"), "serve",
                                   "--job=worker=1", f"--port={port}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert "ready" in server.stdout.readline()
    try:
        out = subprocess.run([PYTHON, "-c", CLIENT, kind, str(port), str(n)], env=env(),
                             capture_output=True, text=True, timeout=300)
        set_us, get_us = map(float, out.stdout.split())
        return set_us, get_us
    finally:
        server.kill()
        server.wait()


def fmt(values):
    if len(values) == 1:
        return f"{values[0]:.1f}"
    return f"{statistics.median(values):.1f} [{min(values):.1f}-{max(values):.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="4,16,64")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--ops", type=int, default=1000)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    print("## init_process_group(\"gloo\") wall time, ms (all ranks on this machine)\n")
    print("| world size | muster:// | env:// (TCPStore) | muster / TCPStore |")
    print("|---|---|---|---|")
    for world in sizes:
        results = {"muster": [], "env": []}
        for _ in range(args.reps):
            for scheme in ("muster", "env"):  # interleaved
                results[scheme].append(init_time(scheme, world) * 1000)
        ratio = statistics.median(results["muster"]) / statistics.median(results["env"])
        print(f"| {world} | {fmt(results['muster'])} | {fmt(results['env'])} | {ratio:.2f}x |",
              flush=True)

    print("\n## Python round trips, microseconds per blocking call (server in another process)\n")
    print("| client | set | get |")
    print("|---|---|---|")
    rows = {k: ([], []) for k in ("tcpstore", "muster-store", "muster-agent")}
    for _ in range(args.reps):
        for kind in rows:
            set_us, get_us = round_trips(kind, args.ops)
            rows[kind][0].append(set_us)
            rows[kind][1].append(get_us)
    for kind, (sets, gets) in rows.items():
        name = {"tcpstore": "TCPStore", "muster-store": "muster.torch.Store",
                "muster-agent": "muster.Agent"}[kind]
        print(f"| {name} | {fmt(sets)} | {fmt(gets)} |")


if __name__ == "__main__":
    sys.exit(main())
