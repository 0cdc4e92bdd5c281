"""The zh/en time-expression fast path: exact windows, negatives, span/rest/time_only."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone

import pytest

from wikimem_watch.timeparse import TimeWindow, find_session, parse_date_pair, parse_time_range

FRI = datetime(2026, 7, 24, 15, 0)  # the default reference: a Friday afternoon
MON = datetime(2026, 7, 20, 9, 0)  # Monday: "this week" starts today
SUN = datetime(2026, 7, 26, 20, 0)  # Sunday: "this week" ends today
NEW_YEAR = datetime(2026, 1, 1, 0, 5)  # just after midnight, a Thursday: year/month/week edges
LEAP = datetime(2024, 3, 1, 10, 0)  # the day after a leap day
NON_LEAP = datetime(2025, 3, 1, 10, 0)  # a Saturday in a non-leap March
WED = datetime(2026, 7, 22, 9, 0)  # Wednesday: "周三和周四" cannot be this week's yet
MONTH_END = datetime(2026, 5, 31, 12, 0)  # the 31st: "the past 3 months" clamps Feb 31

MORNING, NOON = (time(6), time(12)), (time(11), time(14))
AFTERNOON, EVENING, SMALL_HOURS = (time(12), time(18)), (time(18), time(23, 59)), (time(0), time(6))

Row = tuple[str, str, datetime, str, str, tuple[time, time] | None]


def _case(
    case_id: str,
    text: str,
    start: str,
    end: str | None = None,
    times: tuple[time, time] | None = None,
    now: datetime = FRI,
) -> object:
    return pytest.param(text, now, start, end or start, times, id=case_id)


POSITIVE = [
    # --- Chinese relative days and times of day (now: Friday 2026-07-24 15:00)
    _case("zh-today", "今天", "2026-07-24"),
    _case("zh-yesterday", "昨天", "2026-07-23"),
    _case("zh-day-before-yesterday", "前天", "2026-07-22"),
    _case("zh-three-days-back", "大前天", "2026-07-21"),
    _case("zh-tomorrow", "明天", "2026-07-25"),
    _case("zh-day-after-tomorrow", "后天", "2026-07-26"),
    _case("zh-three-days-ahead", "大后天", "2026-07-27"),
    _case("zh-yesterday-literary", "昨日", "2026-07-23"),
    _case("zh-today-in-phrase", "今天的我很开心", "2026-07-24"),
    _case("zh-last-night", "昨晚", "2026-07-23", times=EVENING),
    _case("zh-last-night-literary", "昨夜", "2026-07-23", times=EVENING),
    _case("zh-tonight", "今晚吃什么", "2026-07-24", times=EVENING),
    _case("zh-this-morning-short", "今早", "2026-07-24", times=MORNING),
    _case("zh-tomorrow-morning-short", "明早", "2026-07-25", times=MORNING),
    _case("zh-this-morning", "今天早上", "2026-07-24", times=MORNING),
    _case("zh-yesterday-forenoon", "昨天上午吃了什么", "2026-07-23", times=MORNING),
    _case("zh-yesterday-noon", "昨天中午", "2026-07-23", times=NOON),
    _case("zh-yesterday-afternoon", "昨天下午", "2026-07-23", times=AFTERNOON),
    _case("zh-yesterday-evening", "昨天晚上", "2026-07-23", times=EVENING),
    _case("zh-today-small-hours", "今天凌晨", "2026-07-24", times=SMALL_HOURS),
    # --- Chinese "N units ago"
    _case("zh-3-days-ago-cn", "三天前", "2026-07-21"),
    _case("zh-3-days-ago-digit", "3天前", "2026-07-21"),
    _case("zh-2-days-ago-liang", "两天前", "2026-07-22"),
    _case("zh-1-day-ago", "一天前", "2026-07-23"),
    _case("zh-15-days-ago", "十五天前", "2026-07-09"),
    _case("zh-20-days-ago", "二十天前", "2026-07-04"),
    _case("zh-23-days-ago", "二十三天前", "2026-07-01"),
    _case("zh-30-days-ago-yiqian", "30天以前", "2026-06-24"),
    _case("zh-1-week-ago", "1周前", "2026-07-13", "2026-07-19"),
    _case("zh-2-weeks-ago", "两周前", "2026-07-06", "2026-07-12"),
    _case("zh-3-xingqi-ago", "三个星期前", "2026-06-29", "2026-07-05"),
    _case("zh-2-libai-ago", "两个礼拜前", "2026-07-06", "2026-07-12"),
    _case("zh-3-months-ago", "3个月前", "2026-04-01", "2026-04-30"),
    _case("zh-2-years-ago", "两年前", "2024-01-01", "2024-12-31"),
    _case("zh-10-years-ago", "十年前", "2016-01-01", "2016-12-31"),
    # --- Chinese weeks (Monday to Sunday)
    _case("zh-last-week", "上周", "2026-07-13", "2026-07-19"),
    _case("en-the-days-from-to", "the days from May 3 to May 5", "2026-05-03", "2026-05-05"),
    _case("en-the-week-of", "what did I eat the week of July 20", "2026-07-20", "2026-07-26"),
    _case("en-the-week-of-dated", "The week of May 3, 2026", "2026-04-27", "2026-05-03"),
    _case("en-a-week-of-is-the-day", "a week of July 4 fireworks", "2026-07-04"),
    # --- a week counted within a month: days 7N-6..7N, the last week its final seven days;
    # a month without a year is the most recent not in the future, and this one ends today
    _case("en-first-week-of", "the first week of May", "2026-05-01", "2026-05-07"),
    _case("en-first-week-of-no-article", "first week of May", "2026-05-01", "2026-05-07"),
    _case("en-second-week-of-this-month", "the second week of July", "2026-07-08", "2026-07-14"),
    _case("en-third-week-in", "what did I do the third week in July", "2026-07-15", "2026-07-21"),
    _case("en-fourth-week-ends-today", "the fourth week of July", "2026-07-22", "2026-07-24"),
    _case("en-2nd-week-last-year", "the 2nd week of November", "2025-11-08", "2025-11-14"),
    _case("en-fifth-week", "the fifth week of May", "2026-05-29", "2026-05-31"),
    _case("en-last-week-of", "the last week of August", "2025-08-25", "2025-08-31"),
    _case("en-last-week-of-no-article", "last week of August", "2025-08-25", "2025-08-31"),
    _case("en-the-last-week-in", "the last week in June", "2026-06-24", "2026-06-30"),
    _case("en-last-week-in", "last week in June", "2026-06-24", "2026-06-30"),
    _case("en-last-week-in-a-place", "last week in the office", "2026-07-13", "2026-07-19"),
    _case("en-the-last-week-in-a-place", "the last week in Paris", "2026-07-18", "2026-07-24"),
    _case("en-final-week-of-feb", "the final week of February", "2026-02-22", "2026-02-28"),
    _case("en-last-week-of-last-month", "the last week of last month", "2026-06-24", "2026-06-30"),
    _case("en-week-of-dated-month", "the first week of May 2023", "2023-05-01", "2023-05-07"),
    _case("en-month-s-week", "July's second week", "2026-07-08", "2026-07-14"),
    _case("en-last-month-s-week", "last month's first week", "2026-06-01", "2026-06-07"),
    _case("zh-second-week-of-july", "7月第二周", "2026-07-08", "2026-07-14"),
    _case("zh-first-xingqi-of-july", "七月的第一个星期", "2026-07-01", "2026-07-07"),
    _case("zh-last-week-of-may", "5月最后一周", "2026-05-25", "2026-05-31"),
    _case("zh-last-xingqi-of-may", "5月的最后一个星期", "2026-05-25", "2026-05-31"),
    _case("zh-third-libai-last-month", "上个月的第三个礼拜", "2026-06-15", "2026-06-21"),
    _case("zh-week-of-last-year-s-month", "去年7月第二周", "2025-07-08", "2025-07-14"),
    _case("zh-week-of-dated-month", "2023年5月第1周", "2023-05-01", "2023-05-07"),
    _case("zh-week-of-a-future-month", "11月第二周", "2025-11-08", "2025-11-14"),
    _case("en-since-a-week-of", "since the second week of July", "2026-07-08", "2026-07-24"),
    _case("zh-since-a-week-of", "7月第二周以来", "2026-07-08", "2026-07-24"),
    _case("zh-from-a-week-of-to-now", "从7月第二周到现在", "2026-07-08", "2026-07-24"),
    _case("zh-range-to-a-week-of", "从6月到7月第二周", "2026-06-01", "2026-07-14"),
    _case("zh-range-from-a-week-of", "从5月第一周到6月", "2026-05-01", "2026-06-30"),
    _case("zh-that-week", "7月20号那一周吃了什么", "2026-07-20", "2026-07-26"),
    _case("zh-that-week-xingqi", "7月20日的那个星期", "2026-07-20", "2026-07-26"),
    _case("zh-that-weeks-wednesday-is-the-day", "7月20日那周三", "2026-07-20"),
    _case("en-weekday-before-last", "Friday before last", "2026-07-10"),  # was today
    _case("zh-yesterday-went-to", "昨天前往北京", "2026-07-23"),  # 前往: not "before"
    _case("zh-yesterday-front-desk", "昨天前台的人很热情", "2026-07-23"),
    _case("en-the-weekday-before-last", "what did I cook the Sunday before last", "2026-07-12"),
    # today's date in a period: "on this day" of a year, a month or a week ago
    _case("zh-this-day-last-year", "去年的今天我在干嘛", "2025-07-24"),
    _case("zh-this-day-a-year-ago", "一年前的今天", "2025-07-24"),
    _case("zh-this-day-last-month", "上个月的今天", "2026-06-24"),
    _case("zh-this-day-last-week", "上周的今天", "2026-07-17"),
    _case("en-a-year-ago-today", "what did I write a year ago today", "2025-07-24"),
    _case("en-this-day-last-year", "on this day last year", "2025-07-24"),
    _case("en-a-month-ago-today", "a month ago today", "2026-06-24"),
    _case(
        "zh-this-day-of-a-shorter-month",
        "上个月的今天",
        "2026-02-28",
        now=datetime(2026, 3, 31, 9, 0),
    ),
    _case(
        "zh-this-day-of-a-leap-year", "去年的今天", "2027-02-28", now=datetime(2028, 2, 29, 9, 0)
    ),
    _case("en-yesterday-comma-today-is-both", "yesterday, today", "2026-07-23", "2026-07-24"),
    _case("en-a-span-then-today-is-the-span", "the past 3 days today", "2026-07-22", "2026-07-24"),
    _case(
        "en-a-period-then-a-clause-of-today",
        "I was sick last week, today I feel better",
        "2026-07-13",
        "2026-07-19",
    ),
    _case("zh-last-week-then-fell-for", "上周我爱上了爬山", "2026-07-13", "2026-07-19"),
    _case("zh-read-last-weeks-report", "我看上周的报告", "2026-07-13", "2026-07-19"),
    _case("zh-last-week-gexingqi", "上个星期", "2026-07-13", "2026-07-19"),
    _case("zh-last-week-libai", "上礼拜", "2026-07-13", "2026-07-19"),
    _case("zh-last-week-gelibai", "上个礼拜", "2026-07-13", "2026-07-19"),
    _case("zh-last-week-xingqi", "上星期", "2026-07-13", "2026-07-19"),
    _case("zh-week-before-last", "上上周", "2026-07-06", "2026-07-12"),
    _case("zh-this-week-ben", "本周", "2026-07-20", "2026-07-26"),
    _case("zh-this-week-zhe", "这周", "2026-07-20", "2026-07-26"),
    _case("zh-this-week-gexingqi", "这个星期", "2026-07-20", "2026-07-26"),
    _case("zh-next-week", "下周", "2026-07-27", "2026-08-02"),
    _case("zh-last-wednesday", "上周三吃了什么", "2026-07-15"),
    _case("zh-this-monday-ben", "本周一", "2026-07-20"),
    _case("zh-this-tuesday-zhe", "这周二", "2026-07-21"),
    _case("zh-last-sunday-ri", "上周日", "2026-07-19"),
    _case("zh-last-sunday-tian", "上个星期天", "2026-07-19"),
    _case("zh-last-weekend", "上周末", "2026-07-18", "2026-07-19"),
    _case("zh-this-weekend", "这周末", "2026-07-25", "2026-07-26"),
    _case("zh-last-wednesday-evening", "上周三晚上", "2026-07-15", times=EVENING),
    _case("zh-next-wednesday", "下周三", "2026-07-29"),
    _case("zh-last-week-mon-to-wed", "上周一到周三", "2026-07-13", "2026-07-15"),
    _case("zh-last-week-yigong-is-not-monday", "上周一共跑了三次", "2026-07-13", "2026-07-19"),
    _case("zh-last-week-diary-is-not-sunday", "上周日记", "2026-07-13", "2026-07-19"),
    # --- Chinese bare weekdays: the most recent one, today included
    _case("zh-wednesday", "周三", "2026-07-22"),
    _case("zh-friday-is-today", "周五", "2026-07-24"),
    _case("zh-saturday-is-last", "周六", "2026-07-18"),
    _case("zh-sunday-xingqitian", "星期天", "2026-07-19"),
    _case("zh-sunday-zhouri", "周日", "2026-07-19"),
    _case("zh-monday-libai", "礼拜一", "2026-07-20"),
    _case("zh-wednesday-evening", "周三晚上", "2026-07-22", times=EVENING),
    # --- Chinese months and years
    _case("zh-last-month", "上个月", "2026-06-01", "2026-06-30"),
    _case("zh-last-month-short", "上月", "2026-06-01", "2026-06-30"),
    _case("zh-this-month", "这个月", "2026-07-01", "2026-07-31"),
    _case("zh-this-month-ben", "本月", "2026-07-01", "2026-07-31"),
    _case("zh-this-month-zhe", "这月", "2026-07-01", "2026-07-31"),
    _case("zh-next-month", "下个月", "2026-08-01", "2026-08-31"),
    _case("zh-month-before-last", "上上个月", "2026-05-01", "2026-05-31"),
    _case("zh-last-month-15-hao", "上个月15号", "2026-06-15"),
    _case("zh-last-month-15-ri", "上个月15日", "2026-06-15"),
    _case("zh-this-month-3-hao", "本月3号", "2026-07-03"),
    _case("zh-last-month-30-cn", "上个月三十号", "2026-06-30"),
    _case("zh-last-year", "去年", "2025-01-01", "2025-12-31"),
    _case("zh-this-year", "今年", "2026-01-01", "2026-12-31"),
    _case("zh-year-before-last", "前年", "2024-01-01", "2024-12-31"),
    _case("zh-three-years-back", "大前年", "2023-01-01", "2023-12-31"),
    _case("zh-next-year", "明年", "2027-01-01", "2027-12-31"),
    _case("zh-last-year-trip", "去年的旅行", "2025-01-01", "2025-12-31"),
    # --- Chinese absolute dates
    _case("zh-may-3-hao", "5月3号", "2026-05-03"),
    _case("zh-may-3-ri", "5月3日", "2026-05-03"),
    _case("zh-may-3-cn", "五月三日", "2026-05-03"),
    _case("zh-dec-25-is-last-year", "12月25日", "2025-12-25"),
    _case("zh-dec-25-cn", "十二月二十五号", "2025-12-25"),
    _case("zh-month-day-today", "7月24日", "2026-07-24"),
    _case("zh-month-day-tomorrow-is-last-year", "7月25日", "2025-07-25"),
    _case("zh-feb-29-no-year", "2月29日", "2024-02-29"),
    _case("zh-full-date", "2023年5月3日", "2023-05-03"),
    _case("zh-full-date-hao", "2023年5月3号发生了什么", "2023-05-03"),
    _case("zh-full-date-evening", "2023年5月3日晚上", "2023-05-03", times=EVENING),
    _case("zh-year-month", "2023年5月", "2023-05-01", "2023-05-31"),
    _case("zh-year", "2021年", "2021-01-01", "2021-12-31"),
    _case("zh-leap-february", "2024年2月", "2024-02-01", "2024-02-29"),
    _case("zh-plain-february", "2023年2月", "2023-02-01", "2023-02-28"),
    _case("zh-leap-day", "2024年2月29日", "2024-02-29"),
    _case("zh-range", "5月3日到5月5日", "2026-05-03", "2026-05-05"),
    _case("zh-range-cong-bare-day", "从2023年5月3日到5日", "2023-05-03", "2023-05-05"),
    # --- ISO dates
    _case("iso-dash", "2023-05-08", "2023-05-08"),
    _case("iso-slash", "2023/05/08", "2023-05-08"),
    _case("iso-short", "2023-5-8", "2023-05-08"),
    _case("iso-leap-day", "2024-02-29", "2024-02-29"),
    _case("iso-in-zh-text", "日记2023-05-08的内容", "2023-05-08"),
    _case("iso-range-to", "2023-08-11 to 2023-08-15", "2023-08-11", "2023-08-15"),
    _case("iso-range-dao", "2023-08-11到2023-08-15", "2023-08-11", "2023-08-15"),
    # --- English relative days and times of day
    _case("en-today", "today", "2026-07-24"),
    _case("en-yesterday", "yesterday", "2026-07-23"),
    _case("en-yesterday-caps", "YESTERDAY", "2026-07-23"),
    _case("en-yesterday-possessive", "yesterday's lunch", "2026-07-23"),
    _case("en-tomorrow", "tomorrow", "2026-07-25"),
    _case("en-day-before-yesterday", "the day before yesterday", "2026-07-22"),
    _case("en-day-after-tomorrow", "day after tomorrow", "2026-07-26"),
    _case("en-last-night", "last night", "2026-07-23", times=EVENING),
    _case("en-tonight", "tonight", "2026-07-24", times=EVENING),
    _case("en-this-morning", "what did I do this morning", "2026-07-24", times=MORNING),
    _case("en-this-afternoon", "this afternoon", "2026-07-24", times=AFTERNOON),
    _case("en-this-evening", "this evening", "2026-07-24", times=EVENING),
    _case("en-yesterday-morning", "yesterday morning", "2026-07-23", times=MORNING),
    _case("en-yesterday-afternoon", "yesterday afternoon", "2026-07-23", times=AFTERNOON),
    _case("en-yesterday-evening", "yesterday evening", "2026-07-23", times=EVENING),
    _case("en-question", "What did I eat yesterday?", "2026-07-23"),
    # --- English "N units ago"
    _case("en-3-days-ago", "3 days ago", "2026-07-21"),
    _case("en-three-days-ago", "three days ago", "2026-07-21"),
    _case("en-a-day-ago", "a day ago", "2026-07-23"),
    _case("en-twenty-one-days-ago", "twenty-one days ago", "2026-07-03"),
    _case("en-2-weeks-ago", "2 weeks ago", "2026-07-06", "2026-07-12"),
    _case("en-a-week-ago", "a week ago", "2026-07-13", "2026-07-19"),
    _case("en-two-months-ago", "two months ago", "2026-05-01", "2026-05-31"),
    _case("en-one-year-ago", "one year ago", "2025-01-01", "2025-12-31"),
    # --- English weeks, months, years, weekdays
    _case("en-last-week", "last week", "2026-07-13", "2026-07-19"),
    _case("en-this-week", "this week", "2026-07-20", "2026-07-26"),
    _case("en-next-week", "next week", "2026-07-27", "2026-08-02"),
    _case("en-last-weekend", "last weekend", "2026-07-18", "2026-07-19"),
    _case("en-this-weekend", "this weekend", "2026-07-25", "2026-07-26"),
    _case("en-week-before-last", "the week before last", "2026-07-06", "2026-07-12"),
    _case("en-last-month", "last month", "2026-06-01", "2026-06-30"),
    _case("en-this-month", "this month", "2026-07-01", "2026-07-31"),
    _case("en-last-year", "last year", "2025-01-01", "2025-12-31"),
    _case("en-this-year", "this year", "2026-01-01", "2026-12-31"),
    _case("en-last-wednesday", "what did I eat last Wednesday", "2026-07-15"),
    _case("en-this-monday", "this Monday", "2026-07-20"),
    _case("en-this-sunday-future", "this Sunday", "2026-07-26"),
    _case("en-on-wednesday", "on Wednesday", "2026-07-22"),
    _case("en-friday-is-today", "Friday", "2026-07-24"),
    _case("en-saturday-is-last", "saturday", "2026-07-18"),
    _case("en-last-friday-night", "last Friday night", "2026-07-17", times=EVENING),
    _case("en-monday-morning", "Monday morning", "2026-07-20", times=MORNING),
    # --- English absolute dates and ranges
    _case("en-july-21", "July 21", "2026-07-21"),
    _case("en-21-july", "21 July", "2026-07-21"),
    _case("en-july-21st", "July 21st", "2026-07-21"),
    _case("en-the-21st-of-july", "on the 21st of July", "2026-07-21"),
    _case("en-july-4th-lower", "july 4th", "2026-07-04"),
    _case("en-may-3-comma-year", "May 3, 2023", "2023-05-03"),
    _case("en-on-may-3", "on May 3", "2026-05-03"),
    _case("en-9-november-comma-year", "9 November, 2022", "2022-11-09"),
    _case("en-nov-9-year", "Nov 9 2022", "2022-11-09"),
    _case("en-sept-abbrev", "Sept 3 2023", "2023-09-03"),
    _case("en-weekday-prefixed", "Wednesday, May 3, 2023", "2023-05-03"),
    _case("en-dec-25-is-last-year", "Dec 25", "2025-12-25"),
    _case("en-feb-29-no-year", "Feb 29", "2024-02-29"),
    _case("en-in-august-2023", "in August 2023", "2023-08-01", "2023-08-31"),
    _case("en-august-2023", "August 2023", "2023-08-01", "2023-08-31"),
    _case("en-lower-march-with-year", "march 2023", "2023-03-01", "2023-03-31"),
    _case("en-lower-on-march-10", "what did we do on march 10", "2026-03-10"),
    _case("en-lower-may-3rd", "may 3rd dinner", "2026-05-03"),
    _case("en-lower-it-may-3", "was it may 3 when we met", "2026-05-03"),
    _case("en-lower-and-may-3", "lunch with ann and may 3", "2026-05-03"),
    _case("en-in-2021", "I went hiking in 2021", "2021-01-01", "2021-12-31"),
    _case("en-during-2019", "during 2019", "2019-01-01", "2019-12-31"),
    _case(
        "en-between-and",
        "between August 11 and August 15 2023",
        "2023-08-11",
        "2023-08-15",
    ),
    _case("en-from-to", "from July 1 to July 5", "2026-07-01", "2026-07-05"),
    _case("en-day-range", "August 11-15, 2023", "2023-08-11", "2023-08-15"),
    _case("en-range-across-new-year", "Dec 28 to Jan 3", "2025-12-28", "2026-01-03"),
    _case("en-iso-in-question", "What did I do on 2023-05-08?", "2023-05-08"),
    # --- Monday edge (now: Monday 2026-07-20)
    _case("mon-zh-last-week", "上周", "2026-07-13", "2026-07-19", now=MON),
    _case("mon-en-this-week", "this week", "2026-07-20", "2026-07-26", now=MON),
    _case("mon-zh-monday-is-today", "周一", "2026-07-20", now=MON),
    _case("mon-zh-sunday-is-yesterday", "周日", "2026-07-19", now=MON),
    _case("mon-en-last-monday", "last Monday", "2026-07-13", now=MON),
    _case("mon-en-this-sunday", "this Sunday", "2026-07-26", now=MON),
    _case("mon-zh-yesterday", "昨天", "2026-07-19", now=MON),
    _case("mon-en-last-weekend", "last weekend", "2026-07-18", "2026-07-19", now=MON),
    # --- Sunday edge (now: Sunday 2026-07-26)
    _case("sun-zh-this-week", "本周", "2026-07-20", "2026-07-26", now=SUN),
    _case("sun-zh-last-week", "上周", "2026-07-13", "2026-07-19", now=SUN),
    _case("sun-zh-sunday-is-today", "周日", "2026-07-26", now=SUN),
    _case("sun-en-sunday-is-today", "sunday", "2026-07-26", now=SUN),
    _case("sun-zh-this-weekend", "这周末", "2026-07-25", "2026-07-26", now=SUN),
    _case("sun-en-last-weekend", "last weekend", "2026-07-18", "2026-07-19", now=SUN),
    _case("sun-zh-tomorrow", "明天", "2026-07-27", now=SUN),
    # --- just after midnight on New Year's Day (a Thursday)
    _case("ny-zh-yesterday", "昨天", "2025-12-31", now=NEW_YEAR),
    _case("ny-zh-last-night", "昨晚", "2025-12-31", times=EVENING, now=NEW_YEAR),
    _case("ny-en-last-night", "last night", "2025-12-31", times=EVENING, now=NEW_YEAR),
    _case("ny-zh-last-month", "上个月", "2025-12-01", "2025-12-31", now=NEW_YEAR),
    _case("ny-en-last-month", "last month", "2025-12-01", "2025-12-31", now=NEW_YEAR),
    _case("ny-zh-month-before-last", "上上个月", "2025-11-01", "2025-11-30", now=NEW_YEAR),
    _case("ny-en-this-month", "this month", "2026-01-01", "2026-01-31", now=NEW_YEAR),
    _case("ny-zh-last-year", "去年", "2025-01-01", "2025-12-31", now=NEW_YEAR),
    _case("ny-en-this-year", "this year", "2026-01-01", "2026-12-31", now=NEW_YEAR),
    _case("ny-zh-last-week", "上周", "2025-12-22", "2025-12-28", now=NEW_YEAR),
    _case("ny-en-this-week-spans-years", "this week", "2025-12-29", "2026-01-04", now=NEW_YEAR),
    _case("ny-en-2-weeks-ago", "2 weeks ago", "2025-12-15", "2025-12-21", now=NEW_YEAR),
    _case("ny-zh-dec-31", "12月31日", "2025-12-31", now=NEW_YEAR),
    _case("ny-en-jan-1-is-today", "Jan 1", "2026-01-01", now=NEW_YEAR),
    _case("ny-en-jan-2-is-last-year", "Jan 2", "2025-01-02", now=NEW_YEAR),
    _case("ny-zh-3-days-ago", "三天前", "2025-12-29", now=NEW_YEAR),
    _case("ny-zh-last-month-31", "上个月31号", "2025-12-31", now=NEW_YEAR),
    # --- leap years (now: 2024-03-01, and 2025-03-01 with no Feb 29 in its year)
    _case("leap-zh-yesterday-is-feb-29", "昨天", "2024-02-29", now=LEAP),
    _case("leap-en-yesterday", "yesterday", "2024-02-29", now=LEAP),
    _case("leap-zh-last-month", "上个月", "2024-02-01", "2024-02-29", now=LEAP),
    _case("leap-zh-last-month-29", "上个月29号", "2024-02-29", now=LEAP),
    _case("leap-zh-feb-29", "2月29日", "2024-02-29", now=LEAP),
    _case("leap-en-feb-29", "Feb 29", "2024-02-29", now=LEAP),
    _case("leap-zh-last-week", "上周", "2024-02-19", "2024-02-25", now=LEAP),
    _case("nonleap-zh-yesterday", "昨天", "2025-02-28", now=NON_LEAP),
    _case("nonleap-zh-last-month", "上个月", "2025-02-01", "2025-02-28", now=NON_LEAP),
    _case("nonleap-en-feb-29-looks-back", "Feb 29", "2024-02-29", now=NON_LEAP),
    _case("nonleap-zh-last-week", "上周", "2025-02-17", "2025-02-23", now=NON_LEAP),
    _case("nonleap-en-this-week", "this week", "2025-02-24", "2025-03-02", now=NON_LEAP),
    # --- a month without a year: the most recent one, the current month ends today
    _case("en-in-october", "what did I do in October", "2025-10-01", "2025-10-31"),
    _case("en-during-october", "during October", "2025-10-01", "2025-10-31"),
    _case("en-early-october", "in early October", "2025-10-01", "2025-10-31"),
    _case("en-mid-october", "mid-October", "2025-10-01", "2025-10-31"),
    _case("en-late-oct-abbrev", "late Oct", "2025-10-01", "2025-10-31"),
    _case("en-end-of-october", "at the end of October", "2025-10-01", "2025-10-31"),
    _case("en-in-june", "in June", "2026-06-01", "2026-06-30"),
    _case("en-in-july-is-this-month", "in July", "2026-07-01", "2026-07-24"),
    _case("en-in-august-is-last-year", "in August", "2025-08-01", "2025-08-31"),
    _case("en-in-may-capitalised", "in May", "2026-05-01", "2026-05-31"),
    _case("en-in-march-capitalised", "In March we moved", "2026-03-01", "2026-03-31"),
    _case("en-last-october", "last October", "2025-10-01", "2025-10-31"),
    _case("en-last-july-is-a-year-ago", "last July", "2025-07-01", "2025-07-31"),
    _case("en-this-october-names-this-year", "this October", "2026-10-01", "2026-10-31"),
    _case("en-this-march", "this March", "2026-03-01", "2026-03-31"),
    # a month with its year named after it: that year's, not the most recent such month
    _case("en-in-july-last-year", "in July last year", "2025-07-01", "2025-07-31"),
    _case("en-in-march-last-year", "what did we do in March last year", "2025-03-01", "2025-03-31"),
    _case("en-march-of-this-year", "March of this year", "2026-03-01", "2026-03-31"),
    _case("en-since-july-last-year", "since July last year", "2025-07-01", "2026-07-24"),
    _case("en-a-verb-may-before-last-year", "I may last year", "2025-01-01", "2025-12-31"),
    _case("en-a-day-last-year", "on July 4 last year", "2025-07-04"),
    _case("en-a-day-of-last-year", "the 3rd of May, last year", "2025-05-03"),
    _case("en-a-day-next-year", "May 3 next year", "2027-05-03"),
    _case("en-a-range-last-year", "between 1 and 3 May last year", "2025-05-01", "2025-05-03"),
    _case("zh-october-cn", "十月", "2025-10-01", "2025-10-31"),
    _case("zh-october-digits", "10月", "2025-10-01", "2025-10-31"),
    _case("zh-october-fen", "10月份的账单", "2025-10-01", "2025-10-31"),
    _case("zh-june", "六月", "2026-06-01", "2026-06-30"),
    _case("zh-july-is-this-month", "7月", "2026-07-01", "2026-07-24"),
    _case("zh-last-year-october", "去年10月", "2025-10-01", "2025-10-31"),
    _case("zh-this-year-march", "今年三月份", "2026-03-01", "2026-03-31"),
    _case("zh-last-year-may-3", "去年5月3日", "2025-05-03"),
    _case("ny-en-in-december", "in December", "2025-12-01", "2025-12-31", now=NEW_YEAR),
    _case("ny-en-in-january-is-today", "in January", "2026-01-01", now=NEW_YEAR),
    _case("ny-en-last-december", "last December", "2025-12-01", "2025-12-31", now=NEW_YEAR),
    _case("ny-zh-december", "十二月", "2025-12-01", "2025-12-31", now=NEW_YEAR),
    _case("ny-zh-last-year-december", "去年十二月", "2025-12-01", "2025-12-31", now=NEW_YEAR),
    _case("leap-en-in-february", "in February", "2024-02-01", "2024-02-29", now=LEAP),
    # --- rolling periods: today and the N-1 days before it (weeks are 7N days)
    _case("en-past-3-days", "the past 3 days", "2026-07-22", "2026-07-24"),
    _case("en-last-3-days", "the last 3 days", "2026-07-22", "2026-07-24"),
    _case("en-in-the-last-three-days", "in the last three days", "2026-07-22", "2026-07-24"),
    _case("en-past-10-days-no-article", "past 10 days", "2026-07-15", "2026-07-24"),
    _case("en-past-week", "past week", "2026-07-18", "2026-07-24"),
    _case("en-over-the-past-week", "over the past week", "2026-07-18", "2026-07-24"),
    _case("en-the-last-week-is-rolling", "the last week", "2026-07-18", "2026-07-24"),
    _case("en-past-two-weeks", "the past two weeks", "2026-07-11", "2026-07-24"),
    _case("en-past-month", "the past month", "2026-06-25", "2026-07-24"),
    _case("en-past-year", "the past year", "2025-07-25", "2026-07-24"),
    _case("mon-en-past-week", "past week", "2026-07-14", "2026-07-20", now=MON),
    _case("leap-en-past-month", "the past month", "2024-02-02", "2024-03-01", now=LEAP),
    _case("end-en-past-3-months", "the past 3 months", "2026-03-01", "2026-05-31", now=MONTH_END),
    _case("zh-past-three-days", "过去三天", "2026-07-22", "2026-07-24"),
    _case("zh-recent-three-days", "最近三天", "2026-07-22", "2026-07-24"),
    _case("zh-recent-7-days", "最近7天", "2026-07-18", "2026-07-24"),
    _case("zh-near-one-week", "近一周", "2026-07-18", "2026-07-24"),
    _case("zh-past-one-week", "过去一周", "2026-07-18", "2026-07-24"),
    _case("zh-past-week-de", "过去的一周里", "2026-07-18", "2026-07-24"),
    _case("zh-past-two-weeks", "过去两周", "2026-07-11", "2026-07-24"),
    _case("zh-past-two-xingqi", "过去两个星期", "2026-07-11", "2026-07-24"),
    _case("zh-recent-one-month", "最近一个月", "2026-06-25", "2026-07-24"),
    _case("zh-past-year-li", "过去一年里", "2025-07-25", "2026-07-24"),
    _case("zh-near-30-days", "近30天", "2026-06-25", "2026-07-24"),
    _case("zh-these-three-days", "这三天", "2026-07-22", "2026-07-24"),
    _case("zh-recent-week-three-runs", "最近一周三次跑步", "2026-07-18", "2026-07-24"),
    # --- "since X" and its kin: from X to today
    _case("en-since-november-20", "since November 20", "2025-11-20", "2026-07-24"),
    _case("en-since-may-3", "since May 3", "2026-05-03", "2026-07-24"),
    _case("en-ever-since-yesterday", "ever since yesterday", "2026-07-23", "2026-07-24"),
    _case("en-since-last-week", "since last week", "2026-07-13", "2026-07-24"),
    _case("en-since-october", "since October", "2025-10-01", "2026-07-24"),
    _case("en-since-2021", "since 2021", "2021-01-01", "2026-07-24"),
    _case("en-from-date-to-now", "from May 3 to now", "2026-05-03", "2026-07-24"),
    _case("en-from-date-until-today", "from June 1 until today", "2026-06-01", "2026-07-24"),
    _case("zh-since-zicong", "自从11月20日", "2025-11-20", "2026-07-24"),
    _case("zh-since-cong-yilai", "从11月20日以来", "2025-11-20", "2026-07-24"),
    _case("zh-since-yilai", "11月20日以来", "2025-11-20", "2026-07-24"),
    _case("zh-since-zicong-yihou", "自从上周三以后", "2026-07-15", "2026-07-24"),
    _case("zh-since-last-year", "去年以来", "2025-01-01", "2026-07-24"),
    _case("zh-since-yesterday-kaishi", "从昨天开始", "2026-07-23", "2026-07-24"),
    _case("zh-since-zhijin", "5月3日至今", "2026-05-03", "2026-07-24"),
    _case("zh-since-dao-xianzai", "从5月3日到现在", "2026-05-03", "2026-07-24"),
    _case("zh-since-last-month-qi", "从上个月起", "2026-06-01", "2026-07-24"),
    _case("zh-since-qi-no-cong", "11月20日起我都做了什么", "2025-11-20", "2026-07-24"),
    _case("zh-qi-a-verb", "昨天起晚了", "2026-07-23"),  # got up late: no "from ... on"
    # --- ranges with the month on one side only; yearless ranges stop at today
    _case("en-between-days-month", "between 20 and 22 November", "2025-11-20", "2025-11-22"),
    _case("en-between-month-days", "between November 20 and 22", "2025-11-20", "2025-11-22"),
    _case("en-between-days-year", "between 20 and 22 November 2023", "2023-11-20", "2023-11-22"),
    _case("en-day-dash-day-month", "20-22 Nov", "2025-11-20", "2025-11-22"),
    _case("en-from-day-to-day-month", "from 3 to 5 May", "2026-05-03", "2026-05-05"),
    _case("en-yearless-range-stops-today", "from July 20 to July 26", "2026-07-20", "2026-07-24"),
    _case("zh-range-bare-end-day", "11月3日到5日", "2025-11-03", "2025-11-05"),
    _case("zh-range-cong", "从11月3日到11月5日", "2025-11-03", "2025-11-05"),
    _case("en-range-to-the-ordinal", "from May 1st to the 3rd", "2026-05-01", "2026-05-03"),
    _case("en-between-and-the-ordinal", "between May 1st and the 3rd", "2026-05-01", "2026-05-03"),
    _case("en-range-the-ordinals-of", "from the 1st to the 3rd of May", "2026-05-01", "2026-05-03"),
    # --- days joined by 和 / 、 / and / or: the span from the first to the last
    _case("zh-wed-and-thu", "周三和周四", "2026-07-22", "2026-07-23"),
    _case("zh-wed-dun-thu", "周三、周四", "2026-07-22", "2026-07-23"),
    _case("zh-three-days-listed", "周一、周二和周三", "2026-07-20", "2026-07-22"),
    _case("en-three-days-listed", "Monday, Tuesday and Wednesday", "2026-07-20", "2026-07-22"),
    _case("en-days-listed-oxford", "on Monday, Tuesday, and Wednesday", "2026-07-20", "2026-07-22"),
    _case("en-comma-other-kind", "on Monday, three days ago I said", "2026-07-20"),
    _case("zh-day-after-a-title", "《明天会更好》是我昨天听的", "2026-07-23"),
    _case("en-weekday-the-day-of-month", "on Monday the 20th", "2026-07-20"),
    _case("zh-last-year-summer", "去年夏天的旅行", "2025-01-01", "2025-12-31"),
    _case("zh-last-wed-and-thu", "上周三和周四", "2026-07-15", "2026-07-16"),
    _case("zh-yesterday-and-today", "昨天和今天", "2026-07-23", "2026-07-24"),
    _case("zh-dates-joined", "5月4日和5月6日", "2026-05-04", "2026-05-06"),
    _case("en-wed-and-thu", "Wednesday and Thursday", "2026-07-22", "2026-07-23"),
    _case("en-mon-or-tue", "on Monday or Tuesday", "2026-07-20", "2026-07-21"),
    _case("en-yesterday-and-today", "yesterday and today", "2026-07-23", "2026-07-24"),
    _case("en-dates-joined", "May 4th and May 5th", "2026-05-04", "2026-05-05"),
    _case("en-fri-and-mon-crosses-weeks", "Friday and Monday", "2026-07-17", "2026-07-20"),
    _case("wed-zh-wed-and-thu-is-last-week", "周三和周四", "2026-07-15", "2026-07-16", now=WED),
    _case("wed-en-wed-or-thu", "Wednesday or Thursday", "2026-07-15", "2026-07-16", now=WED),
    # --- a weekday of a named week
    _case("en-wednesday-last-week", "Wednesday last week", "2026-07-15"),
    _case("en-wednesday-of-last-week", "Wednesday of last week", "2026-07-15"),
    _case("en-on-wednesday-last-week", "on Wednesday last week", "2026-07-15"),
    _case("en-last-week-wednesday", "last week Wednesday", "2026-07-15"),
    _case("en-last-weeks-wednesday", "last week's Wednesday", "2026-07-15"),
    _case("en-sunday-of-last-week", "Sunday of last week", "2026-07-19"),
    _case("en-wednesday-this-week", "Wednesday this week", "2026-07-22"),
    _case("en-monday-next-week", "Monday next week", "2026-07-27"),
    _case("mon-en-wednesday-last-week", "Wednesday last week", "2026-07-15", now=MON),
    _case("sun-en-sunday-of-last-week", "Sunday of last week", "2026-07-19", now=SUN),
    _case("zh-last-week-de-wednesday", "上周的周三", "2026-07-15"),
    _case("zh-last-week-de-xingqisan", "上个星期的星期三", "2026-07-15"),
    _case("zh-last-week-zhousan-no-de", "上周周三", "2026-07-15"),
    _case("zh-this-week-de-friday", "这周的周五", "2026-07-24"),
    _case("zh-last-week-de-weekend", "上周的周末", "2026-07-18", "2026-07-19"),
    # --- weekdays that stay times next to capitalised words
    _case("en-friday-then-i", "On Friday I went out", "2026-07-24"),
    _case("en-sunday-morning-title-case", "Sunday Morning", "2026-07-19", times=MORNING),
    _case("en-monday-night-title-case", "Monday Night", "2026-07-20", times=EVENING),
    # --- a range whose second end is any expression, not only a written date
    _case("zh-range-to-today", "从7月1日到今天", "2026-07-01", "2026-07-24"),
    _case("zh-range-no-cong", "7月1日到昨天", "2026-07-01", "2026-07-23"),
    _case("zh-range-weekday-to-today", "从上周一到今天", "2026-07-13", "2026-07-24"),
    _case("zh-range-ago-to-today", "从3天前到今天", "2026-07-21", "2026-07-24"),
    _case("zh-range-months", "5月到7月", "2026-05-01", "2026-07-24"),
    _case("zh-range-years", "2020年到2022年", "2020-01-01", "2022-12-31"),
    _case("en-range-to-yesterday", "from July 1 to yesterday", "2026-07-01", "2026-07-23"),
    # --- a weekday before 天气 (weather) or 天亮 (dawn) is the day
    _case("zh-sunday-weather", "周日天气怎么样", "2026-07-19"),
    _case("zh-xingqitian-weather", "星期天天气好吗", "2026-07-19"),
    _case("zh-last-wednesday-weather", "上周三天气", "2026-07-15"),
    # --- full-width digits, as an IME in full-width mode types them
    _case("zh-fullwidth-ago", "１５天前", "2026-07-09"),
    _case("zh-fullwidth-date", "７月２１日", "2026-07-21"),
    _case("en-fullwidth-ago", "３ days ago", "2026-07-21"),
]


@pytest.mark.parametrize(("text", "now", "start", "end", "times"), POSITIVE)
def test_expression_opens_the_exact_window(
    text: str, now: datetime, start: str, end: str, times: tuple[time, time] | None
) -> None:
    found = parse_time_range(text, now=now)
    assert found is not None, text
    assert (found.start.isoformat(), found.end.isoformat()) == (start, end)
    assert (found.start_time, found.end_time) == (times or (None, None))


NEGATIVE = [
    # vague words: the recency decay covers them
    "recently",
    "lately",
    "a while ago",
    "the other day",
    "a few days ago",
    "a couple of days ago",
    "these days",
    "最近",
    "前几天",
    "以前",
    "之前",
    "那天",
    "几天前",
    "不久前",
    # substrings and idioms
    "晚上月亮很圆",
    "这个月饼很好吃",
    "马上",
    "马上周末了",
    "I may go",
    "we march",
    "room 101",
    "sunday school",
    "Sundays",
    "mayday",
    "todays",
    "tomorrowland",
    "一日三秋",
    "千年",
    "明日黄花",
    "at the end of the day",
    "day by day",
    "one day",
    "聪明天才",
    "然后天气很好",
    "如今天气",
    "以前天天加班",
    "后天性疾病",
    "an hour ago",
    "这周围",
    "本周期",
    "一周三次",
    "每周三",
    "2021",
    "in 1066",
    "3000年",
    "2000年前",
    "3 march",
    "in may",
    "晚上吃了什么",
    "凌晨",
    # invalid dates
    "Feb 30",
    "2023-02-30",
    "2023-13-01",
    "2023年2月29日",
    "13月1日",
    "2023年13月",
    "上个月31号",
    "0天前",
    "9999 days ago",
    # ambiguous or open-ended
    "next Wednesday",
    "every Monday",
    "this coming Friday",
    "Monday to Friday",
    "周一到周五",
    # a week of a month: not begun yet, past the month's end, or of something else
    "the last week of July",  # this July's last week is still ahead
    "the fifth week of February",
    "the sixth week of May",
    "7月第五周",
    "7月第二周之前",
    "大概7月第二周",  # a week give or take how much?
    "the first week of school",
    "the last week of the trip",
    # months: a bare name, a person, a verb; an ambiguous "last March" (in July)
    "October",
    "May said she would come",
    "since May said so",
    "a friend of June told me",
    "in June's garden",
    "we march on",
    "we march 10 miles a day",
    "We march 20 km",
    "I may 3 times a week",
    "the troops march 5 days later",
    "the March on Washington",
    "last March",
    "两月",
    "23年5月",
    "五月天的演唱会",
    "十月怀胎",
    # rolling periods that are vague or belong to something else
    "the past few days",
    "the last couple of days",
    "my last 3 days in Paris",
    "the last 3 days of the trip",
    "这两天",
    "最近几天",
    "过去几天",
    "近日",
    "将近一周没运动",
    # names built on weekdays
    "I read the Sunday Times",
    "on Good Friday",
    "Black Friday deals",
    "Monday Night Football",
    "Super Bowl Sunday",
    "Easter Monday",
    "Cyber Monday",
    "Ash Wednesday",
    "Mardi Gras, also called Fat Tuesday",
    "Boxing Day",
    "the Friday market",
    # words that contain a time word
    "这周到的服务",
    "先天和后天",
    # ranges of bare numbers
    "from 3 to 5 days ago",
    "from the 1st to the 3rd",  # of which month?
    # a range whose second day comes before the first in the same month: not a year apart
    "5月3日到1日",
    "May 3 to May 1",
    "2023年5月3日到1日",
    "Dec 28-2",
    "before yesterday",
    "昨天之后",
    "since tomorrow",
    "从明天开始",
    "05/08/2023",
    "",
    # a count made approximate, or a bound; a span made approximate (how far around?)
    "三天前左右",
    "around 10 days ago",
    "around last week",
    "上周左右",
    "大概上个月",
    "about 3 days ago",
    "2 or 3 days ago",
    "1 or 2 days ago",
    "at least 2 weeks ago",
    "by July 21",
    "大约三天前",
    "差不多三天前吧",  # 差不多 is three characters
    "3、4天前",
    "两三天前",
    # names with a time word in them
    "I read it in USA Today",
    "on the Today show",
    "the Mail on Sunday",
    "the Fourth of July",
    "in May Day celebrations",
    "since May left",
    "dinner at Ruby Tuesday",
    "what was on my Monday.com board",
    "Super Tuesday results",
    "what happened on Friday the 13th",  # last Friday was the 24th
    "the Today programme on Radio 4",
    "今日头条上看到的",
    "昨日重现这首歌",
    # 周三天: three days a week
    "我一周三天去健身房",
    # the title of a work, marked 《》
    "我推荐过的《十月围城》你看了吗",
    "我看了《星期天的约会》吗",
    "《明天会更好》这首歌",
    # names with a month in them, unmarked
    "三月兔是谁",
    "我们一起看了十月围城",
    "七月与安生这部电影",
    # a winter named by its year runs into the next January
    "去年冬天我们去了哪",
    "2024年冬天",
    # a day of a year outside 1900-2199 is no such day of a recent year
    "the Declaration of July 4, 1776",
    "Einstein was born on 14 March 1879",
    "from May 1 to May 3, 1850",
    "between 20 and 22 November 2250",
    # a range whose second end comes before the first: backwards, not its first end alone
    "从3月到1月的账单",
    "从昨天到7月5日",
    "from yesterday to July 5",
    "我爱上周杰伦的歌了",
    "她迷上周末的集市",
    # 前 after a day: "before" it, as 之前
    "5月4日前",
    "周五前要交报告",
    "5月4日前的事",
    # a day counted off from a day is not that day
    "a week from today",
    "3 days from yesterday",
    "two weeks from last Monday",
    "a fortnight from May 3",
    "the week of last month",  # a week of a span: which one is not computed
    # 两 and 零 stand alone: beside 十 they are no numeral
    "十两天前",
    "两十天前",
    "十零天前",
    "零十天前",
    # a year word after a date that names its year already, or after a range across New Year
    "May 3, 2025 last year",
    "from Dec 28 to Jan 3 last year",
]


@pytest.mark.parametrize("text", NEGATIVE)
def test_text_opens_no_window(text: str) -> None:
    assert parse_time_range(text, now=FRI) is None


# --- span, rest and time_only ----------------------------------------------------------------


def test_time_only_chinese_query_keeps_filler_as_rest() -> None:
    found = parse_time_range("昨天发生了什么", now=FRI)
    assert found is not None
    assert (found.matched, found.span, found.rest, found.time_only) == (
        "昨天",
        (0, 2),
        "发生了什么",
        True,
    )


def test_time_only_english_query() -> None:
    found = parse_time_range("what happened yesterday", now=FRI)
    assert found is not None
    assert (found.rest, found.time_only) == ("what happened ", True)


@pytest.mark.parametrize(
    "text",
    ["昨天", "昨天?", "what did I do last week?", "上周都做了什么", "show my diary for today"],
)
def test_time_words_with_only_filler_are_time_only(text: str) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None and found.time_only


@pytest.mark.parametrize(
    "text", ["昨天吃了什么火锅", "what did I eat yesterday", "上周三吃了什么", "hiking in 2021"]
)
def test_content_words_are_not_time_only(text: str) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None and not found.time_only


def test_preposition_belongs_to_the_span() -> None:
    found = parse_time_range("I went hiking in 2021 with Sam", now=FRI)
    assert found is not None
    assert (found.matched, found.rest) == ("in 2021", "I went hiking  with Sam")
    found = parse_time_range("we met on May 3", now=FRI)
    assert found is not None and found.matched == "on May 3"


@pytest.mark.parametrize(
    ("text", "matched", "rest"),
    [
        ("在5月4日我们聊了什么", "在5月4日", "我们聊了什么"),  # 在 is "on": the phrase's
        ("我曾经在5月4日这天分享了", "在5月4日这天", "我曾经 分享了"),  # "on that day"
        ("于2023年5月3日", "于2023年5月3日", ""),
        ("现在5月了", "5月", "现在 了"),  # the 在 of 现在 (now) is a word's
        ("5月4日这天气真好", "5月4日", "这天气真好"),  # 天气 (weather) is not 这天
        ("昨天在公园", "昨天", "在公园"),
        ("关于5月4日的会议", "5月4日", "关于 的会议"),  # the 于 of 关于 (about) is the word's
    ],
)
def test_a_chinese_time_phrase_takes_its_preposition_and_that_day(
    text: str, matched: str, rest: str
) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None and (found.matched, found.rest) == (matched, rest)


def test_the_rest_is_not_glued_into_words_the_text_never_had() -> None:
    """Cutting "5月" out of "买了5月的票" must not make 了的 a bigram of the question."""
    found = parse_time_range("买了5月的票", now=FRI)
    assert found is not None and found.rest == "买了 的票"


def test_rest_is_the_input_without_the_span() -> None:
    text = "去年夏天在杭州吃的那家面馆"
    found = parse_time_range(text, now=FRI)
    assert found is not None
    b, e = found.span
    assert text[b:e] == found.matched == "去年"
    assert found.rest == text[:b] + text[e:] == "夏天在杭州吃的那家面馆"


def test_first_expression_wins() -> None:
    found = parse_time_range("昨天和上周的会议", now=FRI)
    assert found is not None and found.matched == "昨天"


def test_a_range_is_one_expression() -> None:
    found = parse_time_range("trips between August 11 and August 15 2023 please", now=FRI)
    assert found is not None
    assert found.matched == "between August 11 and August 15 2023"


def test_invalid_date_is_skipped_then_the_next_expression_counts() -> None:
    found = parse_time_range("Feb 30 or yesterday", now=FRI)
    assert found is not None and found.matched == "yesterday"


def test_to_dict_is_json_ready() -> None:
    found = parse_time_range("昨晚吃了什么", now=FRI)
    assert found is not None
    assert found.to_dict() == {
        "start": "2026-07-23",
        "end": "2026-07-23",
        "start_time": "18:00",
        "end_time": "23:59",
        "matched": "昨晚",
        "span": [0, 2],
        "rest": "吃了什么",
        "time_only": False,
    }


def test_explicit_window_defaults() -> None:
    window = TimeWindow(date(2026, 7, 1), date(2026, 7, 2))
    assert window.to_dict()["matched"] == "" and window.to_dict()["start_time"] is None


def test_window_refuses_start_after_end() -> None:
    with pytest.raises(ValueError, match="after end"):
        TimeWindow(date(2026, 7, 2), date(2026, 7, 1))


# --- now and tz ------------------------------------------------------------------------------


def test_aware_now_is_converted_to_tz() -> None:
    now = datetime(2026, 7, 24, 20, 0, tzinfo=UTC)  # already 2026-07-25 in Shanghai
    found = parse_time_range("昨天", now=now, tz="Asia/Shanghai")
    assert found is not None and found.start == date(2026, 7, 24)


def test_naive_now_is_taken_as_wall_time_in_tz() -> None:
    found = parse_time_range("昨天", now=datetime(2026, 7, 24, 23, 0), tz="Asia/Shanghai")
    assert found is not None and found.start == date(2026, 7, 23)


def test_unknown_tz_is_a_clear_value_error() -> None:
    with pytest.raises(ValueError, match="Mars/Olympus"):
        parse_time_range("昨天", now=FRI, tz="Mars/Olympus")


def test_default_now_is_the_local_clock() -> None:
    before = datetime.now().date()
    found = parse_time_range("today")
    assert found is not None and found.start in (before, datetime.now().date())


# --- parse_date_pair -------------------------------------------------------------------------


def test_date_pair_parses_iso_days() -> None:
    assert parse_date_pair("2024-02-28", "2024-02-29") == (date(2024, 2, 28), date(2024, 2, 29))


@pytest.mark.parametrize(
    ("start", "end", "bad"),
    [
        ("2024/02/28", "2024-03-01", "'2024/02/28'"),
        ("2024-02-28", "tomorrow", "'tomorrow'"),
        ("2023-02-29", "2023-03-01", "'2023-02-29'"),
        ("2024-03-02", "2024-03-01", "'2024-03-02'"),
    ],
    ids=["bad-shape", "not-a-date", "not-a-calendar-day", "start-after-end"],
)
def test_date_pair_names_the_bad_value(start: str, end: str, bad: str) -> None:
    with pytest.raises(ValueError, match=bad) as info:
        parse_date_pair(start, end)
    assert "expected" in str(info.value)


# --- new phrases: what the span takes in, and what stays for BM25 ------------------------------


def test_joined_days_are_one_span_and_leave_the_rest() -> None:
    found = parse_time_range("周三和周四吃了什么", now=FRI)
    assert found is not None
    assert (found.matched, found.rest, found.time_only) == ("周三和周四", "吃了什么", False)


def test_since_words_belong_to_the_span() -> None:
    found = parse_time_range("what happened since May 3?", now=FRI)
    assert found is not None
    assert (found.matched, found.rest, found.time_only) == ("since May 3", "what happened ?", True)
    found = parse_time_range("从11月20日以来的账单", now=FRI)
    assert found is not None and (found.matched, found.rest) == ("从11月20日以来", "的账单")


def test_days_too_far_apart_are_not_joined() -> None:
    found = parse_time_range("May 4th and May 20th", now=FRI)
    assert found is not None
    assert (found.start, found.end, found.matched) == (
        date(2026, 5, 4),
        date(2026, 5, 4),
        "May 4th",
    )


def test_a_second_expression_stays_in_rest_for_the_query_layer() -> None:
    # query.resolve_gate re-parses `rest` to prefer a calendar date over a relative word.
    found = parse_time_range("last week, as mentioned on 6 November 2023", now=FRI)
    assert found is not None and found.matched == "last week"
    second = parse_time_range(found.rest, now=FRI)
    assert second is not None and second.start == date(2023, 11, 6)


def test_time_of_day_is_dropped_from_a_multi_day_window() -> None:
    found = parse_time_range("昨天晚上和今天", now=FRI)
    assert found is not None
    assert (found.start, found.end, found.start_time) == (
        date(2026, 7, 23),
        date(2026, 7, 24),
        None,
    )


def test_the_rule_prefilter_never_skips_a_rule_that_matches() -> None:
    # Every table text: a rule left out by the needle prefilter has no match in it.
    from wikimem_watch.timeparse import core

    texts = [p.values[0] for p in POSITIVE] + NEGATIVE
    for text in texts:
        kept = {id(pattern) for pattern, _ in core._rules_for(str(text))}
        missed = [
            p.pattern[:50] for p, _ in core.RULES if id(p) not in kept and p.search(str(text))
        ]
        assert not missed, (text, missed)


@pytest.mark.parametrize(
    ("text", "which", "time_only"),
    [
        ("上次我们聊了什么", "last", True),
        ("我们上次聊了什么？", "last", True),
        ("上次聊天你推荐的电影叫什么", "last", False),  # a noun form: content may follow
        ("我们第一次对话聊了什么话题", "first", True),
        ("what did we talk about the last time we talked?", "last", True),
        ("In our last conversation, which book did you recommend?", "last", False),
        ("what did we talk about during our first conversation", "first", True),
        ("When we first chatted, what did we talk about?", "first", True),
        ("what did we talk about last time?", "last", True),
        ("what did we chat about last time", "last", True),
        ("我们上回说了什么", "last", True),
    ],
)
def test_a_conversation_named_by_its_order_is_found(text: str, which: str, time_only: bool) -> None:
    found = find_session(text)
    assert found is not None and found.which == which and found.time_only is time_only
    assert found.matched not in found.rest and parse_time_range(text, now=FRI) is None


@pytest.mark.parametrize(
    "text",
    [
        "上次看牙医是什么时候",  # not a conversation
        "我们第一次聊烹饪是什么时候",  # the first talk *about cooking*, not the first talk
        "the last time we talked about cooking",
        "the last time I ran",
        "what did I eat last time",
        "we talked about cooking last time",  # about cooking: not the whole conversation
        "上次说的那家店",
        "our first date",
        "what did we talk about",
    ],
)
def test_words_that_name_no_conversation_by_its_order_find_none(text: str) -> None:
    assert find_session(text) is None


def test_the_words_that_open_a_range_belong_to_its_span() -> None:
    for text, rest in (
        ("从7月1日到今天的事", "的事"),
        ("from July 1 to yesterday, what", ", what"),
    ):
        found = parse_time_range(text, now=FRI)
        assert found is not None and found.rest == rest, text
    found = parse_time_range("what did we talk about yesterday", now=FRI)
    assert found is not None and found.start.isoformat() == "2026-07-23"  # "about" is a verb's


# --- long input: a question may be up to 100,000 characters (MAX_TEXT_CHARS) -----------------


def test_a_long_run_of_numerals_is_read_in_linear_time() -> None:
    """A scan retried at every position of a run of 100,000 numerals took about a minute;
    read once, it takes milliseconds (not timed here: the property is that it finishes
    within the test timeout, and opens no window)."""
    assert parse_time_range("一" * 100_000, now=FRI) is None
    assert parse_time_range("1" * 100_000 + "年", now=FRI) is None


def test_a_long_text_of_rejected_look_alikes_is_read_in_linear_time() -> None:
    # Each look-alike is rejected in turn; the rules that match nothing further on must not
    # scan the rest of the text again for each one, nor the words before it (each of these
    # took 50-100 s when they did; not timed here, as above).
    assert parse_time_range("Sunday Times " * 7_500, now=FRI) is None
    assert parse_time_range("过去" * 50_000, now=FRI) is None
    assert parse_time_range("my last 500 years " * 5_500, now=FRI) is None
    found = parse_time_range("the Sunday Times " * 5_800 + "yesterday", now=FRI)
    assert found is not None and found.matched == "yesterday"


def test_a_long_chain_of_days_of_the_month_is_read_in_linear_time() -> None:
    # Tried again from each of its days, a chain of 号 days that no word ends took minutes
    # (16,000 days: ~3 min); not timed here, as above.
    assert parse_time_range("1号到 " * 16_000 + "x", now=FRI) is None
    found = parse_time_range("1号、" * 20_000, now=FRI)
    assert found is not None and found.start == found.end == date(2026, 7, 1)


def test_an_aware_now_its_zone_moves_out_of_the_calendar_is_a_clear_value_error() -> None:
    now = datetime(9999, 12, 31, 23, 59, tzinfo=timezone(timedelta(hours=-12)))
    with pytest.raises(ValueError, match="falls outside the years 1-9999"):
        parse_time_range("昨天", now=now, tz="Asia/Shanghai")


@pytest.mark.parametrize(
    ("text", "now", "day"),
    [
        # Friday 9999-12-31: the Saturday after it does not exist; today alone is the window.
        ("周五和周六", datetime(9999, 12, 31, 10, 0), date(9999, 12, 31)),
        ("Friday and Monday", datetime(9999, 12, 31, 10, 0), date(9999, 12, 31)),
        # Sunday 0001-01-07: the span would move back a week, before 0001-01-01.
        ("周日和周一", datetime(1, 1, 7, 10, 0), date(1, 1, 7)),
        ("Sunday or Monday", datetime(1, 1, 7, 10, 0), date(1, 1, 7)),
    ],
)
def test_joined_weekdays_at_the_ends_of_the_calendar_open_the_first_day_not_a_crash(
    text: str, now: datetime, day: date
) -> None:
    found = parse_time_range(text, now=now)
    assert found is not None and (found.start, found.end) == (day, day)


@pytest.mark.parametrize(
    ("n", "en_word", "zh_word"),
    [(1, "first", "一"), (2, "second", "二"), (3, "third", "三"), (4, "fourth", "四")],
)
def test_every_ordinal_week_of_a_month_is_seven_of_its_days_not_the_whole_month(
    n: int, en_word: str, zh_word: str
) -> None:
    first = date(2026, 6, 7 * n - 6)  # June: wholly past on the Friday reference
    texts = (f"in the {en_word} week of June", f"June's {en_word} week", f"6月第{zh_word}周")
    for text in texts:
        found = parse_time_range(text, now=FRI)
        assert found is not None, text
        assert (found.start, found.end) == (first, first + timedelta(days=6)), text
        assert found.rest == "", text


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("around last Tuesday", "2026-07-13", "2026-07-15"),
        ("what did I do around last Tuesday", "2026-07-13", "2026-07-15"),
        ("大概上周二", "2026-07-13", "2026-07-15"),
        ("上周二左右", "2026-07-13", "2026-07-15"),
        ("大概上周二左右我做了什么", "2026-07-13", "2026-07-15"),
        ("上周二前后", "2026-07-13", "2026-07-15"),
        ("around May 3", "2026-05-02", "2026-05-04"),
        ("roughly on 3 May", "2026-05-02", "2026-05-04"),
        ("5月3日左右", "2026-05-02", "2026-05-04"),
        ("差不多5月3日", "2026-05-02", "2026-05-04"),
        ("around yesterday", "2026-07-22", "2026-07-24"),  # a past day reaches no further
        ("昨晚左右", "2026-07-22", "2026-07-24"),  # than today; no time of day on three days
    ],
)
def test_a_day_said_approximately_opens_it_and_the_day_either_side_in_both_languages(
    text: str, start: str, end: str
) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None
    assert (found.start.isoformat(), found.end.isoformat()) == (start, end)
    assert (found.start_time, found.end_time) == (None, None)
    assert "around" not in found.rest and "左右" not in found.rest and "大概" not in found.rest


@pytest.mark.parametrize(
    ("text", "now", "day", "times"),
    [
        ("10号那天我去了哪", FRI, "2026-07-10", None),
        ("我10号去看牙医了", FRI, "2026-07-10", None),
        ("我们十号吃了火锅", FRI, "2026-07-10", None),
        ("10号晚上吃了什么", FRI, "2026-07-10", EVENING),
        ("在24号那天", FRI, "2026-07-24", None),  # today is the 24th
        ("我二十五号去了哪", FRI, "2026-06-25", None),  # not yet this month: the last one's
        ("30号那天", FRI, "2026-06-30", None),
        ("15号发生了什么", NEW_YEAR, "2025-12-15", None),
    ],
)
def test_a_day_of_the_month_said_alone_is_the_most_recent_such_day(
    text: str, now: datetime, day: str, times: tuple[time, time] | None
) -> None:
    found = parse_time_range(text, now=now)
    assert found is not None
    assert found.start.isoformat() == found.end.isoformat() == day
    assert (found.start_time, found.end_time) == (times or (None, None))


@pytest.mark.parametrize(
    "text",
    [
        "10号线",
        "坐10号线去公司",
        "我10号线坐过",
        "三号线",
        "3号楼",
        "我住在3号楼",
        "1号选手",
        "5号球衣",
        "穿10号球衣",
        "10号球员进球了",
        "号码",
        "5号电池",
        "2号航站楼",
        "他是10号",
        "第3号",
        "编号10号",
        "3号门",
        "10号床的病人",
        "5号的比赛",
        "9号台风",
        "7号房间",
        "12号车厢",
        "一号位",
        "1号店买的",
        "110号",
        "我们在3号，等你",  # a place, not a day
        "10号前",  # before the 10th
        "10号是周几",
        "31号那天",  # June has no 31st, and July's is ahead
    ],
)
def test_a_number_with_hao_that_names_no_day_opens_no_window(text: str) -> None:
    assert parse_time_range(text, now=FRI) is None


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("from the first week of May to the second week of June", "2026-05-01", "2026-06-14"),
        ("the first week of May to the second week of June", "2026-05-01", "2026-06-14"),
        ("between the first week of May and the second week of June", "2026-05-01", "2026-06-14"),
        ("between the first and second week of May", "2026-05-01", "2026-05-14"),
        ("between the first week and the second week of May", "2026-05-01", "2026-05-14"),
        ("from the first to the third week of June", "2026-06-01", "2026-06-21"),
        ("the first and second weeks of May", "2026-05-01", "2026-05-14"),
        ("7月第一周到第二周", "2026-07-01", "2026-07-14"),
        ("七月的第一周至第二周", "2026-07-01", "2026-07-14"),
        ("5月第一到第三周", "2026-05-01", "2026-05-21"),
        ("5月第一周和第二周", "2026-05-01", "2026-05-14"),
        ("5月第一周到最后一周", "2026-05-01", "2026-05-31"),
        ("from May 3 to the second week of June", "2026-05-03", "2026-06-14"),
        ("from last Monday to the second week of July", "2026-07-13", "2026-07-14"),
        ("从上周一到7月第二周", "2026-07-13", "2026-07-14"),
        ("从上周一到7月20日", "2026-07-13", "2026-07-20"),  # 一到7 is no "3到4天前"
        ("上周一到三天前", "2026-07-13", "2026-07-21"),
    ],
)
def test_a_range_whose_ends_are_weeks_of_a_month_opens_the_whole_span_not_its_first_end(
    text: str, start: str, end: str
) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None
    assert (found.start.isoformat(), found.end.isoformat()) == (start, end)
    assert found.rest == ""


@pytest.mark.parametrize(
    "text",
    [
        "from the second week of May to the first week of May",  # backwards
        "5月第二周到第一周",
        "7月第一周到第五周",  # July's fifth week is still ahead
        "从5月3日到7月第五周",
        "from May 3 to the second week of the trip",  # no month to count the week in
        "from Monday to next Friday",  # the second end opens none: not Monday alone
    ],
)
def test_a_range_with_an_end_that_cannot_be_read_opens_none_not_its_first_end(text: str) -> None:
    assert parse_time_range(text, now=FRI) is None


@pytest.mark.parametrize(
    ("text", "start", "end", "rest"),
    [
        ("5月3日到6月", "2026-05-03", "2026-06-30", ""),
        ("从5月3日到6月第二周", "2026-05-03", "2026-06-14", ""),
        ("5月3日到6号", "2026-05-03", "2026-05-06", ""),  # a bare day still borrows the month
    ],
)
def test_a_month_after_a_chinese_date_is_a_month_not_a_day_of_the_first(
    text: str, start: str, end: str, rest: str
) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None
    assert (found.start.isoformat(), found.end.isoformat(), found.rest) == (start, end, rest)


@pytest.mark.parametrize(
    ("text", "now", "start", "end", "rest"),
    [
        ("10号到15号", FRI, "2026-07-10", "2026-07-15", ""),
        ("10号至15号", FRI, "2026-07-10", "2026-07-15", ""),
        ("从10号到15号", FRI, "2026-07-10", "2026-07-15", ""),
        ("十号到十五号发生了什么", FRI, "2026-07-10", "2026-07-15", "发生了什么"),
        ("我10号到15号去了哪", FRI, "2026-07-10", "2026-07-15", "我 去了哪"),
        ("10号和11号", FRI, "2026-07-10", "2026-07-11", ""),
        ("10号、11号和12号", FRI, "2026-07-10", "2026-07-12", ""),
        ("20号到25号", FRI, "2026-06-20", "2026-06-25", ""),  # the 25th is ahead: June's
        ("10号到15号", datetime(2026, 7, 12, 9, 0), "2026-06-10", "2026-06-15", ""),
        ("10号和11号", datetime(2026, 7, 10, 9, 0), "2026-06-10", "2026-06-11", ""),
        ("10号到15号", NEW_YEAR, "2025-12-10", "2025-12-15", ""),
    ],
)
def test_days_of_the_month_said_alone_as_a_range_open_the_span_of_one_month(
    text: str, now: datetime, start: str, end: str, rest: str
) -> None:
    found = parse_time_range(text, now=now)
    assert found is not None
    assert (found.start.isoformat(), found.end.isoformat(), found.rest) == (start, end, rest)


@pytest.mark.parametrize(
    "text",
    [
        "25号到3号",  # which months?
        "12号和10号",
        "10号和20号",  # joined days too far apart: not the 10th alone
        "10号、25号和12号",
        "10号线到15号线",
        "从10号线到15号线",
        "10号到15号线",
        "3号楼到5号楼",
        "1号和2号选手",
        "5号到6号电池",
    ],
)
def test_days_of_the_month_joined_out_of_order_or_naming_no_days_open_none(text: str) -> None:
    assert parse_time_range(text, now=FRI) is None


@pytest.mark.parametrize(
    ("text", "now", "start", "end"),
    [
        ("从上个月20号到10号", FRI, "2026-06-20", "2026-07-10"),
        ("从上个月5号到10号", FRI, "2026-06-05", "2026-06-10"),  # the 10th of that month
        ("从上个月到10号我去了哪", FRI, "2026-06-01", "2026-07-10"),
        ("从昨天到25号", FRI, "2026-07-23", "2026-07-24"),  # never past today
        ("从上个月20号到5号", datetime(2026, 3, 5, 10, 0), "2026-02-20", "2026-03-05"),
    ],
)
def test_a_bare_day_ending_a_range_is_the_next_such_day_not_its_first_end_alone(
    text: str, now: datetime, start: str, end: str
) -> None:
    found = parse_time_range(text, now=now)
    assert found is not None
    assert (found.start.isoformat(), found.end.isoformat()) == (start, end)
    assert "号" not in found.rest


def test_a_bare_day_ending_a_range_that_no_month_has_opens_none() -> None:
    assert parse_time_range("从上个月31号到30号", now=datetime(2026, 3, 5, 10, 0)) is None


def test_a_number_with_hao_ending_a_range_that_names_no_day_leaves_the_first_end() -> None:
    found = parse_time_range("从昨天到3号楼", now=FRI)
    assert found is not None and found.start == found.end == date(2026, 7, 23)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("from May 3 to June", "2026-05-03", "2026-06-30"),
        ("from the first week of May to June", "2026-05-01", "2026-06-30"),
        ("between May 3 and June", "2026-05-03", "2026-06-30"),
        ("from last Monday to July", "2026-07-13", "2026-07-24"),  # this July ends today
        ("from December 20 to January", "2025-12-20", "2026-01-31"),
    ],
)
def test_a_month_named_alone_ending_a_range_is_that_month_not_the_first_end_alone(
    text: str, start: str, end: str
) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None
    assert (found.start.isoformat(), found.end.isoformat(), found.rest) == (start, end, "")


def test_a_month_named_alone_before_the_first_end_makes_the_range_open_none() -> None:
    assert parse_time_range("from May 3 to March", now=FRI) is None


@pytest.mark.parametrize("text", ["from June 3 to may", "from May 3 to June said hi"])
def test_a_verb_or_a_name_after_a_date_is_no_month_ending_a_range(text: str) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None and found.start == found.end


@pytest.mark.parametrize(
    "text",
    [
        "from May to the second week of June",  # "from May" is not read: June's week alone
        "从春节到7月第二周",  # would hide the range's first part
        "from the start of the project to yesterday",
    ],
)
def test_the_second_end_of_a_range_whose_first_end_is_not_read_opens_none(text: str) -> None:
    assert parse_time_range(text, now=FRI) is None


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("I walked from the park to the bus yesterday", "2026-07-23"),
        ("从公司到家里，昨天", "2026-07-23"),
        ("from Paris to London on May 3", "2026-05-03"),
    ],
)
def test_a_time_after_a_from_to_of_places_is_still_read(text: str, day: str) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None and found.start.isoformat() == found.end.isoformat() == day


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("from July 1st to 2 days ago", "2026-07-01", "2026-07-22"),
        ("between July 1st and 2 days ago", "2026-07-01", "2026-07-22"),
        ("from July 1 to 2 weeks ago", "2026-07-01", "2026-07-12"),
        ("7月1日到2天前", "2026-07-01", "2026-07-22"),
        ("5月3日到2天前", "2026-05-03", "2026-07-22"),
        ("from May 1 to 3", "2026-05-01", "2026-05-03"),  # a bare day still ends a range
    ],
)
def test_a_count_ending_a_range_is_no_bare_day_of_the_first_ends_month(
    text: str, start: str, end: str
) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None
    assert (found.start.isoformat(), found.end.isoformat(), found.rest) == (start, end, "")


@pytest.mark.parametrize(
    ("text", "start", "end", "rest"),
    [
        ("从6月初到昨天", "2026-06-01", "2026-07-23", ""),
        ("上个月初到昨天我做了什么", "2026-06-01", "2026-07-23", "我做了什么"),
        ("6月底以来", "2026-06-01", "2026-07-24", ""),
        ("从去年底到今年3月", "2025-01-01", "2026-03-31", ""),
        ("2025年12月中旬到今年1月", "2025-12-01", "2026-01-31", ""),
        ("6月底发生了什么", "2026-06-01", "2026-06-30", "发生了什么"),  # as "late June"
    ],
)
def test_a_part_of_a_month_is_the_whole_month_and_can_start_a_range(
    text: str, start: str, end: str, rest: str
) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None
    assert (found.start.isoformat(), found.end.isoformat(), found.rest) == (start, end, rest)


def test_a_part_of_a_month_after_the_range_end_opens_none() -> None:
    assert parse_time_range("6月初到5月20日", now=FRI) is None


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("from last Monday to the 20th", "2026-07-13", "2026-07-20"),
        ("between last week and the 20th", "2026-07-13", "2026-07-20"),
        ("from last month to the 5th", "2026-06-01", "2026-07-05"),
        ("from May 3 to the end of June", "2026-05-03", "2026-06-30"),
        ("from May 3 to the beginning of June", "2026-05-03", "2026-06-30"),  # as "early June"
    ],
)
def test_an_english_bare_day_or_the_end_of_a_month_ends_a_range_not_its_first_end_alone(
    text: str, start: str, end: str
) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None
    assert (found.start.isoformat(), found.end.isoformat(), found.rest) == (start, end, "")


def test_the_end_of_a_month_before_the_first_end_of_a_range_opens_none() -> None:
    assert parse_time_range("from last Monday to the end of June", now=FRI) is None


@pytest.mark.parametrize(
    ("text", "start", "rest"),
    [
        ("5月3日至今天", "2026-05-03", ""),
        ("上周一至今日发生了什么", "2026-07-13", "发生了什么"),
        ("5月3日至今天气都很好", "2026-05-03", "天气都很好"),  # weather keeps its 天
    ],
)
def test_until_today_in_chinese_leaves_no_stray_day_character_in_the_rest(
    text: str, start: str, rest: str
) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None
    assert (found.start.isoformat(), found.end, found.rest) == (start, date(2026, 7, 24), rest)


def test_the_from_of_a_weekday_range_inside_one_week_belongs_to_its_span() -> None:
    found = parse_time_range("我从上周一到周三在北京", now=FRI)
    assert found is not None
    assert (found.start, found.end) == (date(2026, 7, 13), date(2026, 7, 15))
    assert found.matched == "从上周一到周三" and found.rest == "我 在北京"


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("今天到晚上", "2026-07-24", "2026-07-24"),  # until the evening: a time, not an end
        ("我昨天到晚上去了哪", "2026-07-23", "2026-07-23"),
        ("between yesterday and Monday", "2026-07-20", "2026-07-23"),  # either order
        ("between the second week of June and the first week of May", "2026-05-01", "2026-06-14"),
    ],
)
def test_a_time_of_day_or_an_earlier_day_after_between_keeps_the_range_readable(
    text: str, start: str, end: str
) -> None:
    found = parse_time_range(text, now=FRI)
    assert found is not None
    assert (found.start.isoformat(), found.end.isoformat()) == (start, end)


@pytest.mark.parametrize("text", ["the 20th to 3 days ago", "20号到三天前", "从20号到昨天"])
def test_the_second_end_after_a_bare_day_no_rule_reads_opens_none(text: str) -> None:
    assert parse_time_range(text, now=FRI) is None
