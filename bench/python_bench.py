"""Muster from Python against PyTorch's TCPStore, side by side in one run (127.0.0.1):

  1. init_process_group("gloo") wall time for world sizes 4, 16 and 64 (one process per rank on
     this machine) through muster:// and through env:// (TCPStore). Every rank imports torch
     first and reports ready; the clock starts when all are told to go and stops when the last
     rank has returned from init_process_group. Each rank makes the rendezvous and then the
     process group over its store (what init_process_group(init_method=URL) does), and the
     table also says when the last rank had its store.
  2. Round trips from Python: get, set, add, compare_set and wait of a 16-byte value (each a
     blocking call) against a server in another process (`muster serve` / a TCPStore master),
     through muster.torch.Store, muster.torch.native_store (the store in C++ that the muster://
     rendezvous gives c10d), the plain muster.Agent (its equivalents) and TCPStore, unpinned
     and pinned to one CPU, with the targets of the cost-of-a-rank work (Store / TCPStore: get
     <= 1.0x, set and add <= 1.2x) and whether this run met them.
  4. Where a call's time goes: add and get in a loop of --cost-calls calls, server and client
     pinned to CPU 0 (so the wall time is the two processes' CPU time and their switches), with
     the server's and the client's CPU time per call, against TCPStore's.
  3. init_process_group's store traffic at 256 and 1,024 ranks, where a process per rank (each
     importing torch) does not fit this machine: rank 0 (which hosts the server) in a process
     of its own, the others in --procs processes, a thread per rank. Each rank makes the real
     rendezvous (dist.rendezvous, as init_process_group does: Muster's agent connected, or
     TCPStore's client), then the store
     calls torch 1.13's init_process_group("gloo") makes over it, in the same order with the
     same keys and value sizes (recorded from a run through a logging store): gloo's bootstrap
     (its host name, then its address, 408 bytes, and every other rank's of each), the store
     barrier (add, then add(key, 0) every 10 ms until all arrived) and the group's sequence
     number. gloo's TCP pairs and the collective barrier are left out (the same for both
     stores, and a full mesh of 1,024 ranks is half a million connections). --sizes-many 64 adds
     the same model at a size the real rows above also measure. Also printed: the CPU time of
     rank 0's process (the server) and of the others. The model calls both stores from Python
     (the muster:// rendezvous gives native_store); in a real init_process_group gloo calls
     either from C++, without the Python layer the model adds to both.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py [--sizes 4,16,64] [--reps 3]
        [--sizes-many 256,1024] [--procs 16] [--reps-many 1] [--sections init,many,ops,cost]
        [--cost-calls 20000]

Prints Markdown tables (median [min-max] over the repetitions). Not a test: no pass/fail.
"""

import argparse
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
# What init_process_group(init_method=url) does, in two steps timed apart: the rendezvous (the
# store: Muster's agent connected, or TCPStore's client), then the process group over it.
store, _, _ = next(dist.rendezvous(url, rank, world))
rendezvous = time.time()
dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
print("done", time.time(), rendezvous, flush=True)
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
elif kind in ("muster-store", "muster-native"):
    import muster, muster.torch
    agent = muster.Agent(f"127.0.0.1:{port}", "worker", 0)
    agent.connect()  # as the muster:// rendezvous does: a registered agent's calls go direct
    make = muster.torch.Store if kind == "muster-store" else muster.torch.native_store
    store = make(agent, datetime.timedelta(seconds=30))
if kind != "muster-agent":
    ops = {"set": lambda: store.set("k", value), "get": lambda: store.get("k"),
           "add": lambda: store.add("c", 1),
           "compare_set": lambda: store.compare_set("k", value, value),
           "wait": lambda: store.wait(["k"])}
else:
    import muster
    agent = muster.Agent(f"127.0.0.1:{port}", "worker", 0)
    agent.connect()
    ops = {"set": lambda: agent.insert_key_value("k", value, True),
           "get": lambda: agent.try_get_key_value("k"),
           "add": lambda: agent.increment_key_value("c", 1),
           "compare_set": lambda: agent.compare_and_swap("k", value, value),
           "wait": lambda: agent.get_key_value("k", 30.0)}
