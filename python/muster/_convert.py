"""Argument conversions shared by the muster modules."""

import datetime
from typing import Optional, Tuple, Union

Duration = Union[float, int, datetime.timedelta, None]


def seconds(duration: Duration) -> Optional[float]:
    """A duration in seconds (float) from seconds or a timedelta; None stays None (no limit)."""
    if duration is None:
        return None
    if isinstance(duration, datetime.timedelta):
        return duration.total_seconds()
    if isinstance(duration, bool) or not isinstance(duration, (int, float)):
        raise TypeError(f"a duration is seconds (float) or a datetime.timedelta, not {duration!r}")
    return float(duration)


def split_address(text: str) -> Optional[Tuple[str, int]]:
    """(host, port) of "HOST:PORT" (an IPv6 host in brackets), or None when it is not one."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def join_address(host: str, port: int) -> str:
    """"HOST:PORT", with an IPv6 host in brackets (the C++ HostPort)."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"
