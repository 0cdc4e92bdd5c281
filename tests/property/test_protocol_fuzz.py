"""A brief fuzz of the protocol path in CI: hostile bytes and hostile requests through
``decode_request`` and ``handle_line`` over a real engine (targets in
bench/fuzz_targets_protocol.py; run that script for a long fuzz)."""

from __future__ import annotations

import importlib.util
import json
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BENCH = Path(__file__).resolve().parents[2] / "bench" / "fuzz_targets_protocol.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fuzz_targets_protocol", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


FUZZ = _load()
_TMP = tempfile.TemporaryDirectory()
RUN: Callable[[bytes], None] = FUZZ.target_handle_line(FUZZ.make_service(Path(_TMP.name)))
BRIEF = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

numbers = (
    st.floats(allow_nan=True, allow_infinity=True)
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.sampled_from([math.nan, math.inf, -math.inf, 0, -1, 10**18])
)
scalars = st.none() | st.booleans() | numbers | st.text(max_size=30)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
query_fields = st.sampled_from(
    [
        "q",
        "k",
        "kinds",
        "paths",
        "tags",
        "time_range",
        "now",
        "tz",
        "parse_time",
        "expand_links",
        "budget_tokens",
        "explain",
        "weights",
        "half_life_days",
    ]
)
methods = st.sampled_from(
    ["query", "day", "days", "note", "links", "backlinks", "status", "hello", "nope", ""]
)


@BRIEF
@given(st.binary(max_size=300))
def test_arbitrary_bytes_get_one_strict_reply_and_no_internal_error(raw: bytes) -> None:
    FUZZ.target_decode(raw)
    RUN(raw)


@BRIEF
@given(
    methods,
    st.dictionaries(query_fields, values, max_size=5),
    st.one_of(st.none(), st.integers(), st.text(max_size=5)),
)
def test_hostile_params_are_refused_by_name_never_crash(
    method: str, params: dict[str, object], rid: object
) -> None:
    if method == "query":
        params.setdefault("q", "coffee")
    line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
    RUN(line.encode())


@BRIEF
@given(st.integers(min_value=1, max_value=20_000), st.sampled_from([b"[", b'{"a":', b'[{"b":']))
def test_any_nesting_depth_is_answered(depth: int, opener: bytes) -> None:
    RUN(opener * depth)
