from __future__ import annotations

import pytest

from wikimem_watch.core.facts import asked_before, indexed_text, trailing_question
from wikimem_watch.core.models import Entry


@pytest.mark.parametrize(
    ("text", "asked"),
    [
        ("I loved it. What films do you like?", "What films do you like?"),
        ("那太好了。你喜欢哪种菜系呢？", "你喜欢哪种菜系呢？"),
        ("Great. Where did you go? Who came along?", "Where did you go? Who came along?"),
        ("他说：「你叫什么？」", "他说：「你叫什么？」"),
        ("What a day? No. It was fine.", ""),
        ("A statement with no question at all", ""),
        ("", ""),
        ("Line one\nAnd a question on its own line?\n\n", "And a question on its own line?"),
    ],
)
def test_trailing_question_is_the_question_an_entry_ends_with(text: str, asked: str) -> None:
    assert trailing_question(text) == asked


def test_trailing_question_reads_only_the_end_of_a_long_entry() -> None:
    text = "Why? " + "word " * 10_000 + "and the end?"
    asked = trailing_question(text)
    assert asked.endswith("word and the end?") and len(asked) <= 600
    assert "Why?" not in asked


def _diary(line: int, time: str | None, text: str, kind: str = "diary") -> Entry:
    return Entry(
        id=f"diary/2026-11-02.md#{time}",
        path="diary/2026-11-02.md",
        kind=kind,
        heading=time or "",
        line=line,
        text=text,
        hash=str(line),
        date="2026-11-02",
        time=time,
    )


def test_each_diary_entry_is_read_with_the_question_before_it_in_day_order() -> None:
    entries = (
        _diary(1, "20:05", "Sichuan and Cantonese, mostly."),
        _diary(5, "20:00", "I'm learning to cook. Which cuisine do you like?"),
        _diary(9, "20:10", "Thanks for asking."),
    )
    assert asked_before(entries) == ["Which cuisine do you like?", "", ""]


def test_the_question_before_is_one_more_field_of_the_indexed_text() -> None:
    entry = _diary(1, "20:05", "Sichuan, mostly.")
    assert indexed_text(entry, 3, "Which cuisine?").split("\n") == [
        "Sichuan, mostly.",
        "",
        "Which cuisine?",
    ]
