"""Gate-first ranking, the ``now`` limit, time-only listings and the other answer rules
(ADR-0009), each on a small vault written for it."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import engine_for, hits, write
from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.retrieval.query import run_query
from wikimem_watch.retrieval.request import QueryRequest


def ask(engine: Engine, **fields: object) -> dict[str, object]:
    return run_query(engine, QueryRequest.from_dict(fields))


DENTIST = {
    # Wednesday 2026-11-18: the dentist, in few words among other things.
    "diary/2026-11-18.md": "# 2026-11-18\n\n## 09:00\n早上去看牙医，补了一颗牙。\n\n"
    "## 20:00\n晚上和妈妈打电话。\n",
    "diary/2026-11-10.md": "## 10:00\n牙医 牙医 牙医：预约了下周的牙医，牙医诊所在徐汇。\n",
    "wiki/people.md": "# People\n\n## 妈妈\n妈妈的牙医是王医生，妈妈每年看一次牙医。\n",
}


def test_in_window_entries_rank_before_stronger_matches_elsewhere(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, DENTIST)
    result = ask(engine, q="上周三看牙医了吗", now="2026-11-25T12:00:00")
    found = hits(result)
    assert found[0]["id"] == "diary/2026-11-18.md#09:00" and found[0]["in_window"] is True
    rest = found[1:]
    assert {h["path"] for h in rest} >= {"wiki/people.md", "diary/2026-11-10.md"}
    assert all(h["in_window"] is not True for h in rest)
    wiki = next(h for h in rest if h["kind"] == "wiki")
    assert wiki["in_window"] is None  # wiki items are not on the time axis
    outside = next(h for h in rest if h["path"] == "diary/2026-11-10.md")
    assert outside["in_window"] is False


def test_an_explicit_window_excludes_diary_outside_it(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, DENTIST)
    result = ask(
        engine, q="牙医", time_range=["2026-11-18", "2026-11-18"], now="2026-11-25T12:00:00"
    )
    paths = [h["path"] for h in hits(result)]
    assert paths[0] == "diary/2026-11-18.md" and "diary/2026-11-10.md" not in paths
    assert "wiki/people.md" in paths


def test_a_window_never_reaches_past_now(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-14.md": "## 12:00\nlunch with Mia\n",
            "diary/2026-11-15.md": "## 08:00\nbreakfast alone\n\n## 19:30\ndinner with Mia\n",
        },
    )
    result = ask(engine, q="昨天发生了什么", now="2026-11-15T09:00:00")
    assert [h["id"] for h in hits(result)] == ["diary/2026-11-14.md#12:00"]
    assert result["widened"] is False
    today = ask(engine, q="what happened today", now="2026-11-15T09:00:00")
    assert [h["time"] for h in hits(today)] == ["08:00"]
    mia = hits(ask(engine, q="Mia today", now="2026-11-15T09:00:00", kinds=["diary"]))
    # Today until 09:00 holds breakfast, which names no Mia: it comes first, as what the
    # window holds; Mia's entries follow, marked outside (19:30 is after now).
    assert [(h["id"], h["in_window"]) for h in mia][0] == ("diary/2026-11-15.md#08:00", True)
    assert all(h["in_window"] is False for h in mia[1:])
    assert "diary/2026-11-15.md#19:30" in [h["id"] for h in mia[1:]]


def test_widening_happens_only_for_an_empty_window_and_not_into_the_future(
    tmp_path: Path,
) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-12.md": "## 12:00\nrain all day\n",
            "diary/2026-11-14.md": "## 12:00\nsunny, went running\n",
        },
    )
    # 2026-11-13 holds nothing: widen ±1 day, which reaches 11-12 and 11-14 (now is 11-14).
    result = ask(engine, q="11月13号发生了什么", now="2026-11-14T13:00:00")
    gate = result["time_range"]
    assert isinstance(gate, dict) and result["widened"] is True
    assert (gate["start"], gate["end"]) == ("2026-11-12", "2026-11-14")
    # A day that holds an entry does not widen, even when its entry does not match: the
    # day comes first, the match from another day after it.
    held = ask(engine, q="11月14号 rain", now="2026-11-15T09:00:00")
    assert held["widened"] is False and held["listing"] is True
    assert [(h["date"], h["in_window"]) for h in hits(held)] == [
        ("2026-11-14", True),
        ("2026-11-12", False),
    ]


def test_an_evening_asked_about_in_the_afternoon_is_not_widened_into_other_days(
    tmp_path: Path,
) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-14.md": "## 20:00\ndinner with Mia\n",
            "diary/2026-11-15.md": "## 08:00\nbreakfast alone\n",
        },
    )
    # At 15:00 tonight is still ahead, as tomorrow is: no entry there yet, and widening it
    # would list last night's dinner and this morning's breakfast as tonight's.
    for q in ("今晚做了什么", "what happened tonight"):
        result = ask(engine, q=q, now="2026-11-15T15:00:00")
        gate = result["time_range"]
        assert isinstance(gate, dict)
        assert (gate["fallback"], gate["widened_days"]) == ("empty", 0)
        assert hits(result) == []
    # Once the evening has begun, it is tonight's window as before.
    later = ask(engine, q="今晚做了什么", now="2026-11-14T21:00:00")
    assert [h["id"] for h in hits(later)] == ["diary/2026-11-14.md#20:00"]


def test_a_parsed_window_that_stays_empty_is_not_applied_and_says_so(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, {"diary/2026-10-01.md": "## 12:00\nthe blue bicycle\n"})
    result = ask(engine, q="blue bicycle last week", now="2026-11-25T12:00:00")
    gate = result["time_range"]
    assert isinstance(gate, dict) and gate["fallback"] == "empty"
    assert [h["id"] for h in hits(result)] == ["diary/2026-10-01.md#12:00"]
    assert hits(result)[0]["in_window"] is None


def test_content_free_words_list_the_window_in_time_order(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-20.md": "## 21:00\n我们聊了话题：搬家。\n\n## 08:00\n早饭吃了包子。\n"
            "\n## 12:00\nWe talked about the talk topic: moving house.\n",
            "diary/2026-11-19.md": "## 10:00\n聊天 话题 聊了 talk topic\n",
        },
    )
    for q in ("11月20号我们聊了什么话题", "what did we talk about on November 20", "11月20号"):
        result = ask(engine, q=q, now="2026-11-25T12:00:00")
        assert result["listing"] is True, q
        assert [h["time"] for h in hits(result)] == ["08:00", "12:00", "21:00"], q


def test_a_listing_says_when_it_was_cut_at_k(tmp_path: Path) -> None:
    days = {f"diary/2026-11-{d:02d}.md": f"## 09:00\nday {d}\n" for d in range(16, 23)}
    engine = engine_for(tmp_path, days)
    result = ask(engine, q="上周", now="2026-11-25T12:00:00", k=3)
    assert result["cut"] is True and len(hits(result)) == 3
    gate = result["time_range"]
    assert isinstance(gate, dict) and gate["entries"] == 7
    assert [h["date"] for h in hits(result)] == ["2026-11-16", "2026-11-17", "2026-11-18"]
    whole = ask(engine, q="上周", now="2026-11-25T12:00:00", k=10)
    assert whole["cut"] is False and len(hits(whole)) == 7


def test_a_heading_names_its_section(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "wiki/pets.md": "# Pets\n\n## 年糕\nAn orange tabby, three years old, sleeps on the "
            "router and steals food from the table whenever she can.\n",
            "diary/2026-11-01.md": "## 09:00\n年糕 woke me up.\n",
            "diary/2026-11-02.md": "## 10:00\n年糕 on the mat.\n",
        },
    )
    found = hits(ask(engine, q="年糕", now="2026-11-25T12:00:00", expand_links=False))
    assert found[0]["id"] == "wiki/pets.md#年糕"
    flat = Engine(load_config(tmp_path, {"heading_weight": 1}))
    flat.scan()
    unweighted = hits(ask(flat, q="年糕", now="2026-11-25T12:00:00", expand_links=False))
    assert unweighted[0]["id"] != "wiki/pets.md#年糕"  # the weight is what lifts it


def test_the_entry_before_sharpens_a_match_but_never_makes_one(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-02.md": "## 20:00\nWhich camera should I buy for the trip?\n\n"
            "## 20:01\nThe small one: a camera you carry beats a better one at home.\n\n"
            "## 20:02\nThanks, that settles it.\n",
            "diary/2026-11-03.md": "## 20:00\nMy old camera broke today, and the lens too.\n",
        },
    )
    plain = ask(engine, q="camera trip", weights={"previous": 0}, explain=True)
    sharpened = ask(engine, q="camera trip", weights={"previous": 0.5}, explain=True)
    ids = [h["id"] for h in hits(sharpened)]
    assert "diary/2026-11-02.md#20:02" not in ids  # shares no query word
    assert set(ids) == {h["id"] for h in hits(plain)}
    answer = next(h for h in hits(sharpened) if h["id"] == "diary/2026-11-02.md#20:01")
    explain = answer["explain"]
    assert isinstance(explain, dict) and explain["bm25_previous"] > 0
    first = next(h for h in hits(sharpened) if h["id"] == "diary/2026-11-02.md#20:00")
    assert isinstance(first["explain"], dict) and first["explain"]["bm25_previous"] == 0.0


def test_the_entry_before_follows_edits(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path, {"diary/2026-11-02.md": "## 20:00\nzebra\n\n## 20:05\nzebra crossing\n"}
    )
    write(tmp_path, "diary/2026-11-02.md", "## 20:00\nzebra\n\n## 20:03\nlion\n\n## 20:05\nzebra\n")
    engine.apply(["diary/2026-11-02.md"])
    prev = engine.previous_slots()
    slot = engine.slot_of("diary/2026-11-02.md#20:05")
    assert slot is not None
    assert engine.slot_id(int(prev[slot])) == "diary/2026-11-02.md#20:03"
    first = engine.slot_of("diary/2026-11-02.md#20:00")
    assert first is not None and prev[first] == -1


def test_nested_tags_match_their_parent(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "notes/cactus.md": "# Cactus\nWatered the cactus. #plants/succulents\n",
            "notes/fern.md": "# Fern\nWatered the fern. #plantsfan\n",
        },
    )
    found = hits(ask(engine, q="watered", tags=["plants"]))
    assert [h["path"] for h in found] == ["notes/cactus.md"]
    assert hits(ask(engine, q="watered", tags=["plants/succulents"]))
    assert not hits(ask(engine, q="watered", tags=["succulents"]))


def test_link_context_is_the_best_section_and_never_takes_a_place_in_k(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-02.md": "## 20:00\nDinner plans with [[people]] tonight.\n\n"
            "## 21:00\nDinner was lovely.\n",
            "people.md": "# People\n\n## Mia\nLikes sushi.\n\n## Zhou\nAllergic to dinner rolls.\n",
        },
    )
    found = hits(ask(engine, q="dinner", k=2, now="2026-11-25T12:00:00"))
    assert len(found) == 2 and all(h["kind"] == "diary" for h in found)
    host = next(h for h in found if h.get("linked"))
    linked = host["linked"]
    assert isinstance(linked, list) and [c["id"] for c in linked] == ["people.md#Zhou"]
    assert linked[0]["via"] == host["id"]


def test_words_that_match_nothing_list_the_window(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-21.md": "## 12:00\nnoodles at the market\n\n## 19:00\nhot pot\n",
            "diary/2026-11-10.md": "## 12:00\nrice\n",
        },
    )
    result = ask(engine, q="what did I eat last weekend", now="2026-11-25T12:00:00")
    assert result["listing"] is True
    assert [h["id"] for h in hits(result)] == [
        "diary/2026-11-21.md#12:00",
        "diary/2026-11-21.md#19:00",
    ]


def test_the_window_count_from_day_totals_equals_counting_entries(tmp_path: Path) -> None:
    from datetime import date

    from wikimem_watch.retrieval.gate import Gate, count_window, window_entries

    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-13.md": "## 08:00\na\n\n## 12:00\nb\n",
            "diary/2026-11-14.md": "## 07:00\nc\n\n## 09:30\nd\n\n## 20:00\ne\n",
            "notes/x.md": "# X\nnot on the time axis\n",
        },
    )
    for fields in ({}, {"paths": ["diary/2026-11-14.md"]}, {"kinds": ["wiki"]}):
        req = QueryRequest.from_dict({"q": "x", **fields})
        for start, end in (("2026-11-13", "2026-11-14"), ("2026-11-14", "2026-11-14")):
            gate = Gate(
                date.fromisoformat(start),
                date.fromisoformat(end),
                "explicit",
                limit_day=date(2026, 11, 14),
                limit_time="10:00",  # 20:00 on the 14th is after now
            )
            assert count_window(engine, req, gate) == len(window_entries(engine, req, gate))
    whole = Gate(date(2026, 11, 1), date(2026, 11, 30), "explicit", limit_day=date(2026, 11, 14))
    assert count_window(engine, QueryRequest.from_dict({"q": "x"}), whole) == 5


def test_a_question_is_answered_by_the_entry_after_it(tmp_path: Path) -> None:
    files = {
        "diary/2026-11-02.md": "## 20:00\n用户: 最近在学做饭。\n\nAI: 真好！你喜欢哪种菜系呢？\n\n"
        "## 20:01\n用户: 川菜和粤菜，尤其是水煮鱼。\n\nAI: 都很好吃。\n",
        "diary/2026-11-03.md": "## 20:00\nI went out to dinner. Which film should we see after?\n\n"
        "## 20:01\nThe one about the lighthouse keeper, at nine.\n",
    }
    engine = engine_for(tmp_path, files)
    now = "2026-11-25T12:00:00"
    assert hits(ask(engine, q="我喜欢哪些菜系？", now=now))[0]["id"] == "diary/2026-11-02.md#20:01"
    assert hits(ask(engine, q="which film did we see", now=now))[0]["id"] == (
        "diary/2026-11-03.md#20:01"
    )
    # A keyword search still finds the entry that says the word.
    assert "diary/2026-11-02.md#20:00" in {h["id"] for h in hits(ask(engine, q="菜系", now=now))}
    plain = Engine(load_config(tmp_path, {"question_context": False}))
    plain.scan()
    assert hits(ask(plain, q="我喜欢哪些菜系？", now=now))[0]["id"] == "diary/2026-11-02.md#20:00"


def test_an_answer_ranks_above_the_question_that_announced_it(tmp_path: Path) -> None:
    files = {
        "diary/2026-11-05.md": "## 20:00\n用户: 今天遇到了一个麻烦，心里很烦。\n\n"
        "AI: 别着急，是什么麻烦呢？\n\n"
        "## 20:01\n用户: 我的自行车在公司楼下被偷了。\n\nAI: 太可惜了，先去报警吧。\n",
        "diary/2026-11-06.md": "## 09:00\nI had a problem at work today and it was annoying. "
        "What kind of problem?\n\n## 09:01\nThe build server went down before the release, so "
        "we had a problem shipping.\n",
    }
    engine = engine_for(tmp_path, files)
    now = "2026-11-25T12:00:00"
    told = {"我遇到的麻烦是什么？": "diary/2026-11-05.md#20:01"}
    told["what problem did I have at work"] = "diary/2026-11-06.md#09:01"
    for q, answer in told.items():
        got = ask(engine, q=q, now=now, explain=True)
        assert [h["id"] for h in hits(got)][:2] == [answer, answer.replace(":01", ":00")]
        assert hits(got)[0]["explain"]["weights"]["question"] == 0.6
        # With the entry before weighing as any neighbour does, the question wins.
        even = ask(engine, q=q, now=now, weights={"question": 0.3})
        assert hits(even)[0]["id"] == answer.replace(":01", ":00")


FILMS = {
    # The answer says much; the turns around it say the query's words in fewer.
    "diary/2026-11-07.md": "## 20:00\nUser: I want to see a film this weekend.\n\n"
    "AI: Happy to help with that.\n\n"
    "## 20:01\nUser: Comedy or adventure, either is fine.\n\nAI: For comedy, the film "
    "Paddington 2: a bear takes a window-cleaning job to buy a pop-up book of London. For "
    "adventure, Life of Pi: a boy adrift on a lifeboat with a Bengal tiger.\n\n"
    "## 20:02\nUser: Sounds good, thanks.\n\nAI: Enjoy the film!\n",
    "diary/2026-11-08.md": "## 09:00\nBought bread and milk.\n",
}


def test_the_entry_that_says_more_ranks_above_one_that_echoes_the_words(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, FILMS)
    q, now = "which film did you recommend on November 7", "2026-11-25T12:00:00"
    got = hits(ask(engine, q=q, now=now, explain=True))
    assert [h["id"][-5:] for h in got] == ["20:01", "20:02", "20:00"]
    explain = got[0]["explain"]
    assert explain["weights"]["information"] == 0.3 and explain["information"] == 1.0
    assert 0.0 < got[1]["explain"]["information"] < 0.5  # "sounds good, thanks" says little
    # Scored by its words alone, the short echo wins.
    plain = hits(ask(engine, q=q, now=now, weights={"information": 0}, explain=True))
    assert plain[0]["id"].endswith("#20:02")
    assert all(h["explain"]["information"] == 0.0 for h in plain)


def test_information_only_reorders_the_best_candidates(tmp_path: Path) -> None:
    # Thirty entries match "tea": the first ten say only that, more or less often; the rest
    # say it once among up to four words of their own. Hits for any k up to the pool agree.
    days = {}
    for d in range(1, 31):
        words = ["tea"] * (1 + d % 3) if d <= 10 else ["tea", *(f"w{d}x{i}" for i in range(d % 5))]
        days[f"diary/2026-10-{d:02d}.md"] = "## 08:00\n" + " ".join(words) + "\n"
    engine = engine_for(tmp_path, days)

    def days_of(k: int, information: float = 0.3) -> list[str]:
        weights = {"recency": 0, "information": information}
        return [str(h["date"])[-2:] for h in hits(ask(engine, q="tea", k=k, weights=weights))]

    assert days_of(3) == days_of(10)[:3] and days_of(10) == days_of(20)[:10]
    # Said once among words of their own, 12 and 17 pass entries that only repeat "tea".
    assert days_of(10)[3:5] == ["12", "17"]
    assert days_of(10, 0)[3:5] == ["01", "04"]


RUNNING = {
    # A long section about a friend names the race in passing; a short one is about it.
    "wiki/people.md": "# People\n\n## Zhou\nMy closest friend since university. Lives near the "
    "park with his girlfriend, who draws for a design studio. We ran the river half marathon "
    "together; he waited for me at 19 km. Loves hotpot, tests my pantry app, came on the "
    "autumn trip to the lake, and wants a full marathon in spring.\n",
    "wiki/health.md": "# Health\n\n## Running\nHalf marathon personal best 1:58, the first "
    "time under two hours; easy runs while the half marathon legs recover.\n",
}


def test_an_item_that_names_the_topic_in_passing_stays_behind_the_item_about_it(
    tmp_path: Path,
) -> None:
    engine = engine_for(tmp_path, RUNNING)
    got = hits(ask(engine, q="half marathon", expand_links=False, explain=True))
    assert [h["id"] for h in got] == ["wiki/health.md#Running", "wiki/people.md#Zhou"]
    # Between items the term is one value for all, so BM25 alone decides.
    assert got[0]["explain"]["information"] == got[1]["explain"]["information"] > 0.0
    plain = hits(ask(engine, q="half marathon", expand_links=False, weights={"information": 0}))
    assert [h["id"] for h in plain] == [h["id"] for h in got]


def test_an_item_meets_the_turns_as_their_median(tmp_path: Path) -> None:
    files = {**FILMS, "wiki/cinema.md": "# Cinema\n\n## Films\nA film club meets on Fridays.\n"}
    engine = engine_for(tmp_path, files)
    got = hits(ask(engine, q="film", expand_links=False, explain=True, weights={"recency": 0}))
    info = {h["id"]: h["explain"]["information"] for h in got}
    turns = sorted(v for k, v in info.items() if k.startswith("diary/"))
    assert len(turns) == 3 and turns[-1] == 1.0
    assert info["wiki/cinema.md#Films"] == turns[1]  # the middle of three


SESSIONS = {
    # A companion's log: a conversation a day. 11-28 is today's, still going on.
    "diary/2026-11-20.md": "## 20:00\nUser: hello, I am new.\n\n## 20:01\nUser: I keep bees.\n",
    "diary/2026-11-24.md": "## 21:00\nUser: my bike is gone.\n\n## 21:05\nUser: got a lock.\n",
    "diary/2026-11-28.md": "## 09:00\nUser: good morning.\n",
    "diary/2026-12-02.md": "## 09:00\nUser: a day after now.\n",
    "wiki/bees.md": "## Bees\nTwo hives on the roof; the bike shed is next to them.\n",
}


def test_the_first_and_the_last_conversation_are_days_of_the_diary(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, SESSIONS)
    now = "2026-11-28T12:00:00"
    last = ask(engine, q="上次我们聊了什么", now=now)
    assert last["listing"] is True and last["time_range_source"] == "parsed"
    window = last["time_range"]
    assert isinstance(window, dict)
    assert (window["start"], window["end"], window["session"]) == (
        "2026-11-24",
        "2026-11-24",
        "last",
    )  # the one before today's
    assert [h["id"] for h in hits(last)] == [
        "diary/2026-11-24.md#21:00",
        "diary/2026-11-24.md#21:05",
    ]
    first = ask(engine, q="In our first conversation, what do I keep?", now=now)
    assert first["time_range"]["start"] == "2026-11-20"  # type: ignore[index]
    assert hits(first)[0]["id"] == "diary/2026-11-20.md#20:01" and hits(first)[0]["in_window"]
    # Content after a verb form is a topic, not the last conversation: no window.
    topic = ask(engine, q="the last time we talked about the bike", now=now)
    assert topic["time_range"] is None
    # No conversation before today's: the window is not applied, and says so.
    early = ask(engine, q="what did we talk about last time we talked", now="2026-11-20T21:00:00")
    assert early["time_range"]["fallback"] == "empty"  # type: ignore[index]
    # A calendar date in the same question is the firmer anchor.
    dated = ask(engine, q="11月20日 上次聊天 说了什么", now=now)
    assert dated["time_range"]["start"] == "2026-11-20"  # type: ignore[index]
    assert dated["time_range"]["session"] is None  # type: ignore[index]


def test_an_untimed_diary_page_is_not_a_turn(tmp_path: Path) -> None:
    # A day file without "## HH:MM" sections is a journal page that names the cat in
    # passing; measured as a turn, its length alone would put it above the cat's section.
    page = "Lazy Sunday. " + " ".join(f"note{i}" for i in range(60)) + " 年糕 on my feet.\n"
    files = {
        "diary/2026-10-25.md": page,
        "diary/2026-11-01.md": "## 09:00\n年糕 woke me up.\n",
        "wiki/pets.md": "# Pets\n\n## 年糕\nAn orange tabby, three years old.\n",
    }
    engine = engine_for(tmp_path, files)
    got = hits(ask(engine, q="年糕", now="2026-11-25T12:00:00", explain=True, expand_links=False))
    info = {h["id"]: h["explain"]["information"] for h in got}
    assert (
        info["diary/2026-10-25.md"]
        == info["wiki/pets.md#年糕"]
        == info["diary/2026-11-01.md#09:00"]
    )
    assert got[0]["id"] == "wiki/pets.md#年糕"
