"""Byte preservation of the write path's edits over arbitrary notes (ADR-0016)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem_watch.core import edit, items
from wikimem_watch.core.parse import parse_note
from wikimem_watch.errors import BadRequest

WORDS = st.sampled_from(
    ["alpha", "beta  ", "γάμμα", "火锅", "  x", "- item", "`code`", "<!-- c -->", ""]
)
LINE = st.lists(WORDS, min_size=0, max_size=3).map(" ".join)
NAMES = st.sampled_from(["Ann", "Bob", "Cy 中文", "harbour", "08:00", "11:30", "23:59"])


@st.composite
def notes(draw: st.DrawFn) -> str:
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    lines: list[str] = []
    if draw(st.booleans()):
        lines += ["---", "tags: [a, b]", "---"]
    if draw(st.booleans()):
        lines += ["# Title", ""]
    lines += draw(st.lists(LINE, max_size=3))
    for name in draw(st.lists(NAMES, max_size=5)):
        lines.append("## " + name + draw(st.sampled_from(["", "  ", "\t"])))
        lines += draw(st.lists(LINE, max_size=4))
    text = nl.join(lines)
    return text + (nl if draw(st.booleans()) else "")


@settings(max_examples=300, deadline=None)
@given(notes(), NAMES.filter(lambda n: ":" not in n), st.sampled_from(["new text", "two\nlines  "]))
def test_upsert_changes_only_the_items_section(old: str, name: str, body: str) -> None:
    body = edit.check_body(body)
    meta = edit.render_meta("agent", None, "2026-07-21T08:00:00+00:00")
    new, created = edit.upsert_item(old, name, body, meta)
    span = items.find_item(old, name)
    old_lines, new_lines = items.split_lines(old), items.split_lines(new.text)
    if span is None:
        assert created and new.appended is not None
        assert new.text.startswith(old.rstrip("\r\n")) and new.text.startswith(old[: len(old) - 2])
    else:
        start, end = span
        assert old_lines[:start] == new_lines[:start]  # everything before: byte for byte
        tail = old_lines[end:]
        if tail:
            assert new_lines[-len(tail) :] == tail  # everything after: byte for byte
        assert old_lines[start].rstrip("\r\n") == new_lines[start].rstrip("\r\n")  # heading kept
        if "\r\n" in old and old.count("\r\n") * 2 > old.count("\n"):
            assert "\n" not in new.text.replace("\r\n", "")  # the file's own line endings
        assert old.endswith(("\n", "\r")) == new.text.endswith(("\n", "\r")) or end < len(old_lines)
    entries = [
        e for e in parse_note("wiki/x.md", new.text).entries if " ".join(e.heading.split()) == name
    ]
    assert entries and entries[-1].text == body.strip()
    assert entries[-1].owner == "agent"


@settings(max_examples=300, deadline=None)
@given(notes(), st.sampled_from(["00:00", "08:00", "11:30", "23:59"]))
def test_a_diary_insert_adds_one_block_and_nothing_else(old: str, time: str) -> None:
    new = edit.insert_diary_entry(old, time, "an entry", "")
    lines = items.split_lines(new.text)
    start = new.line - 1
    block = items.split_lines(edit.diary_block(time, "an entry", ""))
    nl_fixed = "".join(lines[:start]) + "".join(lines[start + len(block) :])
    remaining = nl_fixed.replace("\r\n", "\n")
    original = old.replace("\r\n", "\n")
    # What is left is the old text, plus only the line break(s) that separate our block.
    cut = len("".join(lines[:start]).replace("\r\n", "\n"))
    candidates = {remaining, remaining[:cut] + remaining[cut + 1 :]}
    candidates |= {c[: cut - 1] + c[cut:] for c in set(candidates) if cut}
    candidates |= {c.rstrip("\n") for c in set(candidates)}
    assert original in candidates or original.rstrip("\n") in candidates
    entries = parse_note("diary/2026-07-21.md", new.text).entries
    assert any(e.line == new.line and e.time == time and e.text == "an entry" for e in entries)


@settings(max_examples=200, deadline=None)
@given(notes(), NAMES.filter(lambda n: ":" not in n))
def test_delete_removes_exactly_the_sections_lines(old: str, name: str) -> None:
    out = edit.delete_item(old, name)
    span = items.find_item(old, name)
    if span is None:
        assert out is None
        return
    expected, nl = old, edit.newline_of(old)
    while span is not None:  # every section of that name goes, as in the wikimem library
        lines = items.split_lines(expected)
        head, tail = "".join(lines[: span[0]]), "".join(lines[span[1] :])
        if not tail and head.endswith(nl + nl):  # the last section's blank line goes with it
            head = head[: -len(nl)]
        expected = head + tail
        span = items.find_item(expected, name)
    assert out == expected and items.find_item(out, name) is None


@settings(max_examples=300, deadline=None)
@given(notes(), NAMES.filter(lambda n: ":" not in n), st.sampled_from(["new text", "two\nlines"]))
def test_adding_an_item_and_deleting_it_gives_the_file_back(old: str, name: str, body: str) -> None:
    if items.find_item(old, name) is not None:
        return  # an upsert of an item that is there replaces it: nothing to give back
    added, created = edit.upsert_item(old, name, body, "")
    assert created
    out = edit.delete_item(added.text, name)
    if not old or old.endswith(("\n", "\r")):
        assert out == old
    else:  # a file with no final newline gets one
        assert out == old + edit.newline_of(old)


@settings(max_examples=300, deadline=None)
@given(
    notes(),
    st.sampled_from(["Title", "title", "x", "Ann", "ann"]),
    st.sampled_from(["new", "a\nb"]),
)
def test_an_upsert_never_adds_a_second_item_of_a_name_the_note_has(
    old: str, name: str, body: str
) -> None:
    """Whether the name is a ``##`` heading, one in another case, or the note's title (its
    prose before the first section), the index reads as many items of that name after the
    upsert as before (one more only when there was none), the last one holding the text."""
    path = "wiki/x.md"

    def named(text: str) -> list[str]:
        entries = parse_note(path, text).entries
        # A stub (a title and nothing under it) is no text to replace: a new section is.
        return [
            e.text
            for e in entries
            if e.heading.lower() == name.lower() and (e.text or e.id != path)
        ]

    try:
        new, created = edit.upsert_item(old, name, body, "", path)
    except BadRequest:
        return  # refused (two spellings of the name, or prose split by the title): unchanged
    before, after = named(old), named(new.text)
    assert len(after) == len(before) + (1 if created else 0)
    assert created == (not before) and after[-1] == body
