"""parse_time_range never raises, and every window it returns is well formed."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem_watch.timeparse import core, parse_time_range

# Fragments that sit near the parser's edges: time words, their look-alikes, numbers.
WORDS = (
    "昨天 今天 前天 大前天 明天 后天 昨晚 今晚 今早 早上 下午 晚上 凌晨 中午 天 前 后 周 星期 礼拜 "
    "上 上上 下 这 本 个 月 年 日 号 末 一 二 两 三 十 十五 二十 以前 之前 以来 到 至 从 最近 马上 "
    "月亮 月饼 吃了什么 发生了什么 2021 2023 2024-02-29 2023/05/08 5 12 29 31 13 99 "
    "yesterday today tomorrow tonight last this next night morning evening week weekend month "
    "year ago days weeks day the before after between and from to in on during since May may "
    "March march Feb August Sept Monday Wednesday sunday school a three twenty-one , - ? 1st "
    "自从 以来 至今 开始 过去 最近 近 这 和 、 或 份 十月 10月 周到 先天 since ever past last "
    "or of early Good Friday Times October 's said"
).split()
fragments = st.one_of(
    st.sampled_from(WORDS),
    st.text(alphabet="0123456789-/年月日号周天 ", max_size=6),
    st.text(max_size=4),
)
texts = st.lists(fragments, max_size=12).flatmap(
    lambda parts: st.sampled_from(["", " "]).map(lambda sep: sep.join(parts))
)
nows = st.datetimes(min_value=datetime(1910, 1, 1), max_value=datetime(2190, 12, 31))


@settings(max_examples=400, deadline=None)
@given(text=texts, now=nows)
def test_parse_never_raises_and_windows_are_well_formed(text: str, now: datetime) -> None:
    found = parse_time_range(text, now=now)
    if found is None:
        return
    b, e = found.span
    assert 0 <= b < e <= len(text)
    assert found.start <= found.end
    assert text[b:e] == found.matched
    # The span cut out; a space where both sides are text, so no new word is glued together.
    glued = b == 0 or e == len(text) or text[b - 1].isspace() or text[e].isspace()
    assert found.rest == text[:b] + ("" if glued else " ") + text[e:]
    assert (found.start_time is None) == (found.end_time is None)


@settings(max_examples=200, deadline=None)
@given(day=st.dates(min_value=date(1900, 1, 1), max_value=date(2199, 12, 31)), now=nows)
def test_iso_dates_round_trip(day: date, now: datetime) -> None:
    found = parse_time_range(f"what happened on {day.isoformat()}?", now=now)
    assert found is not None
    assert (found.start, found.end, found.time_only) == (day, day, True)


@settings(max_examples=200, deadline=None)
@given(now=nows, n=st.integers(min_value=1, max_value=400))
def test_n_days_ago_is_that_one_day(now: datetime, n: int) -> None:
    for text in (f"{n}天前", f"{n} days ago"):
        found = parse_time_range(text, now=now)
        assert found is not None
        assert found.start == found.end == now.date() - timedelta(days=n)


@settings(max_examples=200, deadline=None)
@given(now=nows)
def test_weeks_run_monday_to_sunday(now: datetime) -> None:
    for text in ("上周", "this week", "2 weeks ago"):
        found = parse_time_range(text, now=now)
        assert found is not None
        assert found.start.weekday() == 0 and found.end - found.start == timedelta(days=6)


@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_skipped_rules_could_not_have_matched(text: str) -> None:
    # The needle prefilter is an optimisation only: a rule it skips has no match in the text.
    kept = {id(pattern) for pattern, _ in core._rules_for(text)}
    for pattern, _ in core.RULES:
        if id(pattern) not in kept:
            assert pattern.search(text) is None, pattern.pattern[:60]


@settings(max_examples=200, deadline=None)
@given(now=nows, n=st.integers(min_value=1, max_value=60))
def test_rolling_and_since_windows_end_today(now: datetime, n: int) -> None:
    today = now.date()
    for text, first in (
        (f"the past {n} days", today - timedelta(days=n - 1)),
        (f"过去{n}天", today - timedelta(days=n - 1)),
        (f"最近{n}周", today - timedelta(days=7 * n - 1)),
        ("since yesterday", today - timedelta(days=1)),
        ("自从上周以来", today - timedelta(days=today.weekday() + 7)),
    ):
        found = parse_time_range(text, now=now)
        assert found is not None, text
        assert (found.start, found.end) == (first, today), text


MONTHS = "January February March April May June July August September October November December"


@settings(max_examples=200, deadline=None)
@given(now=nows, month=st.integers(min_value=1, max_value=12))
def test_a_month_alone_is_the_most_recent_and_never_the_future(now: datetime, month: int) -> None:
    today = now.date()
    for text in (f"in {MONTHS.split()[month - 1]}", f"{month}月份"):
        found = parse_time_range(text, now=now)
        assert found is not None, text
        assert found.start.month == month and found.start.day == 1
        assert found.end <= today and today - found.start < timedelta(days=366)


@settings(max_examples=200, deadline=None)
@given(now=nows, first=st.integers(0, 6), gap=st.integers(1, 6))
def test_joined_weekdays_are_the_latest_span_not_after_today(
    now: datetime, first: int, gap: int
) -> None:
    names = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
    found = parse_time_range(f"{names[first]}和{names[(first + gap) % 7]}", now=now)
    assert found is not None
    assert found.start.weekday() == first and found.end - found.start == timedelta(days=gap)
    assert found.end <= now.date() < found.end + timedelta(days=7)


@settings(max_examples=200, deadline=None)
@given(now=nows, day=st.integers(min_value=1, max_value=31))
def test_a_day_of_the_month_alone_is_this_or_last_month_s_and_never_the_future(
    now: datetime, day: int
) -> None:
    today = now.date()
    found = parse_time_range(f"{day}号那天", now=now)
    if found is None:  # no such day in the last month, and this month's is ahead
        assert day > today.day
        return
    assert found.start == found.end and found.start.day == day
    assert found.end <= today and today - found.start < timedelta(days=62)


@settings(max_examples=200, deadline=None)
@given(now=nows, month=st.integers(1, 12), n1=st.integers(1, 5), n2=st.integers(1, 5))
def test_a_range_of_weeks_of_a_month_is_the_span_of_its_two_weeks_or_none(
    now: datetime, month: int, n1: int, n2: int
) -> None:
    first = parse_time_range(f"{month}月第{n1}周", now=now)
    last = parse_time_range(f"{month}月第{n2}周", now=now)
    found = parse_time_range(f"{month}月第{n1}周到第{n2}周", now=now)
    if first is None or last is None or last.start < first.start:
        assert found is None
        return
    assert found is not None and (found.start, found.end) == (first.start, last.end)


@settings(max_examples=200, deadline=None)
@given(now=nows, d1=st.integers(1, 31), d2=st.integers(1, 31))
def test_two_days_of_the_month_alone_are_one_month_s_span_never_ahead_or_reversed(
    now: datetime, d1: int, d2: int
) -> None:
    today = now.date()
    found = parse_time_range(f"{d1}号到{d2}号", now=now)
    alone = parse_time_range(f"{d2}号那天", now=now)  # the later day's own rule
    if found is None:
        assert d1 > d2 or alone is None
        return
    assert alone is not None and found.end == alone.start
    assert (found.start.day, found.end.day) == (d1, d2)
    assert found.start.month == found.end.month and found.start <= found.end <= today
