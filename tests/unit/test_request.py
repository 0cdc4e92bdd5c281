"""Query validation at the edge: every number is typed, finite and in range, by name."""

from __future__ import annotations

import math
import re
from datetime import date

import pytest

from wikimem_watch.errors import BadRequest
from wikimem_watch.retrieval.request import MAX_TEXT_CHARS, QueryRequest


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ({"half_life_days": math.nan}, "half_life_days: expected a finite number"),
        ({"half_life_days": math.inf}, "half_life_days: expected a finite number"),
        ({"half_life_days": 0}, "half_life_days"),
        ({"half_life_days": -3}, "half_life_days"),
        ({"half_life_days": 1e12}, "half_life_days"),
        ({"half_life_days": "90"}, "half_life_days"),
        ({"weights": {"recency": math.nan}}, "weights.recency"),
        ({"weights": {"vector": math.inf}}, "weights.vector"),
        ({"weights": {"bm25": -math.inf}}, "weights.bm25"),
        ({"weights": {"bm25": 1e300}}, "weights.bm25"),
        ({"weights": {"bm25": True}}, "weights.bm25"),
        ({"k": math.nan}, "k: expected an integer"),
        ({"k": 10**30}, "k: expected an integer"),
        ({"k": 0}, "k: expected an integer"),
        ({"budget_tokens": 10**30}, "budget_tokens"),
        ({"budget_tokens": -1}, "budget_tokens"),
        ({"budget_tokens": 5.5}, "budget_tokens"),
    ],
)
def test_bad_numbers_are_refused_naming_the_field(extra: dict[str, object], needle: str) -> None:
    with pytest.raises(BadRequest, match=needle.replace(".", r"\.")) as info:
        QueryRequest.from_dict({"q": "ann", **extra})
    assert info.value.code == -32602


def test_nan_is_named_as_nan_in_the_message() -> None:
    with pytest.raises(BadRequest, match="NaN/Infinity are refused"):
        QueryRequest.from_dict({"q": "x", "half_life_days": math.nan})


def test_good_numbers_pass_unchanged() -> None:
    req = QueryRequest.from_dict(
        {"q": "x", "k": 3, "half_life_days": 7, "weights": {"recency": 0, "bm25": 2.5}}
    )
    assert req.k == 3 and req.half_life_days == 7.0
    assert req.weights == {"recency": 0.0, "bm25": 2.5}


def test_an_oversized_question_is_refused_and_the_message_stays_short() -> None:
    with pytest.raises(BadRequest) as info:
        QueryRequest.from_dict({"q": "x" * (MAX_TEXT_CHARS + 1)})
    assert len(info.value.message) < 200
    with pytest.raises(BadRequest) as info:
        QueryRequest.from_dict({"q": "x", "kinds": ["y" * 100_000]})
    assert len(info.value.message) < 300


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"q": "\ud800 dentist"}, '"q" is not valid text: a lone surrogate (U+D800)'),
        ({"q": "dentist", "tags": ["ok", "\udcff"]}, '"tags" is not valid text'),
        ({"q": "dentist", "tz": "Asia/\udcffShanghai"}, '"tz" is not valid text'),
        ({"q": "dentist", "time_range": "上周\udcff"}, '"time_range" is not valid text'),
    ],
)
def test_text_that_utf8_cannot_hold_is_refused_naming_the_field(
    fields: dict[str, object], needle: str
) -> None:
    with pytest.raises(BadRequest, match=re.escape(needle)):
        QueryRequest.from_dict(fields)


def test_a_range_with_a_third_part_is_refused() -> None:
    with pytest.raises(BadRequest, match="expected START..END"):
        QueryRequest.from_dict({"q": "x", "time_range": "2026-11-01..2026-11-07..garbage"})
    ok = QueryRequest.from_dict({"q": "x", "time_range": "2026-11-01..2026-11-07"})
    assert ok.time_range is not None and str(ok.time_range[1]) == "2026-11-07"  # type: ignore[index]


@pytest.mark.parametrize("tags", [[""], ["#"], ["plants", " "]])
def test_an_empty_tag_name_is_refused_not_a_silent_empty_result(tags: list[str]) -> None:
    with pytest.raises(BadRequest, match="empty tag name"):
        QueryRequest.from_dict({"q": "x", "tags": tags})


@pytest.mark.parametrize(
    "bad",
    [
        "2026-11-0199",
        "2026-11-01x",
        "2026-11-01 garbage",
        "2026-11-01T99",
        "2026-W44-7",
        "2026-W44-7T10:00",
    ],
)
def test_a_time_range_date_is_read_whole_not_by_its_first_ten_characters(bad: str) -> None:
    for value in ([bad, "2026-11-30"], f"{bad}..2026-11-30"):
        with pytest.raises(BadRequest, match=re.escape(f"time_range: {bad!r} is not a date")):
            QueryRequest.from_dict({"q": "x", "time_range": value})


def test_a_time_range_date_may_be_a_date_time_and_its_day_is_used() -> None:
    req = QueryRequest.from_dict({"q": "x", "time_range": ["2026-11-01T10:00", " 2026-11-02 "]})
    assert req.time_range == (date(2026, 11, 1), date(2026, 11, 2))
    req = QueryRequest.from_dict({"q": "x", "time_range": "2026-11-01T08:00Z..2026-11-02"})
    assert req.time_range == (date(2026, 11, 1), date(2026, 11, 2))


@pytest.mark.parametrize(
    "fields",
    [
        {"tz": "Mars/" + "x" * 50_000},
        {"tags": ["y" * 50_000, ""]},
        {"time_range": "z" * 50_000},
    ],
)
def test_a_refused_value_is_echoed_short_whatever_its_size(fields: dict[str, object]) -> None:
    from wikimem_watch.retrieval.gate import local_now, resolve_gate

    with pytest.raises(BadRequest) as info:  # tz and tags: here; time_range: when it is read
        req = QueryRequest.from_dict({"q": "x", **fields})
        resolve_gate(req, local_now(req))
    assert len(info.value.message) < 300


@pytest.mark.parametrize("path", ["../x", "..", "diary/../../etc", "..\\notes"])
def test_a_path_filter_that_leaves_the_vault_is_refused_not_answered_with_nothing(
    path: str,
) -> None:
    with pytest.raises(BadRequest, match="leads outside the vault"):
        QueryRequest.from_dict({"q": "x", "paths": [path]})
    assert QueryRequest.from_dict({"q": "x", "paths": ["diary/..x"]}).paths == ("diary/..x",)


def test_an_empty_time_zone_is_refused_not_read_as_the_local_one() -> None:
    with pytest.raises(BadRequest, match="tz: unknown time zone ''"):
        QueryRequest.from_dict({"q": "dentist", "tz": ""})
