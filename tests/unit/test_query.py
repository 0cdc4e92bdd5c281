from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, engine_for, hits, write
from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.core.tokenize import estimate_tokens
from wikimem_watch.errors import BadRequest
from wikimem_watch.retrieval.query import run_query
from wikimem_watch.retrieval.request import QueryRequest
from wikimem_watch.vectors.hash_embedder import HashEmbedder
from wikimem_watch.vectors.service import VectorService

NOW = "2026-11-29T10:00:00"


def ask(engine: Engine, **fields: object) -> dict[str, object]:
    fields.setdefault("now", NOW)
    return run_query(engine, QueryRequest.from_dict(fields))


def test_hot_pot_finds_the_hot_pot_entries(example_engine: Engine) -> None:
    found = hits(ask(example_engine, q="火锅", k=5, expand_links=False))
    assert len(found) == 5
    assert all("火锅" in f"{h['heading']} {h['text']}" for h in found)
    assert all("火锅" in h["matched_terms"] for h in found)  # type: ignore[operator]


def test_same_minute_entries_are_two_hits(example_engine: Engine) -> None:
    found = hits(ask(example_engine, q="年糕 肥牛 火锅 鸳鸯锅", k=20, expand_links=False))
    same = [h for h in found if h["date"] == "2026-11-14" and h["time"] == "19:30"]
    assert len(same) == 2 and same[0]["id"] != same[1]["id"]


def test_hits_carry_location_and_metadata(example_engine: Engine) -> None:
    hit = hits(ask(example_engine, q="half marathon race number", k=1))[0]
    assert hit["path"] == "diary/2026-11-20.md" and hit["heading"] == "21:00"
    assert isinstance(hit["line"], int) and hit["line"] > 1
    assert hit["owner"] == "user:lin" and hit["source"] == "conv_20261120"


def test_kinds_paths_and_tags_filter(example_engine: Engine) -> None:
    wiki = hits(ask(example_engine, q="火锅", kinds=["wiki"], expand_links=False))
    assert wiki and all(h["kind"] == "wiki" for h in wiki)
    notes = hits(ask(example_engine, q="杭州", paths=["notes/"], expand_links=False))
    assert notes and all(str(h["path"]).startswith("notes/") for h in notes)
    glob = hits(ask(example_engine, q="杭州", paths=["diary/2026-11-0*"], expand_links=False))
    assert glob and all(str(h["path"]).startswith("diary/2026-11-0") for h in glob)
    tagged = hits(ask(example_engine, q="run", tags=["#running"], expand_links=False))
    assert tagged and all("running" in h["tags"] for h in tagged)  # type: ignore[operator]


def test_explicit_time_range_gates_diary_but_not_wiki(example_engine: Engine) -> None:
    result = ask(
        example_engine, q="火锅", time_range=["2026-11-14", "2026-11-14"], k=20, expand_links=False
    )
    found = hits(result)
    diary = [h for h in found if h["kind"] == "diary"]
    assert diary and all(h["date"] == "2026-11-14" for h in diary)
    assert any(h["kind"] == "wiki" for h in found)
    assert result["time_range_source"] == "explicit" and result["widened"] is False


def test_empty_window_widens_and_says_so(example_engine: Engine) -> None:
    result = ask(example_engine, q="火锅", time_range="2026-11-13..2026-11-13", kinds=["diary"])
    assert result["widened"] is True
    gate = result["time_range"]
    assert isinstance(gate, dict) and gate["start"] == "2026-11-12"


def test_time_only_question_lists_the_window_in_time_order(example_engine: Engine) -> None:
    result = ask(example_engine, q="11月14号发生了什么")
    found = hits(result)
    assert result["time_range_source"] == "parsed" and result["listing"] is True
    assert [h["date"] for h in found] == ["2026-11-14"] * 4
    assert [h["time"] for h in found] == sorted(str(h["time"]) for h in found)
    assert result["cut"] is False and all(h["in_window"] is True for h in found)


def test_parsed_time_words_are_not_scored(example_engine: Engine) -> None:
    result = ask(example_engine, q="昨天 火锅", now="2026-11-15T09:00:00")
    assert "昨天" not in result["query_terms"]  # type: ignore[operator]
    found = hits(result)
    inside = [h for h in found if h["in_window"] is True]
    assert inside and all(h["date"] == "2026-11-14" for h in inside)
    assert found[: len(inside)] == inside  # the window's entries first, then the rest
    off = ask(example_engine, q="昨天 火锅", parse_time=False)
    assert off["time_range"] is None


def test_link_expansion_attaches_linked_entries_to_their_hit(example_engine: Engine) -> None:
    found = hits(ask(example_engine, q="Zhou Piranesi", k=2))
    assert len(found) == 2, "context never takes a hit's place"
    assert "wiki/people.md#小周" not in {h["id"] for h in found}
    context = [(h, c) for h in found for c in h.get("linked", [])]  # type: ignore[attr-defined]
    assert any(c["id"] == "wiki/people.md#小周" and c["via"] == h["id"] for h, c in context)
    plain = hits(ask(example_engine, q="Zhou Piranesi", k=2, expand_links=False))
    assert not any(h.get("linked") for h in plain)


