"""Argument conversions shared by the muster modules."""

import datetime
from typing import Optional, Union

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