for i in range(200):  # warm up
    for fn in ops.values():
        fn()
def per_op(fn):
    times = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        times.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(times)
print(" ".join(f"{name}={per_op(fn)}" for name, fn in ops.items()), flush=True)
"""

# A process of many ranks: the rendezvous and then init_process_group's store calls (see 3.
# above) in a thread per rank; prints "done" with when the last of them finished.
MANY = r"""
import os, sys, threading, time
import torch.distributed as dist
import muster.torch
url, first, count, world, port = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]),
                                  int(sys.argv[4]), sys.argv[5])
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
address = bytes(408)  # what gloo's TCP device stores: its pairs' addresses
stores, done, met, failed = [], [], [], []
lock = threading.Lock()

def rank_main(rank, go):
    try:
        go.wait()
        store, _, _ = next(dist.rendezvous(url, rank, world))
        stores.append(store)  # kept alive until the process ends
        met.append(time.time())
        store.set(f"0/0/rank_{rank}", b"lo")  # gloo: the host name, for the local rank
        for i in range(rank):
            store.get(f"0/0/rank_{i}")
        store.set(f"0/0/{rank}", address)  # gloo: this rank's address
        for i in range(world):
            if i != rank:
                store.wait([f"0/0/{i}"])
                store.get(f"0/0/{i}")
        key = "store_based_barrier_key:1"  # torch's _store_based_barrier
        store.add(key, 1)
        while store.add(key, 0) != world:
            time.sleep(0.01)
        if rank == 0:
            store.set("0/SEQ_NUM_STORE_KEY", bytes(8))
        else:
            store.wait(["0/SEQ_NUM_STORE_KEY"])
            store.get("0/SEQ_NUM_STORE_KEY")
        with lock:
            done.append(time.time())
    except BaseException as e:  # reported, not swallowed
        with lock:
            failed.append(f"rank {rank}: {e!r}")

go = threading.Event()
threads = [threading.Thread(target=rank_main, args=(first + i, go), daemon=True)
           for i in range(count)]
for t in threads:
    t.start()
print("ready", flush=True)
sys.stdin.readline()
start = os.times()
go.set()
for t in threads:
    t.join()
if failed:
    print("failed", failed[0], flush=True)
else:
    cpu = os.times()  # since "go": not the interpreter's start and torch's import
    print("done", max(done), max(met), cpu.user + cpu.system - start.user - start.system,
          flush=True)
# Measured: what the end of the processes makes their agents say (each process's end is the
# loss of its ranks to the others) is not the bench's.
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
sys.stdin.readline()
os._exit(0)
"""

# One operation in a loop, for where its time goes: after a warm-up the client waits for "go",
# runs `n` calls and prints their wall time and its process's CPU time (the parent reads the
# server's from /proc around the loop).
COST = r"""
import os, sys, time, datetime
kind, port, n, op = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
value = b"0123456789abcdef"
if kind == "tcpstore":
    import torch.distributed as dist
    store = dist.TCPStore("127.0.0.1", port, 2, False, datetime.timedelta(seconds=30))
    fn = {"add": lambda: store.add("c", 1), "get": lambda: store.get("k")}[op]
    store.set("k", value)
else:
    import muster
    agent = muster.Agent(f"127.0.0.1:{port}", "worker", 0)
    agent.connect()
    if kind in ("muster-store", "muster-native"):
        import muster.torch
        make = muster.torch.Store if kind == "muster-store" else muster.torch.native_store
        store = make(agent, datetime.timedelta(seconds=30))
        store.set("k", value)
        fn = {"add": lambda: store.add("c", 1), "get": lambda: store.get("k")}[op]
    else:
        agent.insert_key_value("k", value, True)
        fn = {"add": lambda: agent.increment_key_value("c", 1),
              "get": lambda: agent.try_get_key_value("k")}[op]