def test_budget_keeps_a_prefix_and_always_the_first(example_engine: Engine) -> None:
    full = hits(ask(example_engine, q="火锅", k=10, expand_links=False))
    cut = hits(ask(example_engine, q="火锅", k=10, expand_links=False, budget_tokens=60))
    assert 1 <= len(cut) < len(full)
    assert [h["id"] for h in cut] == [h["id"] for h in full[: len(cut)]]
    one = hits(ask(example_engine, q="火锅", k=10, expand_links=False, budget_tokens=1))
    assert len(one) == 1


def test_explain_reports_each_signal(example_engine: Engine) -> None:
    hit = hits(ask(example_engine, q="dentist", k=1, explain=True))[0]
    explain = hit["explain"]
    assert isinstance(explain, dict)
    assert explain["bm25_raw"] > 0 and 0.0 < explain["bm25_norm"] <= 1.0
    assert set(explain["weights"]) == {
        "bm25",
        "vector",
        "recency",
        "previous",
        "question",
        "information",
    }
    assert 0.0 < explain["information"] <= 1.0
    assert explain["matched_terms"] == ["dentist"]


def test_recency_weight_prefers_newer_entries(tmp_path: Path) -> None:
    write(tmp_path, "diary/2026-01-01.md", "## 10:00\nsame words here\n")
    write(tmp_path, "diary/2026-11-01.md", "## 10:00\nsame words here\n")
    engine = Engine(load_config(tmp_path))
    engine.scan()
    tie = hits(ask(engine, q="same words", weights={"recency": 0}, expand_links=False))
    assert tie[0]["score"] == tie[1]["score"]
    newer = hits(ask(engine, q="same words", weights={"recency": 0.2}, expand_links=False))
    assert newer[0]["date"] == "2026-11-01"
    assert float(newer[0]["score"]) > float(newer[1]["score"])  # type: ignore[arg-type]


def test_weak_match_is_not_zeroed_by_normalisation(example_engine: Engine) -> None:
    found = hits(ask(example_engine, q="火锅 dentist", k=50, expand_links=False))
    matched = {t for h in found for t in h["matched_terms"]}  # type: ignore[attr-defined]
    assert len(found) > 2 and {"火锅", "dentist"} <= matched
    assert all(float(h["score"]) > 0 for h in found)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"k": 10}, '"q"'),
        ({"q": "x", "k": 0}, "k:"),
        ({"q": "x", "time_range": ["2026-13-01", "2026-01-02"]}, "time_range"),
        ({"q": "x", "time_range": ["2026-02-02", "2026-01-01"]}, "after"),
        ({"q": "x", "kinds": ["notes"]}, "kinds"),
        ({"q": "x", "weights": {"bm25": 0}}, "never switched off"),
        ({"q": "x", "bogus": 1}, "unknown"),
        ({"q": "x", "now": "yesterday"}, "now"),
    ],
)
def test_bad_requests_name_the_field(fields: dict[str, object], needle: str) -> None:
    with pytest.raises(BadRequest, match=needle):
        QueryRequest.from_dict(fields)


def test_unknown_time_zone_is_a_bad_request(example_engine: Engine) -> None:
    with pytest.raises(BadRequest, match="time zone"):
        ask(example_engine, q="x", tz="Mars/Olympus")


def test_time_range_expression_is_explicit(example_engine: Engine) -> None:
    result = ask(example_engine, q="dentist", time_range="上个月")
    assert result["time_range_source"] == "explicit"
    gate = result["time_range"]
    assert isinstance(gate, dict) and (gate["start"], gate["end"]) == ("2026-10-01", "2026-10-31")
    with pytest.raises(BadRequest):
        ask(example_engine, q="dentist", time_range="whenever")


def test_a_window_without_a_match_comes_first_then_matches_elsewhere(
    example_engine: Engine,
) -> None:
    # 昨天 = 2026-11-28 holds entries, but the dentist entries are weeks earlier.
    result = ask(example_engine, q="昨天 dentist", kinds=["diary"], now="2026-11-29T10:00:00", k=20)
    gate = result["time_range"]
    assert isinstance(gate, dict) and gate["fallback"] is None and gate["entries"] > 0
    found = hits(result)
    day = [h for h in found if h["in_window"] is True]
    assert len(day) == gate["entries"] and found[: len(day)] == day
    assert all(h["date"] == "2026-11-28" for h in day)
    assert any("dentist" in str(h["text"]).lower() for h in found[len(day) :])


def test_explicit_window_never_falls_back(example_engine: Engine) -> None:
    result = ask(
        example_engine, q="dentist", time_range=["2026-11-28", "2026-11-28"], kinds=["diary"]
    )
    gate = result["time_range"]
    assert isinstance(gate, dict) and gate["fallback"] is None and result["widened"] is False
    found = hits(result)
    assert found and all(h["date"] == "2026-11-28" for h in found)


