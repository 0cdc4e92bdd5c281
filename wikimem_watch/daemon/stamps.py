"""When a diary entry written through the daemon happened: its ``ts``, day and ``HH:MM``.

Callers may give any of the three (and a time zone); what they leave out comes from ``ts``
or from now. Bad input is a ``BadRequest`` naming the value and the expected shape, raised
before anything is written (ADR-0016).
"""

from __future__ import annotations

from datetime import date as _date
from datetime import datetime

from ..core import edit
from ..errors import BadRequest
from ..retrieval.request import ISO_DAY

__all__ = ["check_ts", "when"]


def check_ts(ts: object) -> str:
    if not isinstance(ts, str):
        raise BadRequest(f'"ts" must be an ISO-8601 string, got {ts!r}')
    try:
        datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(
            f'"ts" must be ISO-8601 like 2026-07-21T06:30:00+08:00, got {ts!r}'
        ) from None
    return ts


def when(
    ts: str | None, date: str | None, time_: str | None, tz: str | None
) -> tuple[str, str, str]:
    """(ts, date, HH:MM) of a diary entry: given ones win; the rest from ``ts`` (or now) in
    ``tz`` (an IANA name; default the system's local zone). Without ``ts``, an entry filed
    at another day or time than now happened then: its ``ts`` is that day and time (the
    recency decay reads it), not the moment it was written down."""
    zone = None
    if tz is not None:
        # Here: zoneinfo loads sysconfig (~2 ms), and a daemon is ready without it.
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            zone = ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise BadRequest(
                f'"tz" must be an IANA time zone like "Asia/Shanghai", got {tz!r}'
            ) from None
    if date is not None:
        if not ISO_DAY.fullmatch(date):
            raise BadRequest(f'"date" must be YYYY-MM-DD, got {date!r}')
        try:
            _date.fromisoformat(date)
        except ValueError:
            raise BadRequest(f'"date" {date!r} is not a calendar day') from None
    hhmm = edit.check_time(time_) if time_ is not None else None
    try:
        if ts is not None:
            instant = datetime.fromisoformat(check_ts(ts).replace("Z", "+00:00"))
            if instant.tzinfo is None:
                instant = instant.replace(tzinfo=zone) if zone else instant.astimezone()
        else:
            instant = datetime.now(zone).astimezone(zone)
            day_now, hhmm_now = instant.date().isoformat(), instant.strftime("%H:%M")
            if (date or day_now, hhmm or hhmm_now) != (day_now, hhmm_now):
                hour, minute = (hhmm or hhmm_now).split(":")
                then = datetime.fromisoformat(f"{date or day_now}T{hour}:{minute}")
                instant = then.replace(tzinfo=zone) if zone else then.astimezone()
            ts = instant.isoformat(timespec="seconds")
        local = instant.astimezone(zone)
    except (OverflowError, ValueError):  # 9999-12-31T23:59+00:00 is the year 10000 in Shanghai
        what = f'"ts" {ts!r}' if ts is not None else f"{date} {hhmm}"
        raise BadRequest(
            f"{what} falls outside the years 1 to 9999 in the local time zone"
        ) from None
    day = date if date is not None else local.date().isoformat()  # strftime: "1-01-01"
    return ts, day, hhmm if hhmm is not None else local.strftime("%H:%M")
