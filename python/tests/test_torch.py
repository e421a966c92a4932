"""PyTorch through Muster: muster.torch.Store passes PyTorch's own Python-store check and keeps
TCPStore's semantics; 4 processes run gloo through muster://, and when one rank is killed or
hangs the others end (non-zero) within seconds, naming it, instead of hanging in a collective."""

import datetime
import os
import signal
import socket
import subprocess
import threading
import time

import pytest
import torch.distributed as dist

import muster
import muster.torch

PYTHON = "/usr/bin/python3"
RANK = os.path.join(os.path.dirname(__file__), "torch_rank.py")


# Both stores keep the same semantics: muster.torch.Store (Python) and native_store (C++, what
# the muster:// rendezvous gives c10d).
STORES = {"python": muster.torch.Store, "native": muster.torch.native_store}


@pytest.fixture(params=sorted(STORES))
def make_store(request):
    return STORES[request.param]


def test_pytorchs_own_store_check_passes(make_store):
    with muster.Leader({"worker": 1}) as leader, muster.Agent(leader.address, "worker", 0) as a:
        dist._test_python_store(make_store(a, datetime.timedelta(seconds=5)))


def test_store_semantics_as_tcpstore(make_store):
    with muster.Leader({"worker": 1}) as leader, muster.Agent(leader.address, "worker", 0) as a:
        store = make_store(a, datetime.timedelta(seconds=1))
        store.set("path/like//key", "v")
        assert store.get("path/like//key") == b"v"
        assert store.add("n", 3) == 3 and store.add("n", 4) == 7 and store.get("n") == b"7"
        assert store.compare_set("c", "", "first") == b"first"   # missing + "": set
        assert store.compare_set("c", "wrong", "x") == b"first"  # mismatch: current
        assert store.compare_set("c", "first", "second") == b"second"
        assert store.compare_set("absent", "e", "d") == b"e"     # missing: expected
        assert store.check(["c"]) and not store.check(["c", "absent"])
        assert store.delete_key("c") and not store.delete_key("c")
        store.set("a", "1")
        store.set("b", b"2")
        assert store.num_keys() == 4
        with pytest.raises(muster.torch.StoreTimeoutError, match="timeout.*'never'"):
            store.get("never")
        with pytest.raises(RuntimeError, match="timeout"):
            store.wait(["a", "never"], datetime.timedelta(milliseconds=200))
        store.wait(["a", "b"], datetime.timedelta(milliseconds=200))
        store.set_timeout(datetime.timedelta(milliseconds=100))
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="timeout"):
            store.get("never")
        assert time.monotonic() - start < 2
        with pytest.raises(muster.FailedPreconditionError, match="holds \"v\", which is not a 64-bit"):
            store.add("path/like//key", 1)  # holds "v"


def test_python_store_multi_calls():
    with muster.Leader({"worker": 1}) as leader, muster.Agent(leader.address, "worker", 0) as a:
        store = muster.torch.Store(a, datetime.timedelta(seconds=1))
        store.multi_set(["a", "b"], ["1", b"2"])
        assert store.multi_get(["a", "b"]) == [b"1", b"2"]


def test_native_and_python_stores_share_keys_and_the_native_fails_once_its_agent_closed():
    with muster.Leader({"worker": 1}) as leader, muster.Agent(leader.address, "worker", 0) as a:
        native = muster.torch.native_store(a, 1, prefix="/jobs/x/")
        python = muster.torch.Store(a, 1, prefix="jobs/x")
        keys = ["", "a b", "slash/ed", "ünï", "%41", "~_.-"]
        for i, key in enumerate(keys):
            native.set(key, str(i))
        assert [python.get(key) for key in keys] == [str(i).encode() for i in range(len(keys))]
        assert a.get_key_value("jobs/x/a%20b") == b"1"
        assert a.get_key_value("jobs/x/%") == b"0"
        assert native.num_keys() == len(keys)
        a.close()
        with pytest.raises(muster.FailedPreconditionError, match="closed"):
            native.get("a b")