def test_a_calendar_date_anchors_over_a_relative_word(example_engine: Engine) -> None:
    result = ask(example_engine, q="what did I cook last week, as noted on 14 November 2026")
    gate = result["time_range"]
    assert isinstance(gate, dict) and "14 November 2026" in str(gate["matched"])
    assert "week" not in result["query_terms"]  # type: ignore[operator]


class FakeVectors:
    """A scripted cosine signal: fixed cosines per vector key (the OS layer of embeddings)."""

    def __init__(self, cosines: dict[str, float]) -> None:
        self.by_key = cosines
        self.warmed: list[str] = []

    def warm(self, text: str) -> None:
        self.warmed.append(text)

    def cosines(
        self, text: str, keys: list[str], limit: int, within: Collection[str] | None = None
    ) -> dict[str, float]:
        if within is None:
            return dict(self.by_key)
        return {k: c for k, c in self.by_key.items() if k in within or k in keys}


@pytest.fixture
def vector_engine() -> Engine:
    """The example vault with vector keys tracked, as when an embedder is configured."""
    engine = Engine(load_config(EXAMPLE, {"embed": "hash"}))
    engine.scan()
    return engine


def _dentist(engine: Engine) -> str:
    entry = next(e for e in engine.entries.values() if "dentist" in e.text.lower())
    slot = engine.slot_of(entry.id)
    assert slot is not None
    return engine.vector_key(slot)


def test_a_candidate_found_only_by_the_vectors_still_ranks(vector_engine: Engine) -> None:
    vectors = FakeVectors({_dentist(vector_engine): 0.99})
    req = QueryRequest.from_dict(
        {
            "q": "火锅",
            "k": 50,
            "explain": True,
            "expand_links": False,
            "weights": {"vector": 1.0},
            "now": NOW,
        }
    )
    result = run_query(vector_engine, req, vectors)
    assert result["embedding_used"] is True and vectors.warmed == ["火锅"]
    only_vec = [h for h in hits(result) if "dentist" in str(h["text"]).lower()]
    assert only_vec and only_vec[0]["explain"]["bm25_raw"] == 0.0  # type: ignore[index]
    assert only_vec[0]["explain"]["cosine"] == 0.99  # type: ignore[index]


def test_vector_only_candidates_obey_kinds_and_the_gate(vector_engine: Engine) -> None:
    vectors = FakeVectors({_dentist(vector_engine): 0.99})
    for extra in ({"kinds": ["wiki"]}, {"time_range": ["2026-11-27", "2026-11-28"]}):
        req = QueryRequest.from_dict(
            {
                "q": "火锅",
                "k": 50,
                "expand_links": False,
                "weights": {"vector": 1.0},
                "now": NOW,
                **extra,
            }
        )
        found = hits(run_query(vector_engine, req, vectors))
        assert not any("dentist" in str(h["text"]).lower() for h in found), extra


@pytest.mark.parametrize(
    ("narrow", "field", "value"),
    [
        ({"kinds": ["wiki"]}, "kind", "wiki"),
        ({"kinds": ["wiki", "wiki"]}, "kind", "wiki"),
        ({"paths": ["wiki/"]}, "path", "wiki/plants.md"),
        ({"tags": ["garden"]}, "path", "wiki/plants.md"),
        ({"time_range": ["2026-11-25", "2026-11-25"], "kinds": ["diary"]}, "date", "2026-11-25"),
    ],
)
def test_a_narrow_filter_takes_the_nearest_entries_that_pass_it(
    tmp_path: Path, narrow: dict[str, object], field: str, value: str
) -> None:
    """The vault's nearest entries to the query are diary days the filter leaves out, and
    fewer than k entries it passes match the words: the nearest among those it passes fill
    the answer, not nothing."""
    files = {
        f"diary/2026-11-{d:02d}.md": "".join(
            f"## {h}:00\nmorning coffee walk {d} {h}\n" for h in range(10, 14)
        )
        for d in range(1, 21)
    }
    files["diary/2026-11-25.md"] = "## 08:00\nrepotted the fern\n## 09:00\nmorning coffee\n"
    files["wiki/plants.md"] = "".join(
        f"## Plant {i}\nFern leaf soil pot {i} #garden\n" for i in range(6)
    )
    for rel, text in files.items():
        write(tmp_path / "vault", rel, text)
    engine = Engine(load_config(tmp_path / "vault", {"embed": "hash"}))
    engine.scan()
    vectors = VectorService(HashEmbedder(), tmp_path / "vectors")
    vectors.open()
    vectors.sync.sync(engine.embedding_inputs())
    req = {"q": "morning coffee walk", "k": 2, "expand_links": False, "now": NOW, **narrow}
    result = run_query(engine, QueryRequest.from_dict(req), vectors)
    assert result["embedding_used"] is True and result["listing"] is False
    assert [h[field] for h in hits(result)] == [value, value]


def test_vector_weight_zero_or_no_signal_is_bm25_only(vector_engine: Engine) -> None:
    vectors = FakeVectors({_dentist(vector_engine): 0.99})
    req = QueryRequest.from_dict({"q": "火锅", "weights": {"vector": 0}, "now": NOW})
    assert run_query(vector_engine, req, vectors)["embedding_used"] is False
    assert vectors.warmed == []


