"""Processes and an etcd member for the HA tests: free ports, a process whose lines are read
by a thread of their own, and (etcd_member) a one-member etcd cluster on free ports."""

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager


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


def _cli():
    return os.environ.get("MUSTER_CLI", os.path.join(
        os.path.dirname(__file__), "..", "..", "build", "tools", "muster"))


def serve_ha_leaders(etcd, name, flags, count=2):
    """`count` muster serve --ha-etcd processes of HA job `name` with `flags`, once one of them
    serves; returns them, the index of the active one, and their addresses."""
    ports = free_ports(count)
    leaders = [Lines([_cli(), "serve", f"--ha-etcd={etcd}", f"--ha-name={name}", f"--port={port}"]
                     + list(flags)) for port in ports]
    try:
        for leader in leaders:
            leader.wait_for("muster leader ready at")
        deadline = time.monotonic() + 30
        while not any(leader.count("active: serving") for leader in leaders):
            assert time.monotonic() < deadline, [leader.lines for leader in leaders]
            time.sleep(0.05)
    except BaseException:
        for leader in leaders:
            leader.kill()
        raise
    active = next(i for i, leader in enumerate(leaders) if leader.count("active: serving"))
    return leaders, active, [f"127.0.0.1:{port}" for port in ports]


def serve_ha_standby(etcd, name, flags):
    """One more muster serve --ha-etcd process of HA job `name`, once it stands by; returns it
    and its address."""
    port = free_ports(1)[0]
    leader = Lines([_cli(), "serve", f"--ha-etcd={etcd}", f"--ha-name={name}", f"--port={port}"]
                   + list(flags))
    try:
        leader.wait_for("standby: the active leader is")
    except BaseException:
        leader.kill()
        raise
    return leader, f"127.0.0.1:{port}"


@contextmanager
def etcd_member():
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
