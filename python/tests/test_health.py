"""Job health from Python against real leaders: key-value reductions and all-gathers, ephemeral
keys, barrier progress, the preemption protocol (threads in this process, and a SIGTERM to
another process), and stuck tasks as muster.StuckTaskError."""

import datetime
import logging
import os
import signal
import subprocess
import threading
import time

import pytest

import muster
from muster import _errors

PYTHON = "/usr/bin/python3"
WAIT = 10  # seconds: the bound of every wait for an event that must happen


@pytest.fixture
def three():
    """A leader of three workers, and their agents (connected)."""
    with muster.Leader({"worker": 3}, heartbeat_timeout=10) as leader:
        notices = [[] for _ in range(3)]
        noticed = [threading.Event() for _ in range(3)]

        def on_preemption(i):
            def record(notice):
                notices[i].append(notice)
                noticed[i].set()
            return record

        made = [muster.Agent(leader.address, "worker", i, rpc_timeout=10,
                             on_preemption=on_preemption(i)) for i in range(3)]
        futures = [a.connect_async() for a in made]
        for future in futures:
            future.result(timeout=WAIT)
        yield made, notices, noticed
        for agent in made:
            agent.close()


# Key-value reductions and all-gathers ------------------------------------------------------

def test_reduce_key_value_dir(agents):
    a, b = agents
    a.insert_key_value("steps/0", "5")
    a.insert_key_value("steps/1", "12")
    b.insert_key_value("steps/sub/2", "-3")  # keys under subdirectories count too
    assert a.reduce_key_value_dir("steps", "max") == 12
    assert b.reduce_key_value_dir("steps", "min") == -3
    assert a.reduce_key_value_dir("steps", "SUM") == 14
    assert b.reduce_key_value_dir_async("steps/", "sum").result(timeout=WAIT) == 14

    with pytest.raises(muster.NotFoundError, match="no keys"):
        a.reduce_key_value_dir("nothing", "max")
    with pytest.raises(muster.InvalidArgumentError, match="root"):
        a.reduce_key_value_dir("/", "sum")
    with pytest.raises(muster.InvalidArgumentError, match="unknown reduce op \"avg\""):
        a.reduce_key_value_dir("steps", "avg")
    a.insert_key_value("steps/bad", "twelve")
    with pytest.raises(muster.FailedPreconditionError, match="steps/bad"):
        a.reduce_key_value_dir("steps", "max")
    with pytest.raises(muster.NotFoundError):
        a.reduce_key_value_dir_async("nothing", "min").result(timeout=WAIT)


def test_wait_for_keys_is_an_all_gather(agents):
    a, b = agents
    pending = b.wait_for_keys_async("gather", 2, timeout=WAIT)
    a.insert_key_value("gather/a", "10.0.0.1")
    assert not pending.done()  # one of two keys: still waiting
    b.insert_key_value("gather/b", b"\x00\x01")
    expected = [("gather/a", b"10.0.0.1"), ("gather/b", b"\x00\x01")]
    assert pending.result(timeout=WAIT) == expected
    assert a.wait_for_keys("gather", 2) == expected  # already there: at once
    assert a.wait_for_keys("gather", 1, timeout=datetime.timedelta(seconds=5)) == expected

    start = time.monotonic()
    with pytest.raises(muster.DeadlineExceededError) as late:
        a.wait_for_keys("gather", 3, timeout=0.3)
    assert 0.25 <= time.monotonic() - start < 5
    assert "2" in late.value.message and not isinstance(late.value, muster.StuckTaskError)
    with pytest.raises(muster.InvalidArgumentError, match="root"):
        a.wait_for_keys("", 1, timeout=1)
    with pytest.raises(muster.InvalidArgumentError, match="asks for 0 keys"):
        a.wait_for_keys("gather", 0, timeout=1)
    with pytest.raises(ValueError, match="timeout"):
        a.wait_for_keys("gather", 1, timeout=-1)


# Ephemeral keys ------------------------------------------------------------------------------