def test_a_bm25_only_engine_keeps_no_vector_state_and_ignores_a_signal(
    example_engine: Engine,
) -> None:
    assert example_engine.tracks_vectors is False and example_engine.embedding_inputs() == {}
    vectors = FakeVectors({})
    req = QueryRequest.from_dict({"q": "火锅", "weights": {"vector": 1.0}, "now": NOW})
    assert run_query(example_engine, req, vectors)["embedding_used"] is False
    assert vectors.warmed == [], "nor is the query embedded for nothing"


@pytest.mark.parametrize(
    ("q", "start", "end"),
    [
        ("what happened yesterday", "2026-11-14", "2026-11-14"),
        ("昨天", "2026-11-14", "2026-11-14"),
        ("昨天发生了什么", "2026-11-14", "2026-11-14"),
        ("上周", "2026-11-02", "2026-11-08"),
    ],
)
def test_time_only_questions_list_their_window(
    example_engine: Engine, q: str, start: str, end: str
) -> None:
    result = ask(example_engine, q=q, now="2026-11-15T09:00:00", k=50)
    found = hits(result)
    assert found and all(start <= str(h["date"]) <= end for h in found)
    # oldest first; a section with no time keeps its place after the timed one above it
    # (test_engine.py), so only the timed entries are compared by time
    dates = [str(h["date"]) for h in found]
    assert dates == sorted(dates)
    timed = [(h["date"], h["time"]) for h in found if h["time"]]
    assert timed == sorted(timed)
    assert result["time_range_source"] == "parsed"


@pytest.mark.parametrize(
    ("q", "why"),
    [
        ("", "the query is empty"),
        ("   ", "the query is empty"),
        ("the of and", "nothing searchable left in 'the of and' after removing stop words"),
        ("☕ ?!", "nothing searchable in '☕ ?!': it holds no letters or digits"),
    ],
)
def test_a_query_with_nothing_searchable_says_so_in_its_note(
    example_engine: Engine, q: str, why: str
) -> None:
    result = ask(example_engine, q=q)
    assert hits(result) == []
    assert str(result["note"]).startswith(why)


def test_a_time_only_query_whose_window_is_empty_names_the_time_words(
    example_engine: Engine,
) -> None:
    result = ask(example_engine, q="2020年1月1日", now="2026-11-29T10:00:00")
    assert hits(result) == []
    assert "'2020年1月1日'" in str(result["note"]) and "no diary entries" in str(result["note"])


def test_a_query_with_words_left_has_no_note(example_engine: Engine) -> None:
    assert ask(example_engine, q="火锅")["note"] is None
    assert ask(example_engine, q="zzzyyyxxx")["note"] is None


def test_the_tour_s_recommendation_ranks_above_its_echo(example_engine: Engine) -> None:
    q, now = "前天推荐了什么小说", "2026-11-29T10:00:00"
    found = [h["id"] for h in hits(ask(example_engine, q=q, now=now))]
    assert found[:2] == ["diary/2026-11-27.md#21:31", "diary/2026-11-27.md#21:32"]
    plain = hits(ask(example_engine, q=q, now=now, weights={"information": 0}))
    assert plain[0]["id"] == "diary/2026-11-27.md#21:32"  # "好，那就读这本小说。"


def test_a_query_over_a_vault_with_no_notes_says_nothing_is_indexed(tmp_path: Path) -> None:
    engine = Engine(load_config(tmp_path))
    engine.scan()
    note = str(ask(engine, q="coffee")["note"])
    assert note.startswith("nothing is indexed: no notes were found in") and str(tmp_path) in note


def test_a_bm25_match_waiting_for_its_vector_is_not_put_below_non_matches(
    vector_engine: Engine,
) -> None:
    """During a first embedding run some entries have vectors and some not yet: the match
    without one gets the typical vector share, not none, so an entry that matches nothing
    but has a vector does not outrank it."""
    dentist = _dentist(vector_engine)
    others = [
        vector_engine.vector_key(vector_engine.slot_of(e.id) or 0)
        for e in vector_engine.entries.values()
        if "dentist" not in e.text.lower() and "牙" not in e.text
    ][:3]
    vectors = FakeVectors(dict(zip(others, (0.9, 0.5, 0.2), strict=True)))
    req = QueryRequest.from_dict(
        {"q": "dentist", "k": 5, "explain": True, "expand_links": False, "now": NOW}
    )
    result = run_query(vector_engine, req, vectors)
    assert result["embedding_used"] is True and dentist not in vectors.by_key
    first = hits(result)[0]
    assert "dentist" in str(first["text"]).lower()
    assert first["explain"]["cosine"] is None  # type: ignore[index]


DAY = "## 09:00\nBreakfast alone.\n## 12:00\nWe talked about the budget with Ann.\n## 18:00\nGym.\n"


@pytest.mark.parametrize("window", [["2026-11-21", "2026-11-21"], "yesterday"])
def test_a_content_free_question_with_an_explicit_window_lists_it(
    tmp_path: Path, window: object
) -> None:
    engine = engine_for(tmp_path, {"diary/2026-11-21.md": DAY})
    result = ask(engine, q="what did we talk about", now="2026-11-22T12:00", time_range=window)
    assert result["listing"] is True
    assert [h["time"] for h in hits(result)] == ["09:00", "12:00", "18:00"]