for _ in range(2000):
    fn()
print("warm", flush=True)
sys.stdin.readline()
cpu, t = os.times(), time.perf_counter()
for _ in range(n):
    fn()
wall, after = time.perf_counter() - t, os.times()
print(wall, after.user + after.system - cpu.user - cpu.system, flush=True)
sys.stdin.readline()
"""


def start_server(kind: str, port: int, pin: list) -> subprocess.Popen:
    """A TCPStore master (kind "tcpstore") or `muster serve` on `port`, up and listening."""
    if kind == "tcpstore":
        server = subprocess.Popen(
            pin + [PYTHON, "-c",
                   "import sys, time, datetime, torch.distributed as d;"
                   "s = d.TCPStore('127.0.0.1', int(sys.argv[1]), 2, True,"
                   " datetime.timedelta(seconds=60));"
                   "print('up', flush=True); time.sleep(600)", str(port)],
            stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "up"
    else:
        server = subprocess.Popen(pin + [os.path.join(ROOT, "build", "tools", "muster"), "serve",
                                         "--job=worker=1", f"--port={port}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert "ready" in server.stdout.readline()
    return server


def process_cpu(pid: int) -> float:
    """Seconds of CPU (user and system, every thread) the process `pid` has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cost_split(kind: str, op: str, n: int) -> tuple:
    """Pinned to CPU 0, server and client: (wall, the server's CPU, the client's CPU), each in
    microseconds per call of `op`."""
    port = free_port()
    server = start_server(kind, port, PIN)
    client = subprocess.Popen(PIN + [PYTHON, "-c", COST, kind, str(port), str(n), op], env=env(),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout.readline().strip() == "warm"
        before = process_cpu(server.pid)
        client.stdin.write("\n")
        client.stdin.flush()
        wall, client_cpu = (float(v) for v in client.stdout.readline().split())
        server_cpu = process_cpu(server.pid) - before
        client.stdin.write("\n")
        client.stdin.flush()
        client.wait(timeout=30)
        return wall / n * 1e6, server_cpu / n * 1e6, client_cpu / n * 1e6
    finally:
        client.kill()
        server.kill()
        server.wait()


# The store operations timed, and issue #37's target for muster.torch.Store against TCPStore.
OPS = ("get", "set", "add", "compare_set", "wait")
TARGET = {"get": 1.0, "set": 1.2, "add": 1.2}
# And for init_process_group through muster:// against env://, by world size.
INIT_TARGET = {64: 1.0, 256: 1.0, 1024: 0.5}
# The store-traffic model (section 3) is held to the same targets.
KINDS = {"tcpstore": "TCPStore", "muster-store": "muster.torch.Store",
         "muster-native": "muster.torch.native_store", "muster-agent": "muster.Agent"}
PIN = ["taskset", "-c", "0"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(ROOT, "build", "python") + os.pathsep + e.get("PYTHONPATH", "")
    return e


def init_time(scheme: str, world: int) -> tuple:
    """Seconds from "go" until every rank returned from init_process_group, and until every
    rank had its store (the rendezvous)."""
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
        done, rendezvous = [], []
        for p in procs:
            words = p.stdout.readline().split()
            assert words and words[0] == "done", words
            done.append(float(words[1]))
            rendezvous.append(float(words[2]))
        for p in procs:
            p.stdin.write("end\n")
            p.stdin.flush()
        for p in procs:
            p.wait(timeout=120)
        return max(done) - go, max(rendezvous) - go
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def many_time(scheme: str, world: int, procs: int) -> tuple:
    """Seconds from "go" until every rank of `world` (rank 0 alone, the others in `procs`
    processes) has made the rendezvous and init_process_group's store calls (section 3), and
    until every rank had its store; and the CPU seconds of rank 0's process and of the others."""
    port = free_port()
    url = f"muster://127.0.0.1:{port}" if scheme == "muster" else "env://"
    # Rank 0 hosts the server (Muster's leader, TCPStore's master) in a process of its own:
    # TCPStore's master holds the interpreter until every client connected, so no rank of its
    # process could.
    per = -(-(world - 1) // max(1, procs))
    spans = [(0, 1)] + [(first, min(per, world - first)) for first in range(1, world, per)]
    procs_ = [subprocess.Popen([PYTHON, "-c", MANY, url, str(first), str(count), str(world),
                                str(port)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env())
              for first, count in spans]
    try:
        for p in procs_:
            assert p.stdout.readline().strip() == "ready"
        go = time.time()
        for p in procs_:
            p.stdin.write("go\n")
            p.stdin.flush()
        ends, met, cpu = [], [], []
        for p in procs_:
            words = p.stdout.readline().split()
            assert words and words[0] == "done", f"{scheme} world {world}: {words}"
            ends.append(float(words[1]))
            met.append(float(words[2]))
            cpu.append(float(words[3]))
        # The ranks end before rank 0's process, which hosts the server (a rank that outlives
        # Muster's leader would report its loss).
        for group in (procs_[1:], procs_[:1]):
            for p in group:
                p.stdin.write("end\n")
                p.stdin.flush()
            for p in group:
                p.wait(timeout=120)
        return max(ends) - go, max(met) - go, cpu[0], sum(cpu[1:])
    finally:
        for p in procs_:
            if p.poll() is None:
                p.kill()


def round_trips(kind: str, n: int, pinned: bool) -> dict:
    """Microseconds per call of each operation in OPS (one client, the server in another
    process); pinned: server and client share CPU 0."""
    port = free_port()
    pin = PIN if pinned else []
    server = start_server(kind, port, pin)
    try:
        out = subprocess.run(pin + [PYTHON, "-c", CLIENT, kind, str(port), str(n)], env=env(),
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return {k: float(v) for k, v in (w.split("=") for w in out.stdout.split())}
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
    parser.add_argument("--sizes-many", default="256,1024")
    parser.add_argument("--procs", type=int, default=16)
    parser.add_argument("--reps-many", type=int, default=1)
    parser.add_argument("--sections", default="init,many,ops,cost",
                        help="which of the four parts to run (see above)")
    parser.add_argument("--cost-calls", type=int, default=20000)
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    sizes = [int(s) for s in args.sizes.split(",") if s] if "init" in sections else []
    sizes_many = ([int(s) for s in args.sizes_many.split(",") if s]
                  if "many" in sections else [])

    if sizes:
        print("## init_process_group(\"gloo\") wall time, ms (all ranks on this machine)\n")
        print("| world size | muster:// | env:// (TCPStore) | muster / TCPStore | target | verdict "
              "| of which the rendezvous: muster:// | env:// |")
        print("|---|---|---|---|---|---|---|---|")
    for world in sizes:
        results = {"muster": [], "env": []}
        stores = {"muster": [], "env": []}
        for _ in range(args.reps):
            for scheme in ("muster", "env"):  # interleaved
                total, rendezvous = init_time(scheme, world)
                results[scheme].append(total * 1000)
                stores[scheme].append(rendezvous * 1000)
        ratio = statistics.median(results["muster"]) / statistics.median(results["env"])
        target = INIT_TARGET.get(world)
        verdict = "—" if target is None else ("met" if ratio <= target else "missed")
        print(f"| {world} | {fmt(results['muster'])} | {fmt(results['env'])} | {ratio:.2f}x "
              f"| {'—' if target is None else f'<= {target:.1f}x'} | {verdict} "
              f"| {fmt(stores['muster'])} | {fmt(stores['env'])} |", flush=True)

    if sizes_many:
        print(f"\n## init_process_group's store traffic, ms: rank 0, then {args.procs} processes "
              "of many ranks (a thread per rank; gloo's pairs and barrier left out)\n")
        print("| world size | muster:// | env:// (TCPStore) | muster / TCPStore | target | verdict "
              "| of which the rendezvous: muster:// | env:// | CPU s, rank 0's process: muster:// "
              "| env:// | the others: muster:// | env:// |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for world in sizes_many:
        results = {"muster": [], "env": []}
        stores = {"muster": [], "env": []}
        server_cpu = {"muster": [], "env": []}
        others_cpu = {"muster": [], "env": []}
        for _ in range(args.reps_many):
            for scheme in ("muster", "env"):  # interleaved
                total, rendezvous, server, others = many_time(scheme, world,
                                                              min(args.procs, world - 1))
                results[scheme].append(total * 1000)
                stores[scheme].append(rendezvous * 1000)
                server_cpu[scheme].append(server)
                others_cpu[scheme].append(others)
        ratio = statistics.median(results["muster"]) / statistics.median(results["env"])
        target = INIT_TARGET.get(world)
        verdict = "—" if target is None else ("met" if ratio <= target else "missed")
        print(f"| {world} | {fmt(results['muster'])} | {fmt(results['env'])} | {ratio:.2f}x "
              f"| {'—' if target is None else f'<= {target:.1f}x'} | {verdict} "
              f"| {fmt(stores['muster'])} | {fmt(stores['env'])} "
              f"| {fmt(server_cpu['muster'])} | {fmt(server_cpu['env'])} "
              f"| {fmt(others_cpu['muster'])} | {fmt(others_cpu['env'])} |", flush=True)

    for pinned in (False, True) if "ops" in sections else ():
        rows = {k: {op: [] for op in OPS} for k in KINDS}
        for _ in range(args.reps):
            for kind in KINDS:  # interleaved
                for op, us in round_trips(kind, args.ops, pinned).items():
                    rows[kind][op].append(us)
        where = "pinned: server and client on CPU 0" if pinned else "unpinned"
        print(f"\n## Python round trips, microseconds per blocking call ({where})\n")
        print("| op | TCPStore | muster.torch.Store | native_store | muster.Agent "
              "| Store / TCPStore | native_store / TCPStore | target | verdict: Store, native |")
        print("|---|---|---|---|---|---|---|---|---|")
        for op in OPS:
            base = statistics.median(rows["tcpstore"][op])
            ratios = [statistics.median(rows[k][op]) / base
                      for k in ("muster-store", "muster-native")]
            target = TARGET.get(op)
            verdicts = ", ".join("met" if r <= target else "missed" for r in ratios) \
                if target is not None else "—"
            print(f"| {op} | {fmt(rows['tcpstore'][op])} | {fmt(rows['muster-store'][op])} "
                  f"| {fmt(rows['muster-native'][op])} | {fmt(rows['muster-agent'][op])} "
                  f"| {ratios[0]:.2f}x | {ratios[1]:.2f}x "
                  f"| {'—' if target is None else f'<= {target:.1f}x'} | {verdicts} |",
                  flush=True)
    if "ops" in sections:
        print("\nTCPStore's set sends its request and returns without waiting for an answer (its "
              "server sends none); every other call here waits for the server's.")

    if "cost" in sections:
        print(f"\n## Where a call's time goes: {args.cost_calls} calls in a loop, server and "
              "client pinned to CPU 0, microseconds per call (CPU: every thread of the process)\n")
        print("| op | client | wall | server CPU | client CPU | server CPU / TCPStore's "
              "| client CPU / TCPStore's |")
        print("|---|---|---|---|---|---|---|")
        for op in ("add", "get"):
            split = {k: [] for k in KINDS}
            for _ in range(args.reps):
                for kind in KINDS:  # interleaved
                    split[kind].append(cost_split(kind, op, args.cost_calls))
            base = [statistics.median(v[i] for v in split["tcpstore"]) for i in range(3)]
            for kind, name in KINDS.items():
                med = [statistics.median(v[i] for v in split[kind]) for i in range(3)]
                print(f"| {op} | {name} | {fmt([v[0] for v in split[kind]])} "
                      f"| {fmt([v[1] for v in split[kind]])} | {fmt([v[2] for v in split[kind]])} "
                      f"| {med[1] / base[1]:.2f}x | {med[2] / base[2]:.2f}x |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
