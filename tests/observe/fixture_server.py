#!/usr/bin/python3
"""Serves the live page (net/observe/page/index.html, read again on every request) with a
fixture of GET /api/state, the way `muster serve --http` does: /api/state, and /api/stream as
server-sent events (one `state` event a second). For working on the page without a leader.

  fixture_server.py [--port 8765] [--state tests/observe/page_fixture_state.json]
                    [--token T] [--no-stream]

Listens on 127.0.0.1 only. --token requires `Authorization: Bearer T` or the cookie
muster_token=T on /api/*; --no-stream answers /api/stream with 404 (the page then polls)."""
import argparse
import copy
import json
import os
import random
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = os.path.join(HERE, "..", "..", "net", "observe", "page", "index.html")


class FixtureState:
    """The fixture, aged by the wall clock: uptime and heartbeat ages move as on a leader."""

    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.base = json.load(f)
        self.start = time.time()
        self.rnd = random.Random(1)
        self.lock = threading.Lock()

    def snapshot(self):
        with self.lock:
            state = copy.deepcopy(self.base)
            elapsed = int((time.time() - self.start) * 1000)
            now = int(time.time() * 1000)
            leader = state["leader"]
            leader["uptime_ms"] += elapsed
            leader["taken_unix_ms"] = now
            shift = now - self.base["leader"]["taken_unix_ms"]
            for event in state["events"]:
                event["unix_ms"] += shift
            if state["first_error"]:
                state["first_error"]["unix_ms"] += shift
            hb = state["tasks"]["hb_ms"]
            for i, age in enumerate(hb):
                if 0 <= age < 5000:
                    hb[i] = self.rnd.randint(20, 4900)
            for barrier in state["barriers"]:
                barrier["waited_ms"] += elapsed
                if barrier["deadline_in_ms"] >= 0:
                    barrier["deadline_in_ms"] = max(0, barrier["deadline_in_ms"] - elapsed)
            return state


def make_handler(fixture, token, stream):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def authorized(self):
            if token is None:
                return True
            if self.headers.get("Authorization", "") == f"Bearer {token}":
                return True
            cookies = [c.strip() for c in self.headers.get("Cookie", "").split(";")]
            return f"muster_token={token}" in cookies

        def send(self, code, body, content_type):
            data = body.encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/":
                with open(PAGE, encoding="utf-8") as f:
                    return self.send(200, f.read(), "text/html; charset=utf-8")
            if not path.startswith("/api/"):
                return self.send(404, "not found\n", "text/plain")
            if not self.authorized():
                return self.send(401, json.dumps({"error": "a job token is required"}),
                                 "application/json")
            if path == "/api/state":
                return self.send(200, json.dumps(fixture.snapshot()), "application/json")
            if path == "/api/stream" and stream:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-store")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                try:
                    while True:
                        data = json.dumps(fixture.snapshot(), separators=(",", ":"))
                        self.wfile.write(f"event: state\ndata: {data}\n\n".encode("utf-8"))
                        self.wfile.flush()
                        time.sleep(1)
                except (BrokenPipeError, ConnectionResetError):
                    return
            return self.send(404, json.dumps({"error": "not found"}), "application/json")

    return Handler


def serve(state_path, port=0, token=None, stream=True):
    """Starts the server on a thread; returns it (server.server_address has the port)."""
    server = ThreadingHTTPServer(("127.0.0.1", port),
                                 make_handler(FixtureState(state_path), token, stream))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--state", default=os.path.join(HERE, "page_fixture_state.json"))
    parser.add_argument("--token")
    parser.add_argument("--no-stream", action="store_true")
    args = parser.parse_args()
    server = serve(args.state, args.port, args.token, not args.no_stream)
    print(f"live page at http://127.0.0.1:{server.server_address[1]}/", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