def test_ephemeral_keys_end_with_their_agent(agents):
    a, b = agents
    with pytest.raises(muster.FailedPreconditionError, match="not connected"):
        a.insert_key_value("members/a", "up", ephemeral=True)
    a.connect()
    b.connect()
    a.insert_key_value("members/a", "up", ephemeral=True)
    a.update_key_value("members/a", "still up", ephemeral=True)
    assert a.compare_and_swap("members/lock", None, "a", ephemeral=True) == (True, b"a")
    a.insert_key_value_async("members/a-async", "up", ephemeral=True).result(timeout=WAIT)
    a.insert_key_value("members/a-persistent", "kept")
    assert b.try_get_key_value("members/a") == b"still up"

    deleted = []
    all_deleted = threading.Event()

    def on_change(kind, key, value, revision):
        if kind == "DELETED":
            deleted.append(key)
            if len(deleted) == 3:
                all_deleted.set()

    b.start_watch_key("members", on_change)
    a.shutdown()
    assert all_deleted.wait(WAIT), deleted
    assert sorted(deleted) == ["members/a", "members/a-async", "members/lock"]
    for key in deleted:
        with pytest.raises(muster.NotFoundError):
            b.try_get_key_value(key)
    assert b.try_get_key_value("members/a-persistent") == b"kept"
    b.stop_watch_key("members")


# Barrier progress ----------------------------------------------------------------------------

def test_barrier_progress_while_one_task_waits(agents):
    a, b = agents
    a.connect()
    b.connect()
    with pytest.raises(muster.NotFoundError, match="no open instance"):
        a.get_barrier_progress("phase")
    with pytest.raises(muster.InvalidArgumentError):
        a.get_barrier_progress("")

    reports = []
    reported = threading.Event()

    def on_progress(info):
        reports.append(info)
        reported.set()

    waiting = a.wait_at_barrier_async("phase", 30, progress_every=0.05, on_progress=on_progress)
    assert reported.wait(WAIT)
    info = b.get_barrier_progress("phase")
    assert info["barrier_id"] == "phase"
    assert (info["arrived"], info["total"]) == (1, 2)
    assert info["waiting_for"] == ["/job:worker/task:1"]
    assert info["first_task"] == "/job:worker/task:0"
    assert info["counter"] == 0
    assert 0 <= info["waited_ms"] < 30_000 and 0 < info["deadline_in_ms"] <= 30_000
    assert reports[0]["waiting_for"] == ["/job:worker/task:1"]
    assert reports[0]["arrived"] == 1
    text = muster.barrier_progress_text(info)
    assert text.startswith("barrier phase: 1/2 arrived after ") and text.endswith(
        "; missing worker/1"), text
    assert not waiting.done()

    b.wait_at_barrier("phase", 30)
    waiting.result(timeout=WAIT)
    with pytest.raises(muster.NotFoundError):
        a.get_barrier_progress_async("phase").result(timeout=WAIT)


def test_blocking_barrier_wait_reports_progress(agents):
    a, b = agents
    a.connect()
    b.connect()
    reported = threading.Event()
    reports = []

    def on_progress(info):
        reports.append(info)
        reported.set()

    outcome = []
    waiter = threading.Thread(target=lambda: outcome.append(a.wait_at_barrier(
        "blocking", 30, progress_every=datetime.timedelta(milliseconds=50),
        on_progress=on_progress)))
    waiter.start()
    assert reported.wait(WAIT)
    b.wait_at_barrier("blocking", 30)
    waiter.join(WAIT)
    assert outcome == [None]
    assert reports[0]["barrier_id"] == "blocking"
    assert reports[0]["waiting_for"] == ["/job:worker/task:1"]

    with pytest.raises(ValueError, match="progress_every"):
        a.wait_at_barrier("blocking", 1, progress_every=0, on_progress=on_progress)
    with pytest.raises(TypeError, match="on_progress"):
        a.wait_at_barrier("blocking", 1, on_progress="print")


def test_progress_every_alone_logs_the_progress_text(agents):
    a, b = agents
    a.connect()
    b.connect()
    logged = threading.Event()
    lines = []

    class Recorder(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())
            logged.set()

    logger = logging.getLogger("muster")
    recorder = Recorder(level=logging.INFO)
    old_level = logger.level
    logger.addHandler(recorder)
    logger.setLevel(logging.INFO)
    try:
        waiting = a.wait_at_barrier_async("logged", 30, progress_every=0.05)
        assert logged.wait(WAIT)
        b.wait_at_barrier("logged", 30)
        waiting.result(timeout=WAIT)
    finally:
        logger.removeHandler(recorder)
        logger.setLevel(old_level)
    assert lines[0].startswith("barrier logged: 1/2 arrived after "), lines
    assert lines[0].endswith("missing worker/1"), lines


