"""The live page of `muster serve --http` in a real browser (headless Chromium, driven over the
DevTools protocol: headless_chromium.py).

test_live_page_of_a_running_job: a real leader with four tasks (three examples/worker processes
and held_task.py, which keeps them waiting at their barrier), the page loaded from the leader:
4 tasks connected and the barrier naming the task it waits for; then one worker killed with
kill -9, and the same page (live, through the event stream) shows it failed, with the job's
first error, and the barrier missing it too. test_token_form: a leader with a job token; the page asks for it, and once given
shows the job. test_page_with_10000_tasks: the page on a fixture of 10,000 tasks
(fixture_server.py), and a hovered cell's tooltip.

Screenshots go to $MUSTER_TEST_OUTPUT (else a temporary folder; the path is printed); with
MUSTER_UPDATE_SCREENSHOT=1 the running job's last one is also copied to docs/images/live_page.png.
The build comes from $MUSTER_BUILD_DIR (default: <repo>/build). Skipped without chromium.

  MUSTER_BUILD_DIR=build /usr/bin/python3 -m pytest -q -p no:cacheprovider \\
      tests/observe/test_live_page.py"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import fixture_server  # noqa: E402
import make_page_fixture  # noqa: E402
from headless_chromium import Browser, find_chromium  # noqa: E402

BUILD = os.path.abspath(os.environ.get("MUSTER_BUILD_DIR") or os.path.join(REPO, "build"))
MUSTER = os.path.join(BUILD, "tools", "muster")
WORKER = os.path.join(BUILD, "examples", "worker")
WAIT = 20  # seconds: the bound of every wait

pytestmark = pytest.mark.skipif(
    find_chromium() is None,
    reason="chromium is not installed (tools/install-deps.sh installs Debian's chromium)")

# What the page shows, read from its DOM hooks in one evaluation.
PAGE_SUMMARY = """(() => {
  const q = (s) => document.querySelector(s);
  return {
    updates: Number(document.body.dataset.updates || 0),
    conn: q("#conn").dataset.state,
    tasks: q("#task-count").textContent,
    connected: q("#count-connected").textContent,
    disconnected: q("#count-disconnected").textContent,
    error: q("#count-error").textContent,
    errorTasks: q("canvas#tasks").dataset.errorTasks || "",
    errorTaskList: q("#error-tasks").textContent,
    firstErrorShown: !q("#first-error").hidden,
    firstErrorTask: q("#first-error-task").textContent,
    firstErrorText: q("#first-error").textContent,
    barriers: [...document.querySelectorAll("#barriers tr.barrier")].map((tr) => ({
      id: tr.dataset.id, text: tr.textContent, missing: tr.querySelector(".missing").textContent})),
    events: [...document.querySelectorAll("#events li")].map((li) => li.textContent),
    tokenForm: !q("#token-form").hidden,
  };
})()"""


def wait_until(what, probe, timeout=WAIT, interval=0.1):
    """Calls probe() until it returns something truthy (exceptions count as not yet); returns
    it, or fails naming `what` and the last value after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = probe()
        except Exception as error:  # pylint: disable=broad-except
            last = error
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}; last: {last!r}")
        time.sleep(interval)


