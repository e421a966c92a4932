"""PyTorch on an HA job's leaders: an etcd member (Debian's etcd-server), two `muster serve
--ha-etcd` leaders of one job, and two gloo ranks joined through muster://LEADER,LEADER. The
active leader is killed with SIGKILL while the ranks add to the store: the standby takes over,
the ranks' calls complete against it, every add is counted once, and the ranks finish. An agent
given only etcd (etcd://ENDPOINT/NAME) finds the active leader there."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

PYTHON = "/usr/bin/python3"
MUSTER_CLI = os.environ.get("MUSTER_CLI", os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "tools", "muster"))

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


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


class Lines:
    """The lines a process prints (stdout and stderr), read by a thread of their own."""

    def __init__(self, argv):
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def count(self, text):
        return sum(text in line for line in list(self.lines))

    def wait_for(self, text, timeout=30.0, times=1):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.count(text) >= times:
                return
            time.sleep(0.02)
        raise AssertionError(f"no line with {text!r} in {timeout} s: {self.lines}")

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)


@pytest.fixture
def etcd():
    """A one-member etcd cluster on free ports; its endpoint."""
    data = tempfile.mkdtemp(prefix="muster-etcd-")
    client, peer = free_ports(2)
    log = open(os.path.join(data, "etcd.log"), "w")
    process = subprocess.Popen(
        ["/usr/bin/etcd", "--name", "m0", "--data-dir", os.path.join(data, "m0"),
         "--listen-client-urls", f"http://127.0.0.1:{client}",
         "--advertise-client-urls", f"http://127.0.0.1:{client}",
         "--listen-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-cluster", f"m0=http://127.0.0.1:{peer}"],
        stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"127.0.0.1:{client}"
    try:
        deadline = time.monotonic() + 20
        while subprocess.run(["/usr/bin/etcdctl", f"--endpoints={endpoint}", "--dial-timeout=1s",
                              "put", "muster-test/formed", "1"],
                             capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, open(os.path.join(data, "etcd.log")).read()
            time.sleep(0.1)
        yield endpoint
    finally:
        process.kill()
        process.wait(10)
        log.close()
        shutil.rmtree(data, ignore_errors=True)


def test_active_leader_killed_the_ranks_go_on_against_the_standby(etcd):
    ports = free_ports(2)
    leaders = [Lines([MUSTER_CLI, "serve", f"--ha-etcd={etcd}", f"--ha-name=torch-{os.getpid()}",
                      f"--port={port}", "--job=worker=2", "--reconnect-window=15s",
                      "--ha-lease-ttl=2s"]) for port in ports]
    ranks = []
    try:
        for leader in leaders:
            leader.wait_for("muster leader ready at")
        deadline = time.monotonic() + 30
        while not any(leader.count("active: serving") for leader in leaders):
            assert time.monotonic() < deadline, [leader.lines for leader in leaders]
            time.sleep(0.05)
        active = 0 if leaders[0].count("active: serving") else 1
        url = f"muster://127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}"
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


def test_an_agent_given_only_etcd_finds_the_active_leader(etcd):
    import muster
    name = f"agent-{os.getpid()}"
    ports = free_ports(2)
    leaders = [Lines([MUSTER_CLI, "serve", f"--ha-etcd={etcd}", f"--ha-name={name}",
                      f"--port={port}", "--job=worker=1", "--ha-lease-ttl=2s"]) for port in ports]
    try:
        for leader in leaders:
            leader.wait_for("muster leader ready at")
        deadline = time.monotonic() + 30
        while not any(leader.count("active: serving") for leader in leaders):
            assert time.monotonic() < deadline, [leader.lines for leader in leaders]
            time.sleep(0.05)
        agent = muster.Agent(f"etcd://{etcd}/{name}", "worker", 0)
        agent.connect()
        agent.insert_key_value("found", b"yes")
        assert agent.get_key_value("found") == b"yes"
        agent.shutdown()
        # A job with no leader registered: asked again until register_timeout, then NotFound.
        start = time.monotonic()
        with pytest.raises(muster.NotFoundError, match=f"no leader of HA job {name}-none"):
            muster.Agent(f"etcd://{etcd}/{name}-none", "worker", 0, register_timeout=0.5,
                         wait_for_leader=True)
        assert 0.4 < time.monotonic() - start < 5
        with pytest.raises(muster.InvalidArgumentError, match="etcd://HOST:PORT"):
            muster.Agent("etcd://127.0.0.1:1", "worker", 0)
    finally:
        for process in leaders:
            process.kill()
