"""When the vector cache merges files: size tiers for segments, rare rewrites of the base.

Pure functions over (name, rows) pairs, so the policy is testable without files (ADR-0005).

- The *base* is the largest group on disk; every other group is a *segment*.
- A segment's tier is ``floor(log_fanout(rows))``. When one tier holds ``fanout`` segments
  they merge into one (which lands a tier up): each row is rewritten once per tier, so an
  edit costs O(log(segment rows)) rows of writes, amortised, as in a size-tiered LSM tree.
- The base is rewritten (live rows only) when dead rows pass ``max_dead_fraction`` of it, or
  when all segments together pass ``max_segment_fraction`` of it: never on a count of files.
  Each rewrite of N rows follows at least a fraction × N rows of edits, so it too costs O(1)
  rows per edited row, amortised.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MergePolicy", "Step", "next_step", "tier"]


@dataclass(frozen=True, slots=True)
class MergePolicy:
    """The knobs; the defaults are measured in ``bench/cache_churn.py`` (ADR-0005)."""

    fanout: int = 8
    max_segment_fraction: float = 0.5
    max_dead_fraction: float = 0.25

    def __post_init__(self) -> None:
        if self.fanout < 2:
            raise ValueError(f"fanout={self.fanout!r}: expected an integer >= 2")
        for name in ("max_segment_fraction", "max_dead_fraction"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{name}={value!r}: expected a fraction in (0, 1]")


@dataclass(frozen=True, slots=True)
class Step:
    """``kind`` "base": rewrite every group into a new base of the live rows; "merge": merge
    the ``names`` (sorted, so two machines with the same files write the same bytes)."""

    kind: str
    names: tuple[str, ...]


def tier(rows: int, fanout: int) -> int:
    """``floor(log_fanout(rows))``, with 0 for 0 or 1 row (integer arithmetic, no floats)."""
    level, size = 0, fanout
    while rows >= size:
        level += 1
        size *= fanout
    return level


def next_step(
    groups: Sequence[tuple[str, int]],
    dead_rows: int,
    policy: MergePolicy,
    *,
    rewrite_base: bool = True,
) -> Step | None:
    """The next merge to do, or None when the files are within the policy.

    ``groups`` are (name, rows on disk); ``dead_rows`` counts rows on disk that no live entry
    needs (deleted or edited texts, duplicates across groups, rows that failed a checksum).
    ``rewrite_base`` False (another daemon rewrites it) asks for segment merges only.
    Apply the step and ask again: each step leaves fewer groups, so the loop ends.
    """
    if not groups:
        return None
    ordered = sorted(groups, key=lambda g: (-g[1], g[0]))
    _, base_rows = ordered[0]
    segments = ordered[1:]
    segment_rows = sum(rows for _, rows in segments)
    if rewrite_base and (
        dead_rows > policy.max_dead_fraction * base_rows
        or (segments and segment_rows > policy.max_segment_fraction * base_rows)
    ):
        return Step("base", tuple(sorted(name for name, _ in groups)))
    by_tier: dict[int, list[str]] = {}
    for name, rows in segments:
        by_tier.setdefault(tier(rows, policy.fanout), []).append(name)
    for level in sorted(by_tier):
        if len(by_tier[level]) >= policy.fanout:
            return Step("merge", tuple(sorted(by_tier[level])))
    return None