def test_native_store_waits_without_the_gil_and_its_agents_close_ends_the_wait():
    """A get without a limit (timeout 0) blocks its own thread only: Python runs on meanwhile;
    the agent's close() ends it. A capsule that is not an agent's handle is
    refused."""
    with muster.Leader({"worker": 1}) as leader, muster.Agent(leader.address, "worker", 0) as a:
        store = muster.torch.native_store(a, datetime.timedelta(0))
        ended = []

        def waiter():
            try:
                store.get("never")
            except BaseException as e:  # noqa: B902: what the test looks at
                ended.append(e)

        thread = threading.Thread(target=waiter)
        thread.start()
        spins, until = 0, time.monotonic() + 0.5
        while time.monotonic() < until:  # holds the GIL whenever the waiter does not
            spins += 1
        assert spins > 1000 and thread.is_alive() and not ended
        a.close()
        thread.join(10)
        assert not thread.is_alive()
        # As the agent's own waiting get ends (and muster.torch.Store's): through the agent actor.
        assert isinstance(ended[0], muster.UnavailableError), ended
        assert "stopped before answering" in str(ended[0])
    with pytest.raises(TypeError, match="_store_handle"):
        muster._muster_torch.NativeStore(muster._muster._store_api, datetime.timedelta(1), "p")


# A rank whose main thread waits in the native store, through c10d's PrefixStore (as gloo's
# bootstrap waits for a rank that never comes), and gets Ctrl-C.
INTERRUPTED_RANK = r"""
import datetime, sys, time
import torch.distributed as dist
import muster, muster.torch
leader = muster.Leader({"worker": 1})
agent = muster.Agent(leader.address, "worker", 0, direct_calls=sys.argv[1] == "direct")
agent.connect()
store = muster.torch.native_store(agent, datetime.timedelta(0))  # no limit
prefixed = dist.PrefixStore("default_pg", store)
print("waiting", flush=True)
start = time.monotonic()
try:
    prefixed.get("never")
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - start:.1f} s", flush=True)
print("then", store.add("n", 2), flush=True)
"""