class Process:
    """A child process whose output lines a thread collects (stdout and stderr together)."""

    def __init__(self, name, args, env=None, stdin=False):
        self.name = name
        self.lines = []
        self.cond = threading.Condition()
        self.popen = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                      env=env, text=True, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.popen.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()

    def output(self):
        with self.cond:
            return "\n".join(self.lines)

    def wait_for_line(self, pattern, timeout=WAIT):
        """The first match of `pattern` in an output line, waiting at most `timeout` s."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    match = regex.search(line)
                    if match:
                        return match
                left = deadline - time.monotonic()
                if left <= 0 or (self.popen.poll() is not None and not self.cond.wait(0.2)):
                    pytest.fail(f"{self.name}: no line matching {pattern!r} within {timeout} s "
                                f"(exit {self.popen.poll()}); output:\n{self.output()}")
                self.cond.wait(min(left, 0.5))

    def stop(self, sig=signal.SIGTERM):
        if self.popen.poll() is None:
            try:
                os.kill(self.popen.pid, sig)
                self.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
            except ProcessLookupError:
                pass
        for stream in (self.popen.stdin, self.popen.stdout):
            if stream:
                try:
                    stream.close()
                except OSError:
                    pass


@pytest.fixture
def processes():
    """Starts processes for a test and stops every one of them after it (last started first)."""
    started = []

    def start(name, args, **kwargs):
        process = Process(name, args, **kwargs)
        started.append(process)
        return process

    yield start
    for process in reversed(started):
        process.stop()


@pytest.fixture(scope="module")
def output_dir():
    path = os.environ.get("MUSTER_TEST_OUTPUT") or tempfile.mkdtemp(prefix="muster-live-page-")
    os.makedirs(path, exist_ok=True)
    return path


def say(capsys, text):
    with capsys.disabled():
        print(f"\n[live page] {text}", flush=True)


def save_screenshot(browser, output_dir, name, capsys):
    path = browser.screenshot(os.path.join(output_dir, name))
    say(capsys, f"screenshot: {path}")
    return path


def get_json(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


def require_build(*paths):
    missing = [p for p in paths if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail(f"not built: {', '.join(missing)} (MUSTER_BUILD_DIR={BUILD})")


def start_leader(start, *flags):
    """`muster serve ... --port 0 --http 127.0.0.1:0`; returns (process, leader HOST:PORT, page
    URL) from its ready line."""
    leader = start("muster serve", [MUSTER, "serve", "--port", "0", "--http", "127.0.0.1:0",
                                    *flags])
    ready = leader.wait_for_line(r"muster leader ready at (\S+) incarnation=\S+(.*)")
    http = re.search(r"\bhttp=(\S+)", ready.group(2))
    assert http, f"the ready line names no http= address: {ready.group(0)!r}"
    url = http.group(1)
    if not url.startswith("http"):
        url = f"http://{url}"
    return leader, ready.group(1), url.rstrip("/")


def test_live_page_of_a_running_job(processes, output_dir, capsys):
    require_build(MUSTER, WORKER)
    leader, address, url = start_leader(processes, "--job", "worker=4",
                                        "--recoverable-job", "worker")
    say(capsys, f"leader {address}, page {url}/")
    # Task 3 connects like the others but never arrives at their barrier.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (os.path.join(BUILD, "python"), os.environ.get("PYTHONPATH")) if p))
    processes("held task 3", [sys.executable, os.path.join(HERE, "held_task.py"),
                              "--leader", address, "--task", "3"], env=env, stdin=True)
    workers = {task: processes(f"worker {task}", [WORKER, f"--leader={address}", f"--task={task}",
                                                  "--hold"])
               for task in range(3)}

    def open_barrier(state, arrived):
        barriers = [b for b in state["barriers"] if b["id"] == "ready_to_train"]
        return barriers[0] if barriers and barriers[0]["arrived"] == arrived else None

    wait_until("4 connected tasks, 3 of them at barrier ready_to_train", lambda: (
        lambda s: s["counts"]["connected"] == 4 and open_barrier(s, 3))(
            get_json(f"{url}/api/state")))

    with Browser(1280, 900) as browser:
        browser.navigate(f"{url}/")
        try:
            page = wait_until("the page showing 4 connected tasks and the barrier", lambda: (
                lambda s: s["connected"] == "4" and s["barriers"] and s)(
                    browser.evaluate(PAGE_SUMMARY)))
        finally:
            save_screenshot(browser, output_dir, "live_page_barrier.png", capsys)
        assert page["tasks"] == "4"
        assert page["error"] == "0" and page["disconnected"] == "0"
        assert page["errorTasks"] == "" and not page["firstErrorShown"]
        assert len(page["barriers"]) == 1
        assert page["barriers"][0]["id"].startswith("ready_to_train::"), page["barriers"]
        assert page["barriers"][0]["missing"] == "/job:worker/task:3"
        assert "3/4" in page["barriers"][0]["text"]
        assert any("TASK_REGISTERED" in e and "/job:worker/task:0" in e for e in page["events"])
        dom = browser.dom()
        assert 'id="task-count">4<' in dom
        assert re.search(r'<tr class="barrier"[^>]*>.*?/job:worker/task:3', dom)

        # The stream keeps the page current: updates arrive without reloading.
        seen = page["updates"]
        wait_until("two more updates through /api/stream", lambda: (
            lambda s: s["updates"] >= seen + 2 and s["conn"] == "live")(
                browser.evaluate(PAGE_SUMMARY)), timeout=10)

        # kill -9 worker 1 while its barrier is open: the leader puts its task in ERROR (the job
        # is recoverable, so the others stay) and withdraws its arrival; the open page shows
        # the failed task, the job's first error, and the barrier now missing it too.
        os.kill(workers[1].popen.pid, signal.SIGKILL)
        workers[1].popen.wait(timeout=10)
        wait_until("/job:worker/task:1 in ERROR at the leader", lambda: (
            lambda s: s["tasks"]["state"][1] == "E" and s)(get_json(f"{url}/api/state")))
        try:
            page = wait_until("the page showing task 1 failed", lambda: (
                lambda s: s["error"] == "1" and s["firstErrorShown"] and s)(
                    browser.evaluate(PAGE_SUMMARY)))
        except BaseException:
            save_screenshot(browser, output_dir, "live_page.png", capsys)
            raise
        assert page["tasks"] == "4"
        assert page["connected"] == "3"
        assert page["errorTasks"] == "/job:worker/task:1"
        assert page["errorTaskList"].split() == ["/job:worker/task:1"]
        assert page["firstErrorTask"] == "/job:worker/task:1"
        assert "UNAVAILABLE" in page["firstErrorText"]
        assert any("TASK_FAILED" in e and "/job:worker/task:1" in e for e in page["events"]), \
            page["events"]
        # The barrier waits for the failed task again, and for task 3.
        barrier = wait_until("ready_to_train missing task 1 and task 3 at the leader", lambda: (
            lambda b: b and sorted(b["missing"]) == ["/job:worker/task:1", "/job:worker/task:3"]
            and b)(open_barrier(get_json(f"{url}/api/state"), 2)), timeout=10)
        page = wait_until("the barrier missing task 1 and task 3 on the page", lambda: (
            lambda s: s["barriers"] and "task:1" in s["barriers"][0]["missing"] and s)(
                browser.evaluate(PAGE_SUMMARY)), timeout=5)
        assert sorted(page["barriers"][0]["missing"].split(", ")) == barrier["missing"]
        assert "2/4" in page["barriers"][0]["text"]
        last = save_screenshot(browser, output_dir, "live_page.png", capsys)
        dom = browser.dom()
        with open(os.path.join(output_dir, "live_page.html"), "w", encoding="utf-8") as out:
            out.write(dom)
        assert 'data-error-tasks="/job:worker/task:1"' in dom
        assert 'id="count-error">1<' in dom

        # A page loaded now shows the same from its first update.
        browser.navigate(f"{url}/")
        fresh = wait_until("a reloaded page with its first update", lambda: (
            lambda s: s["updates"] >= 1 and s)(browser.evaluate(PAGE_SUMMARY)))
        assert (fresh["tasks"], fresh["error"], fresh["errorTasks"]) == (
            "4", "1", "/job:worker/task:1")

    if os.environ.get("MUSTER_UPDATE_SCREENSHOT") == "1":
        target = os.path.join(REPO, "docs", "images", "live_page.png")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(last, target)
        say(capsys, f"updated {target}")
    assert leader.popen.poll() is None, leader.output()


def test_token_form(processes, output_dir, capsys, tmp_path):
    require_build(MUSTER)
    token = "page-test-token-0123456789"
    token_file = tmp_path / "job.token"
    token_file.write_text(token + "\n")
    token_file.chmod(0o600)
    _, _, url = start_leader(processes, "--job", "worker=2", "--token-file", str(token_file))
    with pytest.raises(urllib.error.HTTPError) as refused:
        get_json(f"{url}/api/state")
    assert refused.value.code == 401
    assert get_json(f"{url}/api/state", {"Authorization": f"Bearer {token}"})["tasks"]["count"] == 2

    with Browser(1280, 900) as browser:
        browser.navigate(f"{url}/")
        wait_until("the token form", lambda: browser.evaluate(PAGE_SUMMARY)["tokenForm"])
        save_screenshot(browser, output_dir, "live_page_token.png", capsys)
        browser.evaluate(f"""document.getElementById("token-input").value = {json.dumps(token)};
            document.querySelector("#token-form form").requestSubmit(); true""")
        page = wait_until("the job after the token was given", lambda: (
            lambda s: s["updates"] >= 1 and not s["tokenForm"] and s)(
                browser.evaluate(PAGE_SUMMARY)))
        assert page["tasks"] == "2"
        assert "muster_token=" in browser.evaluate("document.cookie")


def test_page_with_10000_tasks(output_dir, capsys, tmp_path):
    state = make_page_fixture.make_state(10000, seed=7)
    path = tmp_path / "state.json"
    path.write_text(json.dumps(state))
    server = fixture_server.serve(str(path))
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        with Browser(1280, 900) as browser:
            browser.navigate(url)
            page = wait_until("the page with 10,000 tasks", lambda: (
                lambda s: s["updates"] >= 1 and s)(browser.evaluate(PAGE_SUMMARY)))
            assert page["tasks"] == "10000"
            failed = [make_page_fixture.name(*job_task) for job_task in [
                (job["name"], i - job["first"]) for i, c in enumerate(state["tasks"]["state"])
                if c == "E" for job in state["jobs"]
                if job["first"] <= i < job["first"] + job["count"]]]
            assert page["errorTasks"].split() == failed
            assert page["firstErrorTask"] == state["first_error"]["task"]
            missing = state["barriers"][0]["missing"]
            assert page["barriers"][0]["missing"] == ", ".join(missing)
            # Every cell drawn fits the viewport's width, and the grid stays short.
            box = browser.evaluate("""(() => { const r = document.querySelector("canvas#tasks")
                .getBoundingClientRect(); return {x: r.x, y: r.y, w: r.width, h: r.height}; })()""")
            assert box["h"] <= 480
            # Hover the first failed task's cell: the tooltip names it.
            index = state["errors"][0]["index"]
            cell = browser.evaluate(f"""(() => {{ const p = cellPosition({index});
                return {{x: p.x + layout.size / 2 - 0.5, y: p.y + layout.size / 2 - 0.5}}; }})()""")
            browser.hover(box["x"] + cell["x"], box["y"] + cell["y"])
            tip = wait_until("the tooltip", lambda: browser.evaluate(
                'document.getElementById("tip").hidden ? "" : '
                'document.getElementById("tip").textContent'), timeout=5)
            assert state["errors"][0]["task"] in tip and "error" in tip
            save_screenshot(browser, output_dir, "live_page_10000.png", capsys)
            # Rendering 10,000 cells stays fast.
            ms = browser.evaluate("(() => { const t = performance.now(); for (let i = 0; i < 10; i++)"
                                  " drawGrid(); return (performance.now() - t) / 10; })()")
            say(capsys, f"one draw of 10,000 cells: {ms:.1f} ms")
            assert ms < 100
    finally:
        server.shutdown()
        server.server_close()
