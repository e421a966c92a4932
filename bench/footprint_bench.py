"""What an idle rank costs: one process holding a connected muster.Agent that only heartbeats,
against one holding a connected TCPStore client, side by side in one run (127.0.0.1). For each:
the time from interpreter start to connected (imports included), threads, RSS, and the CPU it
burns per second while idle; and, as baselines, an interpreter that only imported the package
(muster, or torch.distributed). The leader (`muster serve`) and the TCPStore server run in
processes of their own and are not counted.

    PYTHONPATH=build/python /usr/bin/python3 bench/footprint_bench.py \\
        --muster build/tools/muster [--idle 10] [--heartbeat 10]

Prints Markdown tables: the rows, then the connected agent against the targets of the
cost-of-a-rank work (threads, RSS over the interpreter, idle CPU) with a verdict each. Not a
test: no pass/fail.
"""

import argparse
import os
import socket
import subprocess
import time

PYTHON = "/usr/bin/python3"
TICKS = os.sysconf("SC_CLK_TCK")

CLIENTS = {
    "python3 (bare interpreter)": r"""
import time
print("connected", 0.0, flush=True)
time.sleep(3600)
""",
    "muster.Agent (connected)": r"""
import sys, time
t0 = time.time()
import muster
a = muster.Agent(sys.argv[1], "worker", 0)
a.connect()
print("connected", time.time() - t0, flush=True)
time.sleep(3600)
""",
    "import muster (baseline)": r"""
import time
t0 = time.time()
import muster
print("connected", time.time() - t0, flush=True)
time.sleep(3600)
""",
    "TCPStore client (connected)": r"""
import sys, time
from datetime import timedelta
t0 = time.time()
import torch.distributed as dist
host, port = sys.argv[2].split(":")
s = dist.TCPStore(host, int(port), 2, False, timeout=timedelta(seconds=30))
print("connected", time.time() - t0, flush=True)
time.sleep(3600)
""",
    "import torch.distributed (baseline)": r"""
import time
t0 = time.time()
import torch.distributed as dist
print("connected", time.time() - t0, flush=True)
time.sleep(3600)
""",
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--muster", required=True, help="the muster command (build/tools/muster)")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of idle CPU measured")
    parser.add_argument("--heartbeat", type=int, default=10, help="the leader's heartbeat timeout")
    args = parser.parse_args()
    leader_port, store_port = free_port(), free_port()
    servers = [
        subprocess.Popen([args.muster, "serve", "--job=worker=1", f"--port={leader_port}",
                          f"--heartbeat-timeout={args.heartbeat}s"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen([PYTHON, "-c",
                          "import time; from datetime import timedelta; "
                          "import torch.distributed as d; "
                          f"s = d.TCPStore('127.0.0.1', {store_port}, 2, True, "
                          "timeout=timedelta(seconds=60), wait_for_workers=False); "
                          "time.sleep(3600)"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    time.sleep(3)  # both servers listen
    rows = []
    try:
        for name, code in CLIENTS.items():
            proc = subprocess.Popen([PYTHON, "-c", code, f"127.0.0.1:{leader_port}",
                                     f"127.0.0.1:{store_port}"],
                                    stdout=subprocess.PIPE, text=True)
            line = proc.stdout.readline().split()
            took = float(line[1]) if len(line) == 2 else float("nan")
            time.sleep(2)  # settle
            before = cpu_seconds(proc.pid)
            time.sleep(args.idle)
            cpu = (cpu_seconds(proc.pid) - before) / args.idle
            rows.append((name, took, status(proc.pid, "Threads"), status(proc.pid, "VmRSS"), cpu))
            proc.kill()
            proc.wait()
    finally:
        for server in servers:
            server.kill()
            server.wait()
    print(f"Idle footprint, {args.idle:.0f} s idle, leader heartbeat timeout {args.heartbeat} s\n")
    print("| process | start to connected | threads | RSS | CPU while idle |")
    print("|---|---|---|---|---|")
    for name, took, threads, rss, cpu in rows:
        print(f"| {name} | {took * 1000:.0f} ms | {threads} | {rss / 1024:.1f} MiB | "
              f"{cpu * 100:.2f}% of a core |")
    # The connected agent against the bare interpreter, with the targets of the cost-of-a-rank
    # work.
    by_name = {row[0]: row for row in rows}
    bare, agent = by_name["python3 (bare interpreter)"], by_name["muster.Agent (connected)"]
    checks = [
        ("threads of Muster's own", f"{agent[2] - bare[2]}", agent[2] - bare[2] <= 4, "<= 4"),
        ("RSS over the interpreter", f"{(agent[3] - bare[3]) / 1024:.1f} MiB",
         (agent[3] - bare[3]) / 1024 <= 15, "<= 15 MiB"),
        ("CPU while heartbeating", f"{agent[4] * 100:.2f}% of a core", agent[4] <= 0.002,
         "<= 0.2%"),
    ]
    print("\n| an idle connected muster.Agent | measured | target | verdict |")
    print("|---|---|---|---|")
    for what, measured, met, target in checks:
        print(f"| {what} | {measured} | {target} | {'met' if met else 'missed'} |")

if __name__ == "__main__":
    main()
