"""The parser's output record and the validation of explicit ``[start, end]`` day pairs.

``TimeWindow`` is what the time gate consumes, whether the window was parsed from the query
or given explicitly; ``parse_date_pair`` is the edge check for the explicit form.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, time

# What a resolver hands back: start day, end day, start time, end time (inclusive).
Days = tuple[date, date, time | None, time | None]


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """An inclusive window of local days; ``rest`` is the input without ``span``."""

    start: date
    end: date
    start_time: time | None = None
    end_time: time | None = None
    matched: str = ""
    span: tuple[int, int] = (0, 0)
    rest: str = ""
    time_only: bool = False

    def __post_init__(self) -> None:
        if self.start > self.end:
            raise ValueError(f"TimeWindow start {self.start} is after end {self.end}")

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form: ISO dates, ``HH:MM`` times (or None), span as a list."""

        def hhmm(value: time | None) -> str | None:
            return None if value is None else value.strftime("%H:%M")

        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "start_time": hhmm(self.start_time),
            "end_time": hhmm(self.end_time),
            "matched": self.matched,
            "span": [self.span[0], self.span[1]],
            "rest": self.rest,
            "time_only": self.time_only,
        }


def _iso_day(value: object, name: str) -> date:
    shape = "expected 'YYYY-MM-DD', e.g. '2026-07-24'"
    if not isinstance(value, str) or not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        raise ValueError(f"time_range {name} {value!r} is not a date; {shape}")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"time_range {name} {value!r} is not a calendar date; {shape}") from None


def parse_date_pair(start: str, end: str) -> tuple[date, date]:
    """Two ISO day strings -> dates; ValueError naming the bad value, or if start > end."""
    first, last = _iso_day(start, "start"), _iso_day(end, "end")
    if first > last:
        raise ValueError(f"time_range start {start!r} is after end {end!r}; expected start <= end")
    return first, last
