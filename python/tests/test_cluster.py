"""Where a process runs: muster.cluster_placement(), Agent.from_environment() and muster://
under launchers other than muster run (Slurm's srun, MPI, Kubernetes), from fake environments
and, for srun, from a fake srun starting real ranks."""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

import muster

MUSTER_CLI = os.environ.get("MUSTER_CLI", os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "tools", "muster"))
FAKE_SRUN = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "cli", "programs",
                         "fake_srun.py")
# Every variable a source reads, by prefix or name: each test starts from none of them.
DETECTED_PREFIXES = ("MUSTER_", "SLURM_", "OMPI_", "PMIX_", "PMI_", "MPI_LOCAL", "JOB_",
                     "JOBSET_", "TORCHELASTIC_", "GROUP_")
DETECTED_NAMES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                  "MASTER_PORT", "REPLICATED_JOB_NAME")


def detected(name: str) -> bool:
    return name.startswith(DETECTED_PREFIXES) or name in DETECTED_NAMES


def clean_environ() -> dict:
    """This process's environment without the variables a source reads: for a child."""
    return {k: v for k, v in os.environ.items() if not detected(k)}


@pytest.fixture
def clean_env(monkeypatch):
    for name in [n for n in os.environ if detected(n)]:
        monkeypatch.delenv(name)
    return monkeypatch


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_no_launcher_none_and_from_environment_says_what_to_do(clean_env):
    assert muster.cluster_placement() is None
    with pytest.raises(muster.InvalidArgumentError, match="no launcher found"):
        muster.Agent.from_environment()


def test_slurm_task_from_environment_joins_the_leader_on_the_steps_first_node(clean_env, capfd):
    with muster.Leader({"worker": 2}, port=0) as leader:
        clean_env.setenv("SLURM_PROCID", "1")
        clean_env.setenv("SLURM_STEP_NUM_TASKS", "2")
        clean_env.setenv("SLURM_STEP_NODELIST", "127.0.0.1")
        clean_env.setenv("MUSTER_PORT", str(leader.port))
        placement = muster.cluster_placement()
        assert (placement["source"], placement["task"], placement["num_tasks"]) == ("Slurm", 1, 2)
        assert placement["leader"] == f"127.0.0.1:{leader.port}"
        agent = muster.Agent.from_environment(heartbeat_timeout=5)
        try:
            agent.connect()
            assert agent.get_task_state([("worker", 1)])[0]["state"] == "TASKSTATE_CONNECTED"
        finally:
            agent.close()
    err = capfd.readouterr().err
    assert (f"muster: Slurm (SLURM_PROCID=1 SLURM_STEP_NUM_TASKS=2 SLURM_STEP_NODELIST=127.0.0.1 "
            f"MUSTER_PORT={leader.port}): /job:worker/task:1 of 2, leader 127.0.0.1:"
            f"{leader.port}\n") in err


def test_sources_of_one_launch_that_disagree_an_error_naming_both(clean_env):
    clean_env.setenv("OMPI_COMM_WORLD_RANK", "1")
    clean_env.setenv("OMPI_COMM_WORLD_SIZE", "2")
    clean_env.setenv("PMIX_RANK", "0")
    clean_env.setenv("MASTER_ADDR", "127.0.0.1")
    with pytest.raises(muster.InvalidArgumentError) as caught:
        muster.Agent.from_environment()
    message = str(caught.value)
    assert "Open MPI and PMIx disagree on this process's rank" in message
    assert "OMPI_COMM_WORLD_RANK=1" in message and "PMIX_RANK=0" in message


def test_kubernetes_with_muster_leader_needs_only_the_size(clean_env):
    clean_env.setenv("JOB_COMPLETION_INDEX", "0")
    clean_env.setenv("MUSTER_LEADER", "trainer-0.trainer:7400")  # any host name will do then
    with pytest.raises(muster.InvalidArgumentError, match="set MUSTER_WORLD_SIZE"):
        muster.cluster_placement()
    clean_env.setenv("MUSTER_WORLD_SIZE", "2")
    placement = muster.cluster_placement()
    assert (placement["source"], placement["task"], placement["num_tasks"]) == (
        "Kubernetes", 0, 2)
    assert placement["leader"] == "trainer-0.trainer:7400"


RANK_PROGRAM = """
import torch, torch.distributed as dist
import muster.torch
dist.init_process_group("gloo", init_method="muster://")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([rank + 1])
dist.all_reduce(t)
print(f"RANK {rank} WORLD {world} SUM {int(t.item())}", flush=True)
dist.destroy_process_group()
"""