def test_a_content_free_question_about_an_empty_window_searches_nothing_else(
    tmp_path: Path,
) -> None:
    engine = engine_for(
        tmp_path, {"diary/2026-11-21.md": "## 10:00\nNothing much happened, we talked.\n"}
    )
    for q in ("what happened on November 2", "11月2号我们聊了什么"):
        result = ask(engine, q=q, now="2026-11-22T12:00")
        assert hits(result) == [] and "holds no diary entries" in str(result["note"]), q


def test_listed_entries_bring_their_links_and_explain(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-21.md": "## 09:00\nMet [[Ann]] for tea.\n",
            "Ann.md": "# Ann\nAnn keeps bees.\n",
        },
    )
    (hit,) = hits(ask(engine, q="昨天", now="2026-11-22T12:00", explain=True))
    assert [c["path"] for c in hit["linked"]] == ["Ann.md"]  # type: ignore[union-attr]
    assert hit["explain"]["listing"] is True  # type: ignore[index]


def test_a_wikimem_file_link_brings_the_notes_best_section(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-21.md": "## 09:00\nZorblat kayak plans, see [[file:trips]].\n",
            "wiki/trips.md": "## hiking\nHiking gear.\n## kayaking\nKayak gear.\n",
        },
    )
    (hit,) = hits(ask(engine, q="zorblat kayak", k=1))
    assert [c["heading"] for c in hit["linked"]] == ["kayaking"]  # type: ignore[union-attr]


def test_a_listing_and_the_hits_after_it_keep_to_the_budget_with_their_context(
    tmp_path: Path,
) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-21.md": "## 09:00\nQuiet morning at home, a long novel by the window.\n",
            "diary/2026-11-10.md": "## 09:00\nWent sailing, see [[Ann]].\n",
            "Ann.md": "# Ann\nAnn loves boats and the sea every weekend.\n",
        },
    )
    result = ask(engine, q="sailing yesterday", now="2026-11-22T12:00", budget_tokens=25)
    shown = [x for h in hits(result) for x in [h, *h.get("linked", [])]]  # type: ignore[list-item]
    assert sum(estimate_tokens(f"{x['heading']}\n{x['text']}") for x in shown) <= 25


def test_a_listed_entry_is_not_repeated_as_another_hits_context(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-21.md": "## 09:00\nQuiet morning at home.\n",
            "diary/2026-11-10.md": "## 09:00\nWent sailing, see [[2026-11-21]].\n",
        },
    )
    found = hits(ask(engine, q="sailing yesterday", now="2026-11-22T12:00"))
    ids = [str(x["id"]) for h in found for x in [h, *h.get("linked", [])]]  # type: ignore[list-item]
    assert len(ids) == len(set(ids)) and ids[0] == "diary/2026-11-21.md#09:00"


def test_a_note_both_a_listed_entry_and_a_later_hit_link_to_is_shown_once(
    tmp_path: Path,
) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-21.md": "## 09:00\nQuiet morning, see [[Ann]].\n",
            "diary/2026-11-10.md": "## 09:00\nWent sailing, see [[Ann]].\n",
            "Ann.md": "# Ann\nAnn loves boats.\n",
        },
    )
    found = hits(ask(engine, q="sailing yesterday", now="2026-11-22T12:00"))
    assert [h["id"] for h in found] == ["diary/2026-11-21.md#09:00", "diary/2026-11-10.md#09:00"]
    ids = [str(x["id"]) for h in found for x in [h, *h.get("linked", [])]]  # type: ignore[list-item]
    assert ids.count("Ann.md") == 1 and "linked" not in found[1]


@pytest.mark.parametrize(
    "fields",
    [
        {"q": "zorblat"},  # ranked, no window
        {"q": "zorblat", "time_range": ["2026-11-10", "2026-11-10"]},  # explicit window
        {"q": "zorblat on November 10"},  # parsed window
        {"q": "what happened on November 10"},  # a listing
    ],
)
def test_link_context_never_shows_a_diary_entry_after_now(
    tmp_path: Path, fields: dict[str, object]
) -> None:
    """Asked as of noon on the 12th, a plan's links to the 20th and to that evening bring
    nothing; its links to earlier entries (outside the window too) and to that morning do."""
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-10.md": (
                "## 09:00\nZorblat plans: string from [[2026-11-05]], fly on [[2026-11-20]],"
                " test at [[2026-11-12#08:00]] and again at [[2026-11-12#20:00]].\n"
            ),
            "diary/2026-11-05.md": "## 18:00\nBought string.\n",
            "diary/2026-11-12.md": "## 08:00\nTested.\n## 20:00\nTested again.\n",
            "diary/2026-11-20.md": "## 10:00\nFlew it on the hill.\n",
        },
    )
    result = ask(engine, now="2026-11-12T12:00", **fields)
    (plan,) = [h for h in hits(result) if h["id"] == "diary/2026-11-10.md#09:00"]
    linked = [c["id"] for c in plan.get("linked", [])]  # type: ignore[attr-defined]
    assert sorted(linked) == ["diary/2026-11-05.md#18:00", "diary/2026-11-12.md#08:00"]