@pytest.mark.parametrize("path", ["direct", "actor"])
def test_native_store_wait_on_the_main_thread_ends_at_ctrl_c(path):
    rank = subprocess.Popen([PYTHON, "-c", INTERRUPTED_RANK, path], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert rank.stdout.readline().strip() == "waiting"
        time.sleep(0.3)
        rank.send_signal(signal.SIGINT)
        out, err = rank.communicate(timeout=10)
    finally:
        rank.kill()
    assert rank.returncode == 0, out + err
    lines = out.splitlines()
    assert lines[0].startswith("interrupted after "), out + err
    assert float(lines[0].split()[2]) < 2.0
    assert lines[1] == "then 2", out + err  # the agent serves on


def test_store_through_a_prefix_store_as_c10d_wraps_it(make_store):
    """c10d wraps every store in a C++ PrefixStore: its timeout reaches get and wait, and
    num_keys and delete_key reach this store (c10d looks them up by their C++ names)."""
    with muster.Leader({"worker": 1}) as leader, muster.Agent(leader.address, "worker", 0) as a:
        store = make_store(a, datetime.timedelta(seconds=30))
        prefixed = dist.PrefixStore("default_pg", store)
        prefixed.set("k", "v")
        assert prefixed.num_keys() == 1
        assert prefixed.delete_key("k") and not prefixed.delete_key("k")
        prefixed.set_timeout(datetime.timedelta(milliseconds=100))
        start = time.monotonic()
        with pytest.raises(RuntimeError, match="timeout"):
            prefixed.get("never")
        assert time.monotonic() - start < 5  # the PrefixStore's 0.1 s, not the store's 30 s


def test_store_edge_cases_as_tcpstore(make_store):
    """The empty key is a key like any other; compare_set with an empty expected value swaps a
    key that holds b""; a timeout over the leader's longest wait (a year) waits without one."""
    with muster.Leader({"worker": 1}) as leader, muster.Agent(leader.address, "worker", 0) as a:
        store = make_store(a, datetime.timedelta(seconds=1))
        store.set("other", "x")
        store.set("", "empty key")
        assert store.get("") == b"empty key"
        assert store.num_keys() == 2
        assert store.delete_key("")
        assert store.get("other") == b"x"  # the empty key is not the store's directory
        assert store.num_keys() == 1
        store.set("blank", b"")
        assert store.compare_set("blank", "", "filled") == b"filled"
        assert store.compare_set("blank", "", "again") == b"filled"
        store.set_timeout(datetime.timedelta(days=9999))
        store.set("late", "ok")
        assert store.get("late") == b"ok"  # not InvalidArgument for the timeout


def test_multi_key_calls_in_a_callback_do_not_wait_for_their_own_thread():
    """A callback runs on the thread that completes futures: the multi-key calls it makes are
    made one after the other there instead of waiting for futures that thread would complete."""
    with muster.Leader({"worker": 1}) as leader, muster.Agent(leader.address, "worker", 0) as a:
        store = muster.torch.Store(a, datetime.timedelta(seconds=5))
        store.multi_set(["a", "b"], ["1", "2"])
        results = []
        done = threading.Event()

        def callback(_future):
            try:
                results.append(store.check(["a", "b"]))
                results.append(store.multi_get(["a", "b"]))
                store.wait(["a", "b"])
                store.multi_set(["c", "d"], ["3", "4"])
                results.append(store.check(["c", "d", "missing"]))
            finally:
                done.set()

        # Completed once "trigger" is set, after the callback is added: on the callbacks' thread.
        a.get_key_value_async("torch/store/trigger", 10).add_done_callback(callback)
        store.set("trigger", "go")
        assert done.wait(10), "the callback's store calls never returned"
        assert results == [True, [b"1", b"2"], False]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Ranks:
    """world_size rank processes; their output is collected line by line."""

    def __init__(self, url, roles, delay_rank0=0.0, split_stderr=False):
        self.procs = {}
        self.lines = {r: [] for r in range(len(roles))}
        self.err_lines = {r: [] for r in range(len(roles))}
        self.readers = []
        self.ready = {r: threading.Event() for r in range(len(roles))}
        order = sorted(range(len(roles)), key=lambda r: r == 0)  # rank 0 last
        for rank in order:
            if rank == 0 and delay_rank0:
                time.sleep(delay_rank0)
            proc = subprocess.Popen([PYTHON, RANK, url, str(rank), str(len(roles)), roles[rank]],
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE if split_stderr else subprocess.STDOUT,
                                    text=True)
            self.procs[rank] = proc
            self._start(self._read, rank, proc)
            if split_stderr:
                self._start(self._read_stderr, rank, proc)

    def _start(self, target, rank, proc):
        reader = threading.Thread(target=target, args=(rank, proc), daemon=True)
        reader.start()
        self.readers.append((rank, reader))

    def _read(self, rank, proc):
        for line in proc.stdout:
            self.lines[rank].append(line.rstrip())
            if "ready" in line:
                self.ready[rank].set()

    def _read_stderr(self, rank, proc):
        for line in proc.stderr:
            self.err_lines[rank].append(line.rstrip())

    def output(self, rank):
        return "\n".join(self.lines[rank])

    def stderr(self, rank):
        """The rank's whole stderr (with split_stderr), once the process has exited."""
        for r, reader in self.readers:
            if r == rank:
                reader.join(timeout=10)
        return "\n".join(self.err_lines[rank])

    def wait(self, rank, timeout):
        return self.procs[rank].wait(timeout=timeout)

    def kill_all(self):
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()


HOST_NAME_RANK = """
import datetime, socket, sys
import torch.distributed as dist
import muster.torch
port, host = int(sys.argv[1]), socket.gethostname()
# Rank 0's rendezvous fails after its leader started (a reconnect timeout its agent refuses):
# the leader stops, the port is free again.
try:
    next(dist.rendezvous(f"muster://{host}:{port}?rank=0&world_size=1&leader_reconnect_timeout=-1"))
except ValueError as e:
    kept = e  # with its traceback, which holds the rendezvous's frames
    print("refused", flush=True)
probe = socket.socket()
probe.bind(("0.0.0.0", port))
probe.close()
print("port free", flush=True)
store, rank, world_size = next(dist.rendezvous(f"muster://{host}:{port}?rank=0&world_size=1",
                                               timeout=datetime.timedelta(seconds=30)))
print("prefix", store.prefix, flush=True)
# Given a host name, rank 0 listens on every interface: loopback reaches it too.
socket.create_connection(("127.0.0.1", port), timeout=5).close()
print("loopback reaches it", flush=True)
"""


def test_rank_0_given_a_host_name_listens_everywhere_and_a_failed_rendezvous_frees_its_port():
    port = free_port()
    done = subprocess.run([PYTHON, "-c", HOST_NAME_RANK, str(port)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["refused", "port free", "prefix torch/store/worker/",
                                        "loopback reaches it"], done.stdout + done.stderr


@pytest.mark.parametrize("made,said", [(2, 3), (3, 2)])
def test_a_rank_whose_world_size_disagrees_with_rank_0s_fails_at_once_naming_both(made, said):
    port = free_port()
    url = f"muster://127.0.0.1:{port}"
    # Rank 0 alone, of `made`: its leader serves while it waits for the others.
    rank0 = subprocess.Popen([PYTHON, RANK, url, "0", str(made), "victim"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        wrong = subprocess.run(
            [PYTHON, "-c", "import sys, datetime, torch.distributed as dist, muster.torch\n"
             "next(dist.rendezvous(sys.argv[1] + f'?rank=1&world_size={sys.argv[2]}',"
             " timeout=datetime.timedelta(seconds=60)))", url, str(said)],
            capture_output=True, text=True, timeout=60)
        assert wrong.returncode != 0
        assert f"world_size {said} disagrees with rank 0's, {made}" in wrong.stderr, wrong.stderr
        # Rank 0 does not wait for its timeout: the job ends, naming the rank and what it said
        # (the rank's report leaves before the rank ends).
        assert rank0.wait(timeout=30) != 0
        told = rank0.stdout.read()
        assert "/job:worker/task:1 (rank 1) failed: INVALID_ARGUMENT" in told, told
        assert f"world_size {said} disagrees" in told, told
    finally:
        rank0.kill()
        rank0.wait()


ONE_RANK = """
import sys
import torch.distributed as dist
import muster.torch
url, where = sys.argv[1], sys.argv[2]
in_url = url + "?rank=0&world_size=1"
if where == "url":
    dist.init_process_group("gloo", init_method=in_url)
elif where == "arguments":
    dist.init_process_group("gloo", init_method=url, rank=0, world_size=1)
else:
    dist.init_process_group("gloo", init_method=in_url, rank=0, world_size=1)
dist.barrier()
dist.destroy_process_group()
print("joined", flush=True)
"""


@pytest.mark.parametrize("where", ["url", "arguments", "both"])
def test_rank_and_world_size_in_the_url_or_as_arguments_never_both(where):
    """docs/python.md, "PyTorch": either place works; torch refuses both."""
    url = f"muster://127.0.0.1:{free_port()}"
    done = subprocess.run([PYTHON, "-c", ONE_RANK, url, where], capture_output=True, text=True,
                          timeout=120)
    if where == "both":
        assert done.returncode != 0
        assert "AssertionError" in done.stderr
        assert "has node-specific arguments(rank, world_size) already" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert done.stdout == "joined\n"


def test_a_list_of_leaders_is_an_ha_job_whose_leaders_run_on_their_own(monkeypatch):
    """docs/python.md, "An HA job's leaders"; python/tests/test_torch_ha.py runs one."""
    handler = muster.torch._rendezvous_handler
    with pytest.raises(ValueError, match="is not HOST:PORT or HOST:PORT,HOST:PORT"):
        next(handler("muster://127.0.0.1:1,nohost?rank=0&world_size=1"))
    with pytest.raises(ValueError, match="external_leader=0 cannot host one"):
        next(handler("muster://127.0.0.1:1,127.0.0.1:2?rank=0&world_size=1&external_leader=0"))
    # muster run --leader etcd://... gives its tasks the URL: an HA job's leaders too.
    monkeypatch.setenv("MUSTER_LEADER", "etcd://127.0.0.1:1/job")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "1")
    with pytest.raises(ValueError, match="external_leader=0 cannot host one"):
        next(handler("muster://?rank=0&world_size=1&external_leader=0"))
    # Without MASTER_ADDR and MASTER_PORT too: an HA job's leaders need no address of rank 0's.
    monkeypatch.delenv("MASTER_ADDR")
    monkeypatch.delenv("MASTER_PORT")
    with pytest.raises(ValueError, match="external_leader=0 cannot host one"):
        next(handler("muster://?rank=0&world_size=1&external_leader=0"))


def test_four_ranks_all_reduce_and_leave_cleanly_with_a_late_leader():
    url = f"muster://127.0.0.1:{free_port()}"
    ranks = Ranks(url, ["ok"] * 4, delay_rank0=1.0)  # ranks 1-3 wait for rank 0's leader
    try:
        for rank in range(4):
            assert ranks.wait(rank, 120) == 0, ranks.output(rank)
            assert f"rank {rank} all_reduce ok" in ranks.output(rank)
    finally:
        ranks.kill_all()


@pytest.mark.parametrize("how", ["kill", "stop", "crash"])
def test_a_dead_or_hung_rank_ends_the_others_naming_it(how):
    url = f"muster://127.0.0.1:{free_port()}?heartbeat_timeout=2"
    roles = ["blocked", "blocked", "crash" if how == "crash" else "victim", "blocked"]
    ranks = Ranks(url, roles)
    try:
        for rank in range(4):
            assert ranks.ready[rank].wait(120), ranks.output(rank)
        time.sleep(0.5)  # the others are inside the all_reduce by now
        victim = ranks.procs[2]
        start = time.monotonic()
        if how != "crash":
            victim.send_signal(signal.SIGKILL if how == "kill" else signal.SIGSTOP)
        # kill: at once; stop: heartbeat timeout + 2 s; crash: its 1 s (less the 0.5) + 2 s;
        # each with 2 s for three processes to print and exit on a loaded machine (gloo alone
        # would wait its 30 minutes)
        bound = {"kill": 2.0, "stop": 2.0 + 2.0, "crash": 0.5 + 2.0}[how] + 2.0
        for rank in (0, 1, 3):
            code = ranks.wait(rank, 60)
            elapsed = time.monotonic() - start
            out = ranks.output(rank)
            print(f"{how}: rank {rank} exited {code} after {elapsed:.2f} s")
            assert code != 0, out
            assert "all_reduce returned" not in out
            assert "rank 2" in out, out
            assert elapsed < bound, out
    finally:
        if how == "stop":
            ranks.procs[2].send_signal(signal.SIGCONT)
        ranks.kill_all()


def test_a_rank_killed_during_all_reduce_loop_ends_the_others_with_one_line_each():
    # The survivors are inside collectives when rank 2 dies, so gloo may fail them ("Connection
    # closed/reset by peer") before Muster's notice arrives; each must still end with the one
    # line naming rank 2, never a traceback (rank 0, which hosts the leader, included).
    url = f"muster://127.0.0.1:{free_port()}"
    ranks = Ranks(url, ["loop"] * 4, split_stderr=True)
    try:
        for rank in range(4):
            assert ranks.ready[rank].wait(120), ranks.output(rank)
        time.sleep(0.3)  # more steps: every rank is in or between all_reduce calls
        ranks.procs[2].send_signal(signal.SIGKILL)
        for rank in (0, 1, 3):
            code = ranks.wait(rank, 60)
            err = ranks.stderr(rank)
            lines = [line for line in err.splitlines() if line.strip()]
            assert code == 1, err
            assert "Traceback" not in err, err
            assert len(lines) == 1, err
            assert lines[0].startswith(
                f"muster.torch: rank {rank}: /job:worker/task:2 (rank 2) failed: UNAVAILABLE: "), err
            assert lines[0].endswith("; ending this process (exit code 1)"), err
            assert ".;" not in lines[0], err
    finally:
        ranks.kill_all()