# Preemption ----------------------------------------------------------------------------------

def test_preemption_stops_every_task_at_the_same_step(three):
    agents, notices, noticed = three
    for agent in agents:
        assert agent.reached_sync_point(0) is False  # no notice yet: cheap, False
    steps = [0, 0, 0]  # each task's last step the agent has recorded
    stopped = [None, None, None]
    notice_step = []
    first = []
    errors = []
    give_up = time.monotonic() + 60

    def train(i):
        try:
            agent, step = agents[i], 0
            while time.monotonic() < give_up:
                step += 1
                agent.report_progress(step)
                if agent.reached_sync_point(step):
                    stopped[i] = step
                    return
                steps[i] = step
                if i == 0 and step == 5:
                    notice_step.append(max(steps))  # no task reached a later step yet
                    first.append(agent.notify_preemption(
                        "maintenance", deadline=datetime.datetime(2100, 1, 1)))
        except BaseException as error:  # reported by the test's thread
            errors.append(error)

    threads = [threading.Thread(target=train, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 6)
    assert not errors, errors
    assert first == [True]
    assert None not in stopped, stopped
    assert stopped[0] == stopped[1] == stopped[2]
    assert stopped[0] >= notice_step[0] + 1

    # One notice per task, with what task 0 sent; a later notice starts nothing.
    assert agents[1].notify_preemption_async("again").result(timeout=WAIT) is False
    for i in range(3):
        assert noticed[i].wait(WAIT)
        assert len(notices[i]) == 1, notices[i]
        notice = notices[i][0]
        assert isinstance(notice, muster.PreemptionNotice)
        assert notice.notified_by == "/job:worker/task:0"
        assert notice.reason == "maintenance"
        assert notice.deadline == pytest.approx(datetime.datetime(2100, 1, 1).timestamp())
    # After the sync step: False for any other step, True again for the sync step.
    assert agents[2].reached_sync_point(stopped[2] + 1) is False
    assert agents[2].reached_sync_point(stopped[2]) is True


def test_notify_preemption_errors(leader):
    with muster.Agent(leader.address, "worker", 0) as agent:
        with pytest.raises(muster.FailedPreconditionError):
            agent.notify_preemption("not connected")
        agent.connect()
        with pytest.raises(muster.InvalidArgumentError, match="4096"):
            agent.notify_preemption("x" * 5000)
        with pytest.raises(ValueError, match="deadline"):
            agent.notify_preemption("past", deadline=-1.0)
        with pytest.raises(TypeError, match="on_preemption"):
            muster.Agent(leader.address, "worker", 1, on_preemption=42)


SIGTERMED_TASK = r"""
import sys, muster
agent = muster.Agent(sys.argv[1], "worker", 1, heartbeat_timeout=10)
agent.connect()
restore = muster.notify_preemption_on_signal(agent, grace=30.0)
print("ready", flush=True)
step = 0
while True:
    step += 1
    if agent.reached_sync_point(step):
        break
print(f"stopped {step}", flush=True)
restore()
agent.shutdown()
agent.close()
"""


def test_sigterm_to_another_process_preempts_the_job():
    notices = []
    noticed = threading.Event()

    def on_preemption(notice):
        notices.append(notice)
        noticed.set()

    with muster.Leader({"worker": 2}, heartbeat_timeout=10) as leader:
        agent = muster.Agent(leader.address, "worker", 0, on_preemption=on_preemption)
        child = subprocess.Popen([PYTHON, "-c", SIGTERMED_TASK, leader.address],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 env=dict(os.environ))
        try:
            agent.connect()
            assert child.stdout.readline().strip() == "ready"
            stopped = []
            give_up = time.monotonic() + 60

            def train():
                step = 0
                while time.monotonic() < give_up:
                    step += 1
                    if agent.reached_sync_point(step):
                        stopped.append(step)
                        return

            trainer = threading.Thread(target=train)
            trainer.start()
            sent = time.time()
            child.send_signal(signal.SIGTERM)
            line = child.stdout.readline().strip()
            trainer.join(WAIT * 6)
            assert line.startswith("stopped "), line + child.stdout.read()
            assert stopped == [int(line.split()[1])]
            assert child.wait(timeout=WAIT * 3) == 0
        finally:
            child.kill()
            child.wait()
        assert noticed.wait(WAIT)
        notice = notices[0]
        assert notice.notified_by == "/job:worker/task:1" and notice.reason == "SIGTERM"
        assert sent + 29 <= notice.deadline <= time.time() + 30
        agent.close()


def test_signal_helper_restores_the_previous_handlers(agents):
    a, _ = agents
    before = signal.getsignal(signal.SIGUSR1)
    restore = muster.notify_preemption_on_signal(a, signals=[signal.SIGUSR1], grace=1)
    assert signal.getsignal(signal.SIGUSR1) is not before
    assert restore.previous == {int(signal.SIGUSR1): before}
    restore()
    assert signal.getsignal(signal.SIGUSR1) is before
    with pytest.raises(ValueError, match="grace"):
        muster.notify_preemption_on_signal(a, grace=-1)
    with pytest.raises(ValueError, match="signals is empty"):
        muster.notify_preemption_on_signal(a, signals=())


# Stuck tasks ---------------------------------------------------------------------------------

def _stuck_job(**rules):
    """A leader with the stuck rule, three agents (heartbeats every 0.5 s), their errors."""
    leader = muster.Leader({"worker": 3}, heartbeat_timeout=1, **rules)
    errors = [[] for _ in range(3)]
    failed = [threading.Event() for _ in range(3)]

    def on_error(i):
        def record(error):
            errors[i].append(error)
            failed[i].set()
        return record

    agents = [muster.Agent(leader.address, "worker", i, heartbeat_timeout=1,
                           on_error=on_error(i)) for i in range(3)]
    for future in [a.connect_async() for a in agents]:
        future.result(timeout=WAIT)
    return leader, agents, errors, failed


def _wait_until_the_leader_sees(agent, steps):
    """Polls the leader's task states until tasks 0.. report `steps` (their heartbeats carry
    them, every 0.5 s here)."""
    give_up = time.monotonic() + WAIT
    while time.monotonic() < give_up:
        states = agent.get_task_state(range(len(steps)))
        if [state["step"] for state in states] == steps:
            return states
    raise AssertionError(f"the leader never saw steps {steps}: {states}")


def test_a_lagging_task_fails_the_job_with_stuck_task_error():
    leader, agents, errors, failed = _stuck_job(max_step_lag=10)
    try:
        agents[0].report_progress(100)
        agents[1].report_progress(100)
        states = _wait_until_the_leader_sees(agents[0], [100, 100])  # the median is 100
        assert states[0]["step_age_ms"] >= 0 and states[0]["connected_age_ms"] >= 0
        assert not failed[0].is_set()  # two tasks at the same step: nobody lags
        agents[2].report_progress(3)
        for i in range(3):
            assert failed[i].wait(WAIT), i
        for i in range(3):
            error = errors[i][0]
            assert isinstance(error, muster.StuckTaskError), error
            assert isinstance(error, muster.DeadlineExceededError)
            assert isinstance(error, TimeoutError)
            assert error.code == "DEADLINE_EXCEEDED"
            assert error.task == "/job:worker/task:2"
            assert error.reason == "lagging"
            assert error.step == 3
            assert (error.min_other_step, error.max_other_step) == (100, 100)
            assert error.median_step == 100
            assert error.stalled_for >= 0
            assert "/job:worker/task:2" in error.message and "--max-step-lag" in error.message
        assert agents[2].state == "ERROR"
        assert isinstance(agents[2].error, muster.StuckTaskError)
    finally:
        for agent in agents:
            agent.close()
        leader.stop()


def test_a_stalled_task_is_stuck_while_the_others_advance():
    leader, agents, errors, failed = _stuck_job(stuck_after=2)
    try:
        agents[1].report_progress(7)
        agents[2].report_progress(7)
        step = 7
        give_up = time.monotonic() + WAIT
        while not failed[2].is_set() and time.monotonic() < give_up:
            step += 1  # tasks 0 and 1 advance as fast as they can; task 2 stays at 7
            agents[0].report_progress(step)
            agents[1].report_progress(step)
        assert failed[2].wait(WAIT)
        error = errors[2][0]
        assert isinstance(error, muster.StuckTaskError), error
        assert error.task == "/job:worker/task:2" and error.reason == "stalled"
        assert error.step == 7
        assert error.stalled_for >= 2
        assert error.max_other_step > 7
        assert "--stuck-after" in error.message
    finally:
        for agent in agents:
            agent.close()
        leader.stop()


def test_stuck_task_error_from_a_status():
    stuck = dict(task="/job:worker/task:1", step=4, reason="stalled", stalled_for=2.5,
                 min_other_step=9, max_other_step=11, median_step=10)
    error = _errors.from_status(4, "stuck", "/job:worker/task:1", stuck)
    assert type(error) is muster.StuckTaskError
    assert error.source_task == "/job:worker/task:1" and error.stalled_for == 2.5
    assert str(error) == "DEADLINE_EXCEEDED: stuck"
    assert type(_errors.from_status(4, "late")) is muster.DeadlineExceededError
    # The TaskStuck of another code than DEADLINE_EXCEEDED does not change its class.
    assert type(_errors.from_status(13, "odd", None, stuck)) is muster.InternalError


def test_leader_stuck_rule_arguments():
    with pytest.raises(ValueError, match="max_step_lag"):
        muster.Leader({"worker": 1}, max_step_lag=-1)
    with pytest.raises(ValueError):
        muster.Leader({"worker": 1}, stuck_after=-1)
    with muster.Leader({"worker": 1}, stuck_after=datetime.timedelta(seconds=30),
                       max_step_lag=100) as leader:
        assert leader.running


# Barrier progress in a process: Ctrl-C and interpreter exit -----------------------------------

INTERRUPTED_PROGRESS_WAIT = r"""
import muster
leader = muster.Leader({"worker": 2})
agents = [muster.Agent(leader.address, "worker", i) for i in range(2)]
for agent in agents:
    agent.connect()
reports = []

def on_progress(info):
    if not reports:
        print("waiting", info["arrived"], info["total"], flush=True)
    reports.append(info)

try:
    agents[0].wait_at_barrier("held", 60, progress_every=0.02, on_progress=on_progress)
except KeyboardInterrupt:
    seen = len(reports)
    # A call completed through the callback thread: reports queued before it have run.
    agents[0].try_get_key_value_async("absent").exception(timeout=10)
    print("interrupted", seen > 0 and len(reports) == seen, flush=True)
# The agent still works: both tasks meet at a new barrier.
other = agents[1].wait_at_barrier_async("after", 10)
agents[0].wait_at_barrier("after", 10, progress_every=0.02, on_progress=print)
other.result(timeout=10)
print("done", flush=True)
"""

EXIT_WITH_PROGRESS_WAIT = r"""
import threading, muster
leader = muster.Leader({"worker": 2}, shutdown_barrier_timeout=1)
agents = [muster.Agent(leader.address, "worker", i) for i in range(2)]
for agent in agents:
    agent.connect()
reported = threading.Event()
pending = agents[0].wait_at_barrier_async("never", 60, progress_every=0.01,
                                          on_progress=lambda info: reported.set())
assert reported.wait(10)
print("exiting", flush=True)
"""


def _python(code):
    return subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ))


def test_ctrl_c_interrupts_a_barrier_wait_with_progress_and_stops_its_reports():
    child = _python(INTERRUPTED_PROGRESS_WAIT)
    try:
        assert child.stdout.readline().split() == ["waiting", "1", "2"]
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        line = child.stdout.readline().strip()
        assert time.monotonic() - sent < 2
        assert line == "interrupted True", line + child.stdout.read()
        out, _ = child.communicate(timeout=WAIT * 3)
        assert out.rstrip().endswith("done"), out
        assert child.returncode == 0, out
    finally:
        child.kill()
        child.wait()


def test_interpreter_exit_with_a_progress_wait_pending_is_clean():
    child = _python(EXIT_WITH_PROGRESS_WAIT)
    try:
        out, _ = child.communicate(timeout=WAIT * 3)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 0, out
    assert "exiting" in out and "Traceback" not in out and "Fatal" not in out