def test_muster_url_without_parameters_under_srun_forms_the_group():
    env = clean_environ()
    env["MUSTER_PORT"] = str(free_port())
    done = subprocess.run(
        [sys.executable, FAKE_SRUN, "2", "127.0.0.1", "--", sys.executable, "-c", RANK_PROGRAM],
        env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "RANK 0 WORLD 2 SUM 3" in done.stdout and "RANK 1 WORLD 2 SUM 3" in done.stdout
    for rank in (0, 1):
        assert (f"): /job:worker/task:{rank} of 2, local 0 of 1, node {rank} of 2, leader "
                f"127.0.0.1:{env['MUSTER_PORT']}") in done.stderr, done.stderr


def test_muster_url_under_srun_with_only_world_size_exported_fills_the_rank():
    env = clean_environ()
    env.update(MUSTER_PORT=str(free_port()), WORLD_SIZE="1")
    done = subprocess.run(
        [sys.executable, FAKE_SRUN, "1", "127.0.0.1", "--", sys.executable, "-c", RANK_PROGRAM],
        env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "RANK 0 WORLD 1 SUM 1" in done.stdout


def test_muster_url_rank_contradicting_slurm_an_error_naming_both(clean_env):
    import muster.torch
    clean_env.setenv("SLURM_PROCID", "1")
    clean_env.setenv("SLURM_STEP_NUM_TASKS", "2")
    clean_env.setenv("SLURM_STEP_NODELIST", "127.0.0.1")
    clean_env.setenv("RANK", "0")
    with pytest.raises(ValueError, match=r"rank 0 disagrees with Slurm \(SLURM_PROCID=1 "):
        next(muster.torch._rendezvous_handler("muster://"))
    clean_env.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match="Slurm and RANK and WORLD_SIZE disagree on this "
                                         "process's rank: SLURM_PROCID=1 but RANK=0"):
        next(muster.torch._rendezvous_handler("muster://"))


SPARE_PROGRAM = """
import os, muster
if "MUSTER_SPARE" in os.environ:
    print(f"SPARE {os.getpid()}", flush=True)
agent = muster.Agent.from_environment(heartbeat_timeout=2)
agent.connect()
task, gen = int(os.environ["MUSTER_TASK"]), int(os.environ["MUSTER_GENERATION"])
print(f"READY task={task} generation={gen} pid={os.getpid()} rank={os.environ['RANK']}",
      flush=True)
if gen > 0:
    agent.insert_key_value("go", "1", allow_overwrite=True)
agent.get_key_value("go")
agent.wait_at_barrier("done", 30)
agent.shutdown()
print(f"DONE task={task} generation={gen}", flush=True)
"""


def _read_until(process, lines, needle, deadline):
    """The first line of the output so far (`lines`, read on as needed) containing `needle`.
    Every task waits for the key "go" that only a restarted task writes, so the output stops
    until the test kills one: read no further than what is needed (the deadline bounds it)."""
    while True:
        for line in lines:
            if needle in line:
                return line
        if time.monotonic() > deadline:
            raise AssertionError(f"no {needle!r} in:\n{''.join(lines)}")
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"no {needle!r} before the end:\n{''.join(lines)}")
        lines.append(line)


def test_spare_takes_a_killed_tasks_place_under_muster_run():
    env = clean_environ()
    process = subprocess.Popen(
        [MUSTER_CLI, "run", "--port=0", "--job=worker=2", "--restart=one-for-one", "--spares=1",
         "--heartbeat-timeout=2s", "--stop-timeout=3s", "--", sys.executable, "-c",
         SPARE_PROGRAM], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        deadline = time.monotonic() + 60
        spare_pid = int(_read_until(process, lines, "SPARE ", deadline).split()[-1])
        line = _read_until(process, lines, "READY task=1 generation=0", deadline)
        os.kill(int(line.split("pid=")[1].split()[0]), signal.SIGKILL)
        line = _read_until(process, lines, "READY task=1 generation=1", deadline)
        assert f"pid={spare_pid} rank=1" in line, line
        # The rest through the same buffered reader (communicate() would skip what it holds).
        lines.extend(process.stdout)
        process.wait(timeout=60)
        output = "".join(lines)
        assert process.returncode == 0, output
        assert f"started /job:worker/task:1 (pid {spare_pid}, generation 1) from spare/0" in output
        assert "DONE task=1 generation=1" in output and "DONE task=0 generation=0" in output
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
