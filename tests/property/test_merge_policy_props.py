"""The vector cache's merge policy: every sequence of steps ends, ends within the policy, and
two machines holding the same files choose the same step."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem_watch.vectors.policy import MergePolicy, Step, next_step, tier

POLICIES = st.builds(
    MergePolicy,
    fanout=st.integers(2, 10),
    max_segment_fraction=st.floats(0.05, 1.0),
    max_dead_fraction=st.floats(0.05, 1.0),
)
GROUPS = st.lists(st.integers(0, 5000), min_size=1, max_size=40).map(
    lambda rows: [(f"g{i:03d}", n) for i, n in enumerate(rows)]
)


def _apply(
    groups: list[tuple[str, int]], dead: int, step: Step
) -> tuple[list[tuple[str, int]], int]:
    """A model of doing ``step``: a merge keeps its rows in one new group; a base rewrite
    keeps the live rows only."""
    chosen = set(step.names)
    rest = [g for g in groups if g[0] not in chosen]
    rows = sum(n for name, n in groups if name in chosen)
    if step.kind == "base":
        return [("base", max(rows - dead, 0))], 0
    return [*rest, ("m" + "+".join(step.names), rows)], dead


@settings(max_examples=300, deadline=None)
@given(GROUPS, st.integers(0, 20000), POLICIES)
def test_steps_end_and_leave_the_files_within_the_policy(
    groups: list[tuple[str, int]], dead: int, policy: MergePolicy
) -> None:
    dead = min(dead, sum(n for _, n in groups))
    for _ in range(len(groups) + 1):
        step = next_step(groups, dead, policy)
        if step is None:
            break
        names = {name for name, _ in groups}
        assert set(step.names) <= names and list(step.names) == sorted(step.names)
        assert step.kind == "base" or len(step.names) >= policy.fanout
        groups, dead = _apply(groups, dead, step)
    else:
        raise AssertionError("the policy kept asking for steps")
    ordered = sorted(groups, key=lambda g: (-g[1], g[0]))
    base_rows, segments = ordered[0][1], ordered[1:]
    assert dead <= policy.max_dead_fraction * base_rows
    assert not segments or sum(n for _, n in segments) <= policy.max_segment_fraction * base_rows
    per_tier: dict[int, int] = {}
    for _, rows in segments:
        per_tier[tier(rows, policy.fanout)] = per_tier.get(tier(rows, policy.fanout), 0) + 1
    assert all(count < policy.fanout for count in per_tier.values())


@settings(max_examples=200, deadline=None)
@given(GROUPS, st.integers(0, 20000), POLICIES, st.randoms(use_true_random=False))
def test_two_machines_listing_the_same_files_in_any_order_choose_the_same_step(
    groups: list[tuple[str, int]], dead: int, policy: MergePolicy, rnd: random.Random
) -> None:
    shuffled = list(groups)
    rnd.shuffle(shuffled)
    assert next_step(groups, dead, policy) == next_step(shuffled, dead, policy)
