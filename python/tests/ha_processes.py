"""Processes and an etcd member for the HA tests: free ports, a process whose lines are read
by a thread of their own, and (etcd_member) a one-member etcd cluster on free ports, plain or
(secure_etcd_member) requiring TLS, a client certificate and a user."""

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


SECURE_PASSWORD = "muster-py-test-pw"


def _make_certificates(data):
    """A CA, the member's certificate (naming 127.0.0.1) and a client's (without a CN: etcd
    refuses a gateway request from one with a CN while its authentication is on), in `data`."""
    def run(*argv):
        subprocess.run(["/usr/bin/openssl", *argv], check=True, capture_output=True)
    ca = os.path.join(data, "ca")
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", ca + ".key", "-out", ca + ".pem", "-days", "2", "-subj", "/CN=muster-py-ca")
    for name, subject, usage in (("server", "/CN=muster-py-server", "serverAuth,clientAuth"),
                                 ("client", "/O=muster-py-client", "clientAuth")):
        base = os.path.join(data, name)
        with open(base + ".ext", "w") as ext:
            ext.write(f"subjectAltName=IP:127.0.0.1\nextendedKeyUsage={usage}\n")
        run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            base + ".key", "-out", base + ".csr", "-subj", subject)
        run("x509", "-req", "-in", base + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
            "-CAcreateserial", "-out", base + ".pem", "-days", "2", "-extfile", base + ".ext")


@contextmanager
def etcd_member(secure=False):
    """A one-member etcd cluster on free ports; its endpoint. `secure`: clients over TLS only
    (with a certificate), authentication on (user root); yields (https:// endpoint, the
    MUSTER_ETCD_* variables a client needs)."""
    data = tempfile.mkdtemp(prefix="muster-etcd-")
    client, peer = free_ports(2)
    log = open(os.path.join(data, "etcd.log"), "w")
    scheme = "https" if secure else "http"
    argv = ["/usr/bin/etcd", "--name", "m0", "--data-dir", os.path.join(data, "m0"),
            "--listen-client-urls", f"{scheme}://127.0.0.1:{client}",
            "--advertise-client-urls", f"{scheme}://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"m0=http://127.0.0.1:{peer}"]
    etcdctl = ["/usr/bin/etcdctl", f"--endpoints={scheme}://127.0.0.1:{client}",
               "--dial-timeout=1s"]
    env = {}
    if secure:
        _make_certificates(data)
        argv += [f"--cert-file={data}/server.pem", f"--key-file={data}/server.key",
                 f"--trusted-ca-file={data}/ca.pem", "--client-cert-auth"]
        etcdctl += [f"--cacert={data}/ca.pem", f"--cert={data}/client.pem",
                    f"--key={data}/client.key"]
        env = {"MUSTER_ETCD_CACERT": f"{data}/ca.pem", "MUSTER_ETCD_CERT": f"{data}/client.pem",
               "MUSTER_ETCD_KEY": f"{data}/client.key", "MUSTER_ETCD_USER": "root",
               "MUSTER_ETCD_PASSWORD": SECURE_PASSWORD}
    process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    endpoint = f"127.0.0.1:{client}"
    try:
        deadline = time.monotonic() + 20
        while subprocess.run(etcdctl + ["put", "muster-test/formed", "1"],
                             capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, open(os.path.join(data, "etcd.log")).read()
            time.sleep(0.1)
        if secure:
            for args in (["user", "add", f"root:{SECURE_PASSWORD}", "--interactive=false"],
                         ["auth", "enable"]):
                subprocess.run(etcdctl + args, check=True, capture_output=True)
            yield f"https://{endpoint}", env
            return
        yield endpoint
    finally:
        process.kill()
        process.wait(10)
        log.close()
        shutil.rmtree(data, ignore_errors=True)
