"""The write path's pure edits and name rules (core/edit.py, ADR-0016)."""

from __future__ import annotations

import pytest

from wikimem_watch.core import edit
from wikimem_watch.errors import BadRequest


def test_a_crlf_note_without_final_newline_keeps_every_other_byte() -> None:
    old = (
        "---\r\ntags: [a]\r\n---\r\n# P\r\n\r\n## Ann  \r\nold\r\n\r\n## Bob\r\nbob  \r\n<!-- x -->"
    )
    new, created = edit.upsert_item(old, "Bob", "new bob", "")
    assert not created
    assert new.text == old.replace("bob  \r\n<!-- x -->", "\r\nnew bob")
    assert not new.text.endswith("\n")


def test_diary_entries_go_in_time_order_and_equal_times_keep_theirs() -> None:
    text = "# 2026-07-21\n\n## 09:00\n\na\n\n## 11:00\n\nb\n"
    text = edit.insert_diary_entry(text, "09:00", "c", "").text
    text = edit.insert_diary_entry(text, "08:00", "d", "").text
    heads = [h for _, h in edit.sections(text)]
    assert heads == ["08:00", "09:00", "09:00", "11:00"]
    assert text.index("\na\n") < text.index("\nc\n")


def test_an_entry_at_the_end_is_a_pure_append() -> None:
    old = "## 09:00\na"
    new = edit.insert_diary_entry(old, "10:00", "b", "")
    assert new.appended is not None and new.text == old + new.appended
    assert new.text.split("\n")[new.line - 1] == "## 10:00"


@pytest.mark.parametrize("file", ["Daily", "../x", "a/b", "", "-x", "日记"])
def test_a_file_must_be_a_lowercase_slug(file: str) -> None:
    with pytest.raises(BadRequest, match="slug"):
        edit.check_file(file)


@pytest.mark.parametrize("name", ["a:b", "x [[y]]", "a|b", "c#d", "   "])
def test_item_names_refuse_reserved_characters(name: str) -> None:
    with pytest.raises(BadRequest, match="name"):
        edit.check_name(name)


def test_item_names_collapse_whitespace_in_any_language() -> None:
    assert edit.check_name("  喜欢   海边 ") == "喜欢 海边"


@pytest.mark.parametrize("text", ["", "  \n", "# title", "x\n## y", "```\nopen", "a\n---", "x\x00"])
def test_text_that_would_break_the_section_structure_is_refused(text: str) -> None:
    with pytest.raises(BadRequest):
        edit.check_body(text)


def test_metadata_values_cannot_split_or_close_the_comment() -> None:
    assert edit.render_meta("a|b", "c-->d", None) == "<!-- wikimem: owner=a/b | source=c--d -->"


@pytest.mark.parametrize("field", ["text", "name", "owner"])
def test_text_that_utf8_cannot_hold_is_refused_before_anything_is_written(field: str) -> None:
    bad = "bytes \udcff from a shell"
    with pytest.raises(BadRequest, match=f'"{field}" is not valid text'):
        if field == "text":
            edit.check_body(bad)
        elif field == "name":
            edit.check_name(bad)
        else:
            edit.render_meta(bad, None, None)