def test_a_window_with_kinds_wiki_is_neither_widened_nor_a_listing(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {"wiki/kiwi.md": "## kiwi\nkiwi orchard\n", "diary/2026-11-28.md": "## 09:00\nkiwi\n"},
    )
    day = ["2026-11-28", "2026-11-28"]
    for fields in ({"q": "kiwi yesterday"}, {"q": "kiwi", "time_range": day}):
        result = ask(engine, kinds=["wiki"], **fields)
        assert [h["id"] for h in hits(result)] == ["wiki/kiwi.md#kiwi"]
        assert result["widened"] is False and result["listing"] is False
        window = result["time_range"]
        assert window["start"] == window["end"] == "2026-11-28"  # type: ignore[index]
    alone = ask(engine, q="yesterday", kinds=["wiki"])
    assert hits(alone) == [] and "kinds ['wiki'] leave them out" in str(alone["note"])


@pytest.mark.parametrize(("q", "end"), [("this week", "2026-11-18"), ("今年", "2026-11-18")])
def test_a_window_is_reported_only_as_far_as_now(tmp_path: Path, q: str, end: str) -> None:
    engine = engine_for(tmp_path, {"diary/2026-11-17.md": "## 09:00\nA walk.\n"})
    result = ask(engine, q=q, now="2026-11-18T12:00")
    assert result["time_range"]["end"] == end  # type: ignore[index]


@pytest.mark.parametrize(
    "fields",
    [
        {"q": "what happened", "time_range": "this afternoon"},
        {"q": "what happened", "time_range": ["2026-11-29", "2026-12-01"]},
        {"q": "what happened this afternoon"},
    ],
)
def test_a_window_partly_after_now_is_reported_as_far_as_now(
    tmp_path: Path, fields: dict[str, object]
) -> None:
    """Asked at 15:00, the window holds the entries until 15:00, and says so: its end is
    now's day and, for a time of day, now's time (it said 18:00 while 16:00 was not in it)."""
    engine = engine_for(
        tmp_path, {"diary/2026-11-29.md": "## 13:00\nLunch.\n## 16:00\nTea.\n## 20:00\nDinner.\n"}
    )
    result = ask(engine, now="2026-11-29T15:00", **fields)
    window = result["time_range"]
    assert isinstance(window, dict) and window["end"] == "2026-11-29"
    assert window["entries"] == 1
    assert window["end_time"] == ("15:00" if window["start_time"] else None)
    assert [h["time"] for h in hits(result)] == ["13:00"]


def test_an_explicit_window_wholly_after_now_holds_nothing_and_shows_no_diary(
    tmp_path: Path,
) -> None:
    """No day of it is before now: it is reported as given with no entries, and it still
    holds (no diary entry from elsewhere), though the diary has one dated inside it."""
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-29.md": "## 09:00\nkite shopping\n",
            "diary/2026-12-02.md": "## 10:00\nkite flying, planned\n",
            "wiki/kites.md": "## red kite\nkite notes\n",
        },
    )
    result = ask(engine, q="kite", now="2026-11-29T15:00", time_range=["2026-12-01", "2026-12-05"])
    window = result["time_range"]
    assert isinstance(window, dict) and (window["start"], window["end"]) == (
        "2026-12-01",
        "2026-12-05",
    )
    assert (window["entries"], window["fallback"], result["widened"]) == (0, None, False)
    assert [h["id"] for h in hits(result)] == ["wiki/kites.md#red kite"]


def test_a_window_wholly_after_now_lists_nothing_of_today(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, {"diary/2026-11-22.md": "## 08:00\nBreakfast.\n"})
    result = ask(engine, q="what is planned for tomorrow", now="2026-11-22T12:00")
    assert not any(h.get("in_window") for h in hits(result))
    assert result["time_range"]["fallback"] == "empty"  # type: ignore[index]


def test_a_widened_time_of_day_window_is_whole_days(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-21.md": "## 09:00\nA.\n## 23:30\nB.\n",
            "diary/2026-11-22.md": "## 00:30\nC.\n",
        },
    )
    gate = ask(engine, q="this morning", now="2026-11-22T09:00")["time_range"]
    assert gate["widened_days"] and gate["start_time"] is None  # type: ignore[index]


def test_a_one_character_chinese_or_korean_word_finds_the_sentence_it_is_in(
    tmp_path: Path,
) -> None:
    """猫, 车, 밥 are words of their own, but a sentence is indexed as bigrams: the query is
    scored as the character wherever it stands, and says which word matched."""
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-03-02.md": "# 2026-03-02\n\n## 09:00\n\n今天我的猫生病了，带它去看医生。\n",
            "diary/2026-03-03.md": (
                "# 2026-03-03\n\n## 18:00\n\n我买了一辆新车。\n\n## 19:00\n\n밥을 먹었다\n"
            ),
            "wiki/pets.md": "## 狗\n\n邻居家的狗很乖。\n",
        },
    )
    for q, where in [("猫", "2026-03-02"), ("车", "2026-03-03"), ("밥", "2026-03-03")]:
        got = hits(ask(engine, q=q))
        assert [h["path"] for h in got] == [f"diary/{where}.md"], q
        assert got[0]["matched_terms"] == [q]
    assert hits(ask(engine, q="鱼")) == []


