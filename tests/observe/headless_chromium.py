#!/usr/bin/python3
"""Headless Chromium driven through the DevTools protocol over a pipe (--remote-debugging-pipe:
commands on the browser's fd 3, replies on its fd 4, JSON messages ended by NUL), with the
standard library only. --dump-dom and --screenshot take the page once its load event fired,
which races a page that fills itself from a request or a stream; over the protocol a test waits
for what it needs (a JavaScript condition) and then reads the DOM or takes a screenshot.

  headless_chromium.py URL OUT.png [--size 1280x900] [--wait "JS condition"] [--hover X,Y]

takes one screenshot of a page, e.g. the live page served by fixture_server.py."""
import argparse
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM = "/usr/bin/chromium"


def find_chromium():
    """The browser's path, or None."""
    for path in (os.environ.get("MUSTER_CHROMIUM"), CHROMIUM, shutil.which("chromium"),
                 shutil.which("chromium-browser")):
        if path and os.access(path, os.X_OK):
            return path
    return None


class BrowserError(Exception):
    pass


class Browser:
    """One headless browser process with one page. Use as a context manager: leaving it ends
    the browser and removes its profile."""

    def __init__(self, width=1280, height=900, chromium=None):
        self.chromium = chromium or find_chromium()
        if not self.chromium:
            raise BrowserError("chromium not found")
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="muster-chromium-")
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}", "about:blank"]
        # bash (dash takes no fd above 9) puts the pipe's ends on fds 3 and 4, then becomes the
        # browser.
        script = f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w}'
        self.stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(["/bin/bash", "-c", script, self.chromium, *args],
                                        pass_fds=(to_browser_r, from_browser_w),
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=self.stderr, start_new_session=True)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buffer = b""
        self.next_id = 0
        self.session = None
        self.events = []
        try:
            targets = self.call("Target.getTargets", timeout=20)["targetInfos"]
            pages = [t for t in targets if t["type"] == "page"]
            target = pages[0]["targetId"] if pages else self.call(
                "Target.createTarget", {"url": "about:blank"})["targetId"]
            self.session = self.call("Target.attachToTarget",
                                     {"targetId": target, "flatten": True})["sessionId"]
            self.send("Page.enable")
            self.send("Runtime.enable")
            self.send("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1,
                       "mobile": False})
        except Exception:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def log(self):
        """What the browser wrote to stderr (for failure messages)."""
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")[-4000:]

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("no answer from the browser in time")
            ready, _, _ = select.select([self.from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"the browser exited: {self.log()}")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, timeout=20, session=True):
        """Sends one command and returns its result (raises BrowserError on an error reply)."""
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.to_browser, json.dumps(message).encode("utf-8") + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") != self.next_id:
                if "method" in reply:
                    self.events.append(reply)
                    del self.events[:-200]
                continue
            if "error" in reply:
                raise BrowserError(f"{method}: {reply['error']}")
            return reply.get("result", {})

    send = call

    def navigate(self, url):
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression, timeout=20):
        """The value of a JavaScript expression in the page (promises are awaited)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, condition, timeout=20, what=None):
        """Polls a JavaScript condition until it is truthy; raises BrowserError after timeout."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(condition)
            except BrowserError:
                value = None  # e.g. while the page navigates
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out after {timeout} s waiting for {what or condition}")
            time.sleep(0.1)

    def dom(self):
        return self.evaluate("document.documentElement.outerHTML")

    def hover(self, x, y):
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"}, timeout=30)["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))
        return path

    def close(self):
        if self.process.poll() is None:
            try:
                self.call("Browser.close", timeout=5, session=False)
            except (BrowserError, OSError):
                pass
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for fd in (self.to_browser, self.from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("output")
    parser.add_argument("--size", default="1280x900")
    parser.add_argument("--wait", default="Number(document.body.dataset.updates) >= 2",
                        help="JavaScript condition to wait for before the screenshot")
    parser.add_argument("--hover", help="X,Y: move the mouse there first")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    with Browser(width, height) as browser:
        browser.navigate(args.url)
        browser.wait_for(args.wait)
        if args.hover:
            x, y = (float(v) for v in args.hover.split(","))
            browser.hover(x, y)
            time.sleep(0.2)
        print(browser.screenshot(args.output))


if __name__ == "__main__":
    main()
