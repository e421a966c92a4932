"""muster.torchrun: Debian's torch 1.13 torchrun with the `muster` rendezvous, two "nodes" (two
torchrun processes on this host) of two gloo workers each. A job completes; a killed worker
restarts both nodes' workers and the job still completes; a killed node (its agent and its
workers) leaves the survivor running again in a world of its own; a node that joins later
enters the next round."""

import glob
import os
import signal
import socket
import subprocess
import time

import pytest

PYTHON = "/usr/bin/python3"
WORKER = os.path.join(os.path.dirname(__file__), "torchrun_worker.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Job:
    def __init__(self, tmp_path, nnodes: str, min_world: int, steps: int, pause: float,
                 max_restarts: int = 0, rdzv_conf: str = "", mode: str = ""):
        self.out = str(tmp_path)
        self.port = _free_port()
        self.args = [PYTHON, "-m", "muster.torchrun", f"--nnodes={nnodes}",
                     "--nproc_per_node=2", "--rdzv_backend=muster",
                     f"--rdzv_endpoint=127.0.0.1:{self.port}", "--rdzv_id=test",
                     f"--max_restarts={max_restarts}", "--monitor_interval=5"]
        if rdzv_conf:
            self.args.append(f"--rdzv_conf={rdzv_conf}")
        self.args += [WORKER, self.out, str(min_world), str(steps), str(pause)]
        if mode:
            self.args.append(mode)
        self.nodes = []

    def start_node(self) -> subprocess.Popen:
        """Starts a node; the first one hosts the leader (is_host: it matches the endpoint),
        and is listening before this returns."""
        node = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        self.nodes.append(node)
        if len(self.nodes) == 1:
            self.wait_for(self._listening)
        return node

    def _listening(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def worker_pids(self, node, world=None) -> list:
        """The pids of the node's current workers (of a world of `world`)."""
        pids = []
        for name in glob.glob(os.path.join(self.out, f"pid-{node.pid}-*")):
            fields = open(name).read().split()
            if len(fields) == 3 and (world is None or int(fields[1]) == world):
                pids.append(int(fields[0]))
        return pids

    def running(self, world, *nodes) -> bool:
        return all(len(self.worker_pids(node, world)) == 2 for node in nodes)

    def wait_for(self, what, timeout=60.0):
        deadline = time.monotonic() + timeout
        while not what():
            if time.monotonic() > deadline:
                self.dump()
                pytest.fail(f"timed out after {timeout} s")
            time.sleep(0.05)

    def done(self) -> dict:
        return {os.path.basename(f): int(open(f).read())
                for f in glob.glob(os.path.join(self.out, "done-*"))}

    def finish(self, timeout=120.0) -> list:
        codes = []
        for node in self.nodes:
            try:
                node.wait(timeout)
            except subprocess.TimeoutExpired:
                self.dump()
                raise
            codes.append(node.returncode)
        if any(codes):
            self.dump()
        return codes

    def dump(self):
        for node in self.nodes:
            if node.poll() is None:
                os.killpg(node.pid, signal.SIGKILL)
            print(f"--- node {node.pid}:\n{node.stdout.read()}")

    def close(self):
        for node in self.nodes:
            if node.poll() is None:
                os.killpg(node.pid, signal.SIGKILL)
                node.wait()


@pytest.fixture
def job_factory(tmp_path):
    made = []

    def make(*args, **kwargs):
        job = Job(tmp_path, *args, **kwargs)
        made.append(job)
        return job

    yield make
    for job in made:
        job.close()


def test_two_nodes_of_two_gloo_workers_complete(job_factory):
    job = job_factory("2", min_world=4, steps=3, pause=0.0)
    job.start_node()
    job.start_node()
    assert job.finish() == [0, 0]
    assert job.done() == {f"done-{rank}-0": 4 for rank in range(4)}


def test_a_killed_worker_restarts_both_nodes_and_the_job_completes(job_factory):
    job = job_factory("2", min_world=4, steps=60, pause=0.05, max_restarts=2)
    first, second = job.start_node(), job.start_node()
    job.wait_for(lambda: job.running(4, first, second))
    before = set(job.worker_pids(first)) | set(job.worker_pids(second))
    killed = time.time()
    os.kill(job.worker_pids(second)[0], signal.SIGKILL)
    assert job.finish() == [0, 0]
    # Both nodes' workers were started again, and every rank finished once, after the kill, in
    # a world of 4.
    after = set(job.worker_pids(first)) | set(job.worker_pids(second))
    assert len(after) == 4 and not after & before
    done = job.done()
    assert sorted(done.values()) == [4, 4, 4, 4]
    assert all(os.path.getmtime(os.path.join(job.out, name)) > killed for name in done)


def _kill_the_second_node_and_see_the_first_run_alone(job):
    """Two nodes run 4 workers; kill -9 of the second (its agent and workers). The survivor's
    workers run again, in a world of 2 (its own), and finish. torch alone would first wait for
    the dead node's keep-alive to expire (15 s) and then for its last call (30 s): 45 s at
    least. Muster takes about 2 s here (bench/torchrun_failover_bench.py); 12 s leaves room
    for a loaded machine and still fails without it."""
    first, second = job.start_node(), job.start_node()
    job.wait_for(lambda: job.running(4, first, second))
    old = set(job.worker_pids(first))
    os.killpg(second.pid, signal.SIGKILL)
    second.wait()
    job.wait_for(lambda: len(set(job.worker_pids(first, 2)) - old) == 2, timeout=12)
    first.wait(120)
    assert first.returncode == 0
    assert sorted(job.done().values()) == [2, 2]


def test_a_killed_node_leaves_the_survivor_running_again_alone(job_factory):
    # The survivor's workers fail in their all_reduce with the dead node's: a restart.
    _kill_the_second_node_and_see_the_first_run_alone(
        job_factory("1:2", min_world=2, steps=60, pause=0.05, max_restarts=2))


def test_a_killed_node_restarts_the_survivor_whose_workers_did_not_notice(job_factory):
    # The workers make no collective call after they joined: nothing fails on the survivor, so
    # torch alone would let them run on in a world that lost half its ranks. Muster's news of
    # the dead node makes the survivor's agent start a new round (a change of membership, no
    # restart counted: --max_restarts=0).
    _kill_the_second_node_and_see_the_first_run_alone(
        job_factory("1:2", min_world=2, steps=100, pause=0.05, max_restarts=0, mode="quiet"))


def test_hang_watch_kills_only_its_own_child_whose_step_stood_still(tmp_path, monkeypatch):
    from muster import _hang_watch

    watch = _hang_watch.HangWatch(2.0, period=3600)  # checked by hand below
    try:
        assert os.environ[_hang_watch.PROGRESS_DIR_ENV] == watch.directory
        child = subprocess.Popen(["sleep", "60"])
        with open(os.path.join(watch.directory, "0"), "w") as f:
            f.write(f"{child.pid} 7\n")
        with open(os.path.join(watch.directory, "1"), "w") as f:
            f.write(f"{os.getppid()} 7\n")  # not a child of this process: never killed
        assert watch.check(100.0) == []
        assert watch.check(101.0) == []
        assert watch.check(102.5) == [("0", child.pid, 7)]
        assert child.wait(timeout=10) == -signal.SIGKILL
        assert sorted(os.listdir(watch.directory)) == []
        # A worker's own reports: the file holds its pid and step; done=True ends the watch.
        monkeypatch.setenv("LOCAL_RANK", "3")
        _hang_watch.report_progress(5)
        assert open(os.path.join(watch.directory, "3")).read() == f"{os.getpid()} 5\n"
        _hang_watch.report_progress(6, done=True)
        assert not os.path.exists(os.path.join(watch.directory, "3"))
    finally:
        watch.close()
    assert _hang_watch.PROGRESS_DIR_ENV not in os.environ
    _hang_watch.report_progress(1)  # no watch: nothing, no error


def test_a_hung_worker_is_stopped_by_its_node_and_the_job_starts_again(job_factory):
    # The last rank stops stepping (asleep); the other three wait for it inside all_reduce,
    # where gloo would keep them for 30 minutes. Its node sees its step stand still for the
    # hang timeout and kills it; its agent restarts the node's workers, and the other node's
    # workers fail in their all_reduce with the dead rank or are restarted in the new round
    # Muster tells it of. Each rank then finishes once, in a world of 4.
    job = job_factory("2", min_world=4, steps=20, pause=0.05, max_restarts=1,
                      rdzv_conf="hang_timeout=3", mode="hang")
    first, second = job.start_node(), job.start_node()
    job.wait_for(lambda: job.running(4, first, second))
    started = time.monotonic()
    assert job.finish(timeout=90) == [0, 0]
    assert time.monotonic() - started < 60
    done = job.done()
    assert sorted(done.values()) == [4] * 4
    assert sorted(name.split("-")[1] for name in done) == ["0", "1", "2", "3"]
    assert os.path.exists(os.path.join(job.out, "hung"))
    output = "".join(node.stdout.read() for node in (first, second))
    assert "made no progress for" in output and "(hang_timeout 3 s)" in output, output


def test_a_node_that_joins_later_enters_the_next_round(job_factory):
    # The first round keeps torch's last call (here 2 s instead of 30) for nodes still
    # starting: the second node joins within it.
    job = job_factory("1:3", min_world=6, steps=5, pause=0.05, max_restarts=0,
                      rdzv_conf="last_call_timeout=2")
    first, second = job.start_node(), job.start_node()
    job.wait_for(lambda: job.running(4, first, second))
    job.start_node()  # the first two keep stepping in a world of 4 until it joins
    assert job.finish() == [0, 0, 0]
    assert sorted(job.done().values()) == [6] * 6


def test_the_example_job_runs_under_muster_torchrun(tmp_path):
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "torch_train.py")
    done = subprocess.run(
        [PYTHON, "-m", "muster.torchrun", "--nnodes=1", "--nproc_per_node=2",
         "--rdzv_backend=muster", f"--rdzv_endpoint=127.0.0.1:{_free_port()}",
         "--rdzv_id=example", example, "--steps", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert done.returncode == 0, done.stdout
    assert "trained 2 ranks for 5 steps" in done.stdout
