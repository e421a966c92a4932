"""muster.Leader: the coordination service hosted by this Python process."""

from typing import Dict, Iterable, Tuple, Union

from ._convert import Duration, seconds
from ._muster import Leader as _CoreLeader


def _job_size(size: Union[int, str, Tuple[int, int]]) -> str:
    """A job's size as muster serve --job spells it: "4", or "2:8" for an elastic job."""
    if isinstance(size, tuple) and len(size) == 2:
        return f"{int(size[0])}:{int(size[1])}"
    if isinstance(size, str):
        return size
    return str(int(size))


class Leader:
    """A coordinator in this process, published on host:port (the library's muster::Leader,
    what `muster serve` runs), or, with ha_etcd, one of an HA job's leaders (muster::HaLeader).

    Args:
        jobs: tasks per job, e.g. {"worker": 4}; an elastic job of MIN to MAX tasks as
            "MIN:MAX" or (MIN, MAX), e.g. {"worker": (2, 8)} (docs/supervision.md, "Elastic
            jobs": its tasks learn who takes part from Agent.wait_for_membership()).
        host: the address to listen on ("0.0.0.0": every interface).
        port: the TCP port (0: any free one; see .port).
        heartbeat_timeout: a task that sends no heartbeat for this long (seconds) fails.
        register_timeout: with it, registration is a barrier of every task with this deadline.
        shutdown_barrier_timeout: with it, shutdown() of each task waits for the others.
        recoverable_jobs: jobs whose task failures are tolerated (policy "recoverable").
        policy: "fate-sharing" (default), "job-scoped" or "recoverable".
        token: the job token every other node must present (empty: none).
        stuck_after: seconds (or a timedelta); a task whose reported step (report_progress,
            reached_sync_point) has not advanced for this long, while a task of its job with a
            higher step advanced, is stuck: it fails with muster.StuckTaskError (reason
            "stalled"), which the policy handles as any failure. None or 0: off. As muster
            serve --stuck-after.
        max_step_lag: a task whose step is more than this behind its job's median step is
            stuck (reason "lagging"). 0: off. As muster serve --max-step-lag.
        state_dir: keep the job's state in this directory, each change on disk before it is
            acknowledged; a leader started again on the same dir (and port) continues the job,
            and agents with leader_reconnect_timeout reconnect to it. Empty: memory only. As
            muster serve --state-dir (docs/operations.md).
        reconnect_window: with state_dir or ha_etcd, how long tasks that were connected have to
            come back to the restarted (or next) leader before they fail. None:
            heartbeat_timeout.
        http: "HOST:PORT" of the HTTP endpoint (port 0: any free port): Prometheus metrics at
            /metrics and the live page at /, with the leader's token (http_url says where).
            Empty: none. As muster serve --http (docs/operations.md, "Watching a job").
        settle_time: an elastic job forms this long (seconds) after its MIN-th task
            connected, or at once when all MAX did. None: 5 s. As muster serve --settle-time.
        ha_etcd: etcd's members, "HOST:PORT,HOST:PORT": this is one of an HA job's leaders
            (docs/operations.md, "High availability"). It campaigns for the job on etcd, serves
            while it holds the job's leader key (role "active") and stands by otherwise, its
            port answering every agent with UNAVAILABLE naming the active leader; the job's
            state is in etcd, each change there before it is acknowledged. It reaches etcd
            through etcd's JSON gateway (on by default). Not with state_dir; with http, the
            endpoint serves while this leader is active (http_url is "" standing by).
        ha_name: with ha_etcd, the HA job's name, the same on every leader of the job.
        ha_lease_ttl: with ha_etcd, the lease of the active leader, whole seconds (default 2):
            how long a dead active leader goes unnoticed.
        ha_advertise: with ha_etcd, the "HOST:PORT" agents reach this leader at (default:
            host and the port).

    Usable as a context manager; stop() (or interpreter exit) stops it.
    """

    def __init__(self, jobs: Dict[str, Union[int, str, Tuple[int, int]]],
                 host: str = "127.0.0.1", port: int = 0, *,
                 heartbeat_timeout: Duration = 10.0, register_timeout: Duration = None,
                 shutdown_barrier_timeout: Duration = None,
                 recoverable_jobs: Iterable[str] = (), policy: str = "", token: str = "",
                 stuck_after: Duration = None, max_step_lag: int = 0,
                 state_dir: str = "", reconnect_window: Duration = None, http: str = "",
                 settle_time: Duration = None, ha_etcd: str = "", ha_name: str = "",
                 ha_lease_ttl: Duration = None, ha_advertise: str = ""):
        self._core = _CoreLeader(
            jobs={str(k): _job_size(v) for k, v in dict(jobs).items()}, host=host, port=int(port),
            heartbeat_timeout=seconds(heartbeat_timeout) or 10.0,
            register_timeout=seconds(register_timeout),
            shutdown_barrier_timeout=seconds(shutdown_barrier_timeout),
            recoverable_jobs=list(recoverable_jobs), policy=policy, token=token,
            stuck_after=seconds(stuck_after), max_step_lag=int(max_step_lag),
            state_dir=str(state_dir or ""), reconnect_window=seconds(reconnect_window),
            http=str(http or ""), settle_time=seconds(settle_time), ha_etcd=str(ha_etcd or ""),
            ha_name=str(ha_name or ""), ha_lease_ttl=seconds(ha_lease_ttl),
            ha_advertise=str(ha_advertise or ""))

    @property
    def address(self) -> str:
        """"HOST:PORT" for agents (127.0.0.1 when listening on every interface; with ha_etcd
        the address etcd names it by: ha_advertise, by default host and port, this host's name
        when listening on every interface)."""
        return self._core.address

    @property
    def port(self) -> int:
        """The TCP port the leader listens on (the one picked when created with port=0)."""
        return self._core.port

    @property
    def incarnation(self) -> int:
        """The leader's incarnation id, returned to every task that registers (0 with ha_etcd:
        the job's, kept from leader to leader, is in etcd)."""
        return self._core.incarnation

    @property
    def recovery(self) -> str:
        """With state_dir: what the leader recovered, in one line ("" without one); with
        ha_etcd: what its last takeover recovered."""
        return self._core.recovery

    @property
    def ha_status(self) -> str:
        """With ha_etcd: the leader's last word on its role and why, the line `muster serve
        --ha-etcd` prints ("active: serving HA job ...", "standby: the active leader is ...",
        "standby: won the election but cannot serve: ...", after stop() "stopped: ..."); "" without
        ha_etcd, or before the first campaign."""
        return self._core.ha_status

    @property
    def http_url(self) -> str:
        """With http: "http://HOST:PORT" (https with TLS) of the HTTP endpoint; "" without. An HA
        leader (ha_etcd) serves it only while active: "" standing by."""
        return self._core.http_url

    @property
    def role(self) -> str:
        """"active" (serving), "standby" (one of an HA job's leaders, not serving now) or
        "stopped" (stop() was called, or an HA leader could not publish its port again after
        stepping down: start another)."""
        return self._core.role if self.running else "stopped"

    @property
    def active_leader(self) -> str:
        """The active leader's "HOST:PORT" (with ha_etcd: as etcd names it at the last campaign;
        "" when none holds the job)."""
        return self._core.active_leader

    def wait_active(self, timeout: Duration = None) -> bool:
        """Waits until this leader serves (an HA leader: until it holds the job), at most
        `timeout` seconds (None: a day); False when it did not."""
        return self._core.wait_active(86400.0 if timeout is None else seconds(timeout))

    @property
    def running(self) -> bool:
        """False once stop() was called (or the context was left)."""
        return self._core.running

    def stop(self) -> None:
        """Stops the coordinator: waiting calls end with an error and connected agents learn
        that the leader is gone (with state_dir a stop is a pause: waiting calls stay
        unanswered, for agents to re-send to the restarted leader). Idempotent."""
        self._core.stop()

    def __enter__(self) -> "Leader":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"muster.Leader(address={self.address!r}, running={self.running})"
