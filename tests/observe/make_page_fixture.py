#!/usr/bin/python3
"""Writes a leader state in the shape of GET /api/state (muster serve --http), for working on the
live page (net/observe/page/index.html) without a leader: tests/observe/fixture_server.py serves it.

  make_page_fixture.py                   # 2 jobs, 300 tasks: tests/observe/page_fixture_state.json
  make_page_fixture.py --tasks 10000 -o /tmp/state_10k.json

Deterministic for a given --tasks and --seed."""
import argparse
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NOW_MS = 1764345600000  # a fixed wall time keeps the committed fixture stable


def name(job, task):
    return f"/job:{job}/task:{task}"


def make_state(total, seed):
    rnd = random.Random(seed)
    ps = max(1, total * 44 // 300) if total >= 8 else 1
    jobs = [("worker", total - ps), ("ps", ps)]
    names, first = [], 0
    job_rows = []
    for job, count in jobs:
        job_rows.append({"name": job, "first": first, "count": count})
        names += [name(job, t) for t in range(count)]
        first += count
    state, hb, step = [], [], []
    base_step = 1200
    for i in range(total):
        state.append("C")
        hb.append(rnd.randint(20, 4900))  # beats come every 5 s
        step.append(base_step + rnd.randint(0, 3) if i < total - ps else None)
    # One task failed (the job's first error), a few more when the job is large; some tasks
    # disconnected, one never seen.
    failed = [37 % total]
    failed += rnd.sample(range(total), max(0, total // 400))
    for i in sorted(set(failed)):
        state[i], hb[i], step[i] = "E", -1, None
    for i in rnd.sample(range(total), max(1, total // 150)):
        if state[i] == "C":
            state[i], hb[i] = "D", -1
    state[total - 1] = "U" if state[total - 1] == "C" else state[total - 1]
    if state[total - 1] == "U":
        hb[total - 1], step[total - 1] = -1, None
    lagging = [i for i in range(total) if state[i] == "C" and step[i] is not None][:3]
    for k, i in enumerate(lagging):
        step[i], hb[i] = 1187 + k * 4, 8100 + 700 * (2 - k)
    failed = sorted(i for i in range(total) if state[i] == "E")
    counts = {"connected": state.count("C"), "disconnected": state.count("D"),
              "error": state.count("E")}
    first_failed = failed[0]
    message = (f"heartbeat timeout: no heartbeat from {names[first_failed]} for 10000 ms "
               "(last seen at step 1199)")
    errors = [{"index": i, "task": names[i], "code": "UNAVAILABLE",
               "message": message if i == first_failed else "task process exited (signal 9)"}
              for i in failed][:200]
    connected = [i for i in range(total) if state[i] == "C"]
    slowest = sorted(connected, key=lambda i: (step[i] is None, step[i] or 0, -hb[i]))
    slowest = [{"index": i, "task": names[i], "hb_ms": hb[i], "step": step[i]}
               for i in slowest[:10]]
    # The checkpoint barrier waits for the failed task and one slow one.
    missing = [first_failed, lagging[0] if lagging else (first_failed + 1) % total]
    barriers = [
        {"id": "checkpoint_step_1200", "counter": 3, "arrived": total - 2, "total": total,
         "waited_ms": 8731, "deadline_in_ms": 51269,
         "missing": [names[i] for i in missing], "missing_count": 2},
        {"id": "eval_sync", "counter": 1, "arrived": ps - 1 if ps > 1 else 0, "total": ps,
         "waited_ms": 1204, "deadline_in_ms": -1,
         "missing": [name("ps", ps - 1)], "missing_count": 1},
    ]
    kv = [{"directory": "nccl", "keys": 1, "bytes": 128, "parked_gets": 0, "watches": 0},
          {"directory": "config", "keys": 12, "bytes": 2240, "parked_gets": 0, "watches": 3},
          {"directory": "ready_to_train", "keys": total - len(failed), "bytes": 6 * total,
           "parked_gets": 0, "watches": 0},
          {"directory": "checkpoints", "keys": 3, "bytes": 5 * 1024 * 1024 + 77,
           "parked_gets": 2, "watches": 1}]
    events, seq, t = [], 0, NOW_MS - 3_600_000

    def event(kind, task, text, dt=None):
        nonlocal seq, t
        seq += 1
        t += dt if dt is not None else rnd.randint(5, 200)
        events.append({"seq": seq, "unix_ms": t, "kind": kind, "task": task, "text": text})

    event("LEADER_STARTED", "", "fresh", 0)
    for i in range(min(total, 30)):
        event("TASK_REGISTERED", names[i], f"incarnation 0x{rnd.getrandbits(64):016x}")
    event("BARRIER_OPENED", "", "ready_to_train::1", 400)
    event("BARRIER_PASSED", "", f"ready_to_train::1: {total} tasks in 212 ms", 212)
    event("BARRIER_OPENED", "", "checkpoint_step_1200::3", 3_000_000)
    event("TASK_FAILED", names[first_failed], f"UNAVAILABLE: {message}", 1500)
    first_error = {"seq": seq, "unix_ms": t, "task": names[first_failed],
                   "code": "UNAVAILABLE", "message": message}
    for i in failed[1:4]:
        event("TASK_FAILED", names[i], "UNAVAILABLE: task process exited (signal 9)")
    for i in [i for i in range(total) if state[i] == "D"][:5]:
        event("TASK_STATE_CHANGED", names[i], "DISCONNECTED: connection lost")
    event("BARRIER_OPENED", "", "eval_sync::1", 200)
    event("PREEMPTION_NOTICED", name("ps", 0), "SIGTERM from the scheduler", 300)
    event("TASK_STUCK", names[lagging[0]] if lagging else "", "no progress past step 1187", 500)
    return {
        "leader": {"address": "127.0.0.1:7400", "incarnation": "0x1f2e3d4c5b6a7988",
                   "uptime_ms": 3_605_120, "version": 40 + seq, "taken_unix_ms": NOW_MS,
                   "last_event_seq": seq},
        "jobs": job_rows,
        "tasks": {"count": total, "state": "".join(state), "hb_ms": hb, "step": step},
        "counts": counts,
        "errors": errors,
        "slowest": slowest,
        "barriers": barriers,
        "kv": kv,
        "events": events[-50:],
        "first_error": first_error,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("-o", "--output",
                        default=os.path.join(HERE, "page_fixture_state.json"),
                        help="where to write it ('-': stdout)")
    args = parser.parse_args()
    if args.tasks < 4:
        parser.error("--tasks must be at least 4")
    text = json.dumps(make_state(args.tasks, args.seed), separators=(",", ":")) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)


if __name__ == "__main__":
    main()
