#!/usr/bin/python3
"""One host's ranks for bench/network_bench.cc --compare, on PyTorch's TCPStore: --count
clients (threads) of the store at --store HOST:PORT, as torch's store-based rendezvous and
barrier use it. Phases as bench/netbed_host.cc: when --go appears, each client connects, adds
itself to "joined" and waits for the key "joined/all" (set by the last to join); prints
"JOINED <unix us>". When --go2 appears, the same with "release"; "RELEASED <unix us>". TCPStore
tells nobody of a failure: "TOLD" never comes (a client would only see its own timeout)."""

import argparse
import os
import threading
import time
from datetime import timedelta

import torch.distributed as dist


def now_us():
    return int(time.time() * 1_000_000)


def wait_for(path, bound):
    end = time.time() + bound
    while not os.path.exists(path):
        if time.time() > end:
            raise SystemExit(1)
        time.sleep(0.0002)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--store", required=True)
    parser.add_argument("--count", type=int, default=64)
    parser.add_argument("--world", type=int, required=True)
    parser.add_argument("--go", required=True)
    parser.add_argument("--go2", required=True)
    args = parser.parse_args()
    host, _, port = args.store.rpartition(":")
    print("ready", flush=True)
    wait_for(args.go, 120)
    stores = [None] * args.count

    def barrier(i, name, connect):
        if connect:
            stores[i] = dist.TCPStore(host, int(port), args.world, False,
                                      timeout=timedelta(seconds=120))
        store = stores[i]
        if store.add(name, 1) == args.world:
            store.set(name + "/all", "1")
        store.wait([name + "/all"])

    for name, go, label in (("joined", None, "JOINED"), ("release", args.go2, "RELEASED")):
        if go:
            wait_for(go, 120)
        threads = [threading.Thread(target=barrier, args=(i, name, go is None))
                   for i in range(args.count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(f"{label} {now_us()}", flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    main()