def test_a_question_particle_is_not_what_an_entry_is_found_by(tmp_path: Path) -> None:
    """ "看牙医了吗": 了吗 asks; an entry that shares only it ("遇到什么麻烦了吗") is no match."""
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-03-02.md": "# 2026-03-02\n\n## 09:00\n\n路上遇到什么麻烦了吗？\n",
            "diary/2026-03-03.md": "# 2026-03-03\n\n## 10:00\n\n下午去看牙医。\n",
        },
    )
    got = hits(ask(engine, q="看牙医了吗", k=5))
    assert [h["path"] for h in got] == ["diary/2026-03-03.md"]
    assert [h["path"] for h in hits(ask(engine, q="了吗"))] == ["diary/2026-03-02.md"]  # alone


def test_a_window_at_the_end_of_the_calendar_widens_without_overflow(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, {"a.md": "## x\n\nhello\n"})
    for day in ("9999-12-31", "0001-01-01"):
        result = ask(engine, q="x", time_range=f"{day}..{day}", now=f"{day}T10:00")
        assert result["time_range"]["entries"] == 0  # type: ignore[index]


def test_tags_alone_list_the_tagged_entries_the_most_recent_first(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-03-02.md": "# 2026-03-02\n\n## 09:00\n\nwatered #plants\n",
            "diary/2026-03-05.md": "# 2026-03-05\n\n## 10:00\n\nrepotted #plants/succulents\n",
            "diary/2026-03-06.md": "# 2026-03-06\n\n## 10:00\n\nran 5 km #running\n",
            "wiki/garden.md": "## basil\n\nsun #plants\n",
        },
    )
    result = ask(engine, q="", tags=["plants"], k=2)
    assert [h["path"] for h in hits(result)] == ["diary/2026-03-05.md", "diary/2026-03-02.md"]
    assert result["cut"] is True and result["note"] is None
    everything = hits(ask(engine, q="", tags=["plants"]))
    assert [h["path"] for h in everything][-1] == "wiki/garden.md"  # no time: after the diary
    assert hits(ask(engine, q="", tags=["cooking"])) == []
    slash = hits(ask(engine, q="", tags=["#plants/"]))  # as typed from a nested tag's parent
    assert [h["path"] for h in slash] == [h["path"] for h in everything]


def test_a_tag_filter_matches_composed_and_decomposed_accents_alike(tmp_path: Path) -> None:
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    engine = engine_for(
        tmp_path,
        {
            "wiki/a.md": f"---\ntags: [{composed}]\n---\n## a\n\ncroissant\n",
            "wiki/b.md": f"## b\n\ncroissant #{decomposed}/menu\n",
        },
    )
    for want in (composed, decomposed):
        found = hits(ask(engine, q="croissant", tags=[want], expand_links=False))
        assert sorted(str(h["path"]) for h in found) == ["wiki/a.md", "wiki/b.md"], want


def test_a_tags_listing_orders_items_without_time_by_path_and_keeps_the_budget(
    tmp_path: Path,
) -> None:
    files = {f"n{i}.md": f"## item {i}\n\nplain text {i} #t\n" for i in range(3)}
    engine = engine_for(tmp_path, files)
    write(tmp_path, "n0.md", "## item 0\n\nedited text 0 #t\n")
    engine.apply(["n0.md"])  # new slots for n0: the order must not follow slots
    assert [h["path"] for h in hits(ask(engine, q="", tags=["t"]))] == ["n0.md", "n1.md", "n2.md"]
    assert len(hits(ask(engine, q="", tags=["t"], budget_tokens=5))) == 1  # the first always
    explained = hits(ask(engine, q="", tags=["t"], explain=True))
    assert explained[0]["explain"] == {"listing": True, "tags": ["t"]}


@pytest.mark.parametrize(
    "paths",
    [["diary"], ["diary/"], ["./diary"], ["./diary/"], ["/diary"], ["diary\\"], ["./diary/*.md"]],
)
def test_a_path_filter_reads_a_vault_relative_folder_however_it_is_written(
    example_engine: Engine, paths: list[str]
) -> None:
    found = hits(ask(example_engine, q="火锅", paths=paths, k=50, expand_links=False))
    assert found and all(str(h["path"]).startswith("diary/") for h in found)


def test_the_vault_itself_as_a_path_filters_nothing_and_an_empty_path_is_refused(
    example_engine: Engine,
) -> None:
    everything = hits(ask(example_engine, q="火锅", k=50, expand_links=False))
    for root in (["."], ["./"], ["/"], ["diary", "."]):
        assert (
            hits(ask(example_engine, q="火锅", paths=root, k=50, expand_links=False)) == everything
        )
    for empty in ([""], ["diary", " "]):
        with pytest.raises(BadRequest, match='"paths" holds an empty path'):
            QueryRequest.from_dict({"q": "x", "paths": empty})


