"""PyTorch on an HA job's leaders: an etcd member (Debian's etcd-server), two `muster serve
--ha-etcd` leaders of one job, and two gloo ranks joined through muster://LEADER,LEADER. The
active leader is killed with SIGKILL while the ranks add to the store: the standby takes over,
the ranks' calls complete against it, every add is counted once, and the ranks finish."""

import os
import time

import pytest

from ha_processes import Lines, serve_ha_leaders

PYTHON = "/usr/bin/python3"
pytestmark = pytest.mark.skipif(not os.access("/usr/bin/etcd", os.X_OK),
                                reason="/usr/bin/etcd is missing: run tools/install-deps.sh")

# One rank: joins, checks an all_reduce, then adds 1 to its own counter every 20 ms for
# --seconds, printing each sum; then a barrier through the store and out.
RANK = r"""
import sys, time
import torch, torch.distributed as dist
import muster.torch
url, rank, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
dist.init_process_group("gloo", init_method=f"{url}?rank={rank}&world_size=2"
                        "&leader_reconnect_timeout=30")
tensor = torch.tensor([float(rank + 1)])
dist.all_reduce(tensor)
assert tensor.item() == 3.0
print("ready", flush=True)
store = dist.distributed_c10d._get_default_store()
end = time.monotonic() + seconds
adds = 0
while time.monotonic() < end:
    total = store.add(f"adds/{rank}", 1)
    adds += 1
    assert total == adds, (total, adds)
    time.sleep(0.02)
print(f"adds {adds}", flush=True)
store.set(f"done/{rank}", "1")
store.wait(["done/0", "done/1"])
dist.destroy_process_group()
print("joined", flush=True)
"""


def test_active_leader_killed_the_ranks_go_on_against_the_standby(etcd):
    leaders, active, addresses = serve_ha_leaders(
        etcd, f"torch-{os.getpid()}", ["--job=worker=2", "--reconnect-window=15s",
                                       "--ha-lease-ttl=2s"])
    ranks = []
    try:
        url = "muster://" + ",".join(addresses)
        ranks = [Lines([PYTHON, "-c", RANK, url, str(rank), "8"]) for rank in range(2)]
        for rank in ranks:
            rank.wait_for("ready", timeout=60)
        time.sleep(1.5)
        leaders[active].kill()
        leaders[1 - active].wait_for("active: serving", timeout=30)
        for rank in ranks:
            assert rank.process.wait(60) == 0, rank.lines
            rank.wait_for("joined")
            adds = [line for line in rank.lines if line.startswith("adds ")]
            assert len(adds) == 1 and int(adds[0].split()[1]) > 100, rank.lines
        assert "recovered 2 tasks (2 connected" in "\n".join(leaders[1 - active].lines)
    finally:
        for process in ranks + leaders:
            process.kill()