@pytest.mark.parametrize(
    ("now", "tz"), [("0001-01-01T00:00+14:00", "UTC"), ("9999-12-31T23:59-12:00", "Asia/Shanghai")]
)
def test_a_now_that_its_zone_moves_out_of_the_calendar_is_a_bad_request(
    example_engine: Engine, now: str, tz: str
) -> None:
    with pytest.raises(BadRequest, match=r"now: .* falls outside the years 1-9999"):
        ask(example_engine, q="coffee yesterday", now=now, tz=tz)


@pytest.mark.parametrize("window", [["2026-11-21", "2026-11-21"], "November 21"])
def test_time_words_are_not_scored_under_an_explicit_window_either(
    tmp_path: Path, window: object
) -> None:
    """The window is the explicit one; "yesterday" in the question is no word to match, as
    it is none when the question's own time words open the window."""
    engine = engine_for(
        tmp_path,
        {"diary/2026-11-21.md": "## 09:00\ncoffee with Ann\n\n## 10:00\nyesterday's rain\n"},
    )
    result = ask(engine, q="coffee yesterday", now="2026-11-22T12:00", time_range=window)
    assert result["query_terms"] == ["coffe"]
    assert [h["time"] for h in hits(result)][:1] == ["09:00"]
    off = ask(engine, q="coffee yesterday", time_range=window, parse_time=False)
    assert "yesterday" in off["query_terms"]  # type: ignore[operator]


def test_an_explicit_window_that_holds_nothing_says_so(tmp_path: Path) -> None:
    engine = engine_for(tmp_path, {"diary/2026-11-21.md": "## 09:00\ncoffee with Ann\n"})
    result = ask(engine, q="what happened", time_range=["2026-11-10", "2026-11-12"])
    assert hits(result) == []
    # Widened first (±1, then ±3 days), and still empty: the note names what was searched.
    assert result["widened"] is True
    assert result["note"] == "the window 2026-11-07..2026-11-15 holds no diary entries"


def test_ties_rank_the_same_in_a_live_index_and_a_fresh_scan(tmp_path: Path) -> None:
    """Forty entries match "coffee" equally; which of them join the information pool (20)
    was decided by slot order, which edits change and a fresh scan does not share."""

    def text(i: int) -> str:
        return f"## 09:00\n\ncoffee word{i % 7} zz{i}\n"

    files = {f"n{i:02d}.md": text(i) for i in range(40)}
    live = engine_for(tmp_path, files)
    first = [f"n{i:02d}.md" for i in range(20)]
    for rel in first:  # gone and back: their entries take new slots after the others
        (tmp_path / rel).unlink()
    live.apply(first)
    for rel in first:
        write(tmp_path, rel, files[rel])
    live.apply(first)
    fresh = Engine(load_config(tmp_path))
    fresh.scan()
    for k in (5, 10, 30):
        got = [h["id"] for h in hits(ask(live, q="coffee", k=k))]
        assert got == [h["id"] for h in hits(ask(fresh, q="coffee", k=k))]


def test_a_result_reports_the_generation_its_hits_were_read_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write swapped in right after the query let go of the lock is not in its hits; the
    result's ``generation`` must not claim it (a client that wrote at generation N and reads
    ``generation >= N`` takes the hits to include its write)."""
    from wikimem_watch.retrieval.gate import Gate

    engine = engine_for(tmp_path, {"diary/2026-11-28.md": "## 09:00\ncoffee with Ann\n"})
    read_at = engine.generation
    as_dict = Gate.as_dict

    def a_write_lands_first(gate: Gate) -> dict[str, object]:  # first called after the lock
        if engine.generation == read_at:
            write(tmp_path, "diary/2026-11-28.md", "## 09:00\ncoffee with Ann\n## 11:00\ncoffee\n")
            engine.apply(["diary/2026-11-28.md"])
        return as_dict(gate)

    monkeypatch.setattr(Gate, "as_dict", a_write_lands_first)
    result = ask(engine, q="coffee yesterday")
    assert engine.generation == read_at + 1  # the write landed
    assert len(hits(result)) == 1 and result["generation"] == read_at


def test_a_bare_date_as_now_is_that_whole_day(tmp_path: Path) -> None:
    """``now: "2026-11-29"`` was midnight: that day's entries were in the future, and
    "what happened today" widened into the day before."""
    engine = engine_for(
        tmp_path,
        {
            "diary/2026-11-28.md": "# 2026-11-28\n\n## 20:00\n\nthe day before\n",
            "diary/2026-11-29.md": "## 09:00\n\nmorning run\n\n## 21:00\n\nlate tea\n",
        },
    )
    result = run_query(engine, QueryRequest.from_dict({"q": "今天发生了什么", "now": "2026-11-29"}))
    assert [(h["date"], h["time"]) for h in hits(result)] == [
        ("2026-11-29", "09:00"),
        ("2026-11-29", "21:00"),
    ]
    assert result["widened"] is False
