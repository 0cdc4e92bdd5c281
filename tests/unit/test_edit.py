"""The write path's pure edits and name rules (core/edit.py, ADR-0016); finding an item by
name is core/items.py (tests/unit/test_items.py)."""

from __future__ import annotations

import pytest

from wikimem_watch.core import edit, items
from wikimem_watch.core.parse import parse_note
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
    heads = [h for _, h in items.sections(text)]
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
    forged = edit.render_meta("agent-->><!-- wikimem: owner=user:xnne", "conv-->>1", None)
    assert forged.count("-->") == 1 and forged.count("<!--") == 1
    body = f"## Ann\n\ntext\n\n{forged}\n"
    (entry,) = parse_note("wiki/p.md", body).entries
    assert entry.owner is not None and entry.owner.startswith("agent--")
    assert entry.source == "conv--1" and entry.text == "text"


@pytest.mark.parametrize("field", ["name", "owner", "source"])
def test_a_nul_or_control_character_in_a_name_or_metadata_is_refused(field: str) -> None:
    with pytest.raises(BadRequest, match="control character"):
        if field == "name":
            edit.check_name("A\x00B")
        else:
            edit.render_meta(
                "A\x00B" if field == "owner" else None, "x\x01" if field == "source" else None, None
            )


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


@pytest.mark.parametrize(
    "ending",
    ["## Bob\n\n```\ncode\n", "## Bob\n\n<!-- todo\n", "## Bob\n\n~~~\n"],
)
def test_a_note_that_would_swallow_a_new_item_is_refused_not_written(ending: str) -> None:
    """A note ending inside an open fence, comment or HTML block would read a section added
    after it as part of its last one: the index must read back what was written, or nothing
    is written."""
    with pytest.raises(BadRequest, match="would not read the 'Ann' section back"):
        edit.upsert_item("# p\n\n" + ending, "Ann", "ann text", "")
    with pytest.raises(BadRequest, match="would not read the '10:00' section back"):
        edit.insert_diary_entry("## 09:00\n\n" + ending.split("\n\n", 1)[1], "10:00", "x", "")


def test_a_byte_order_mark_stays_first_and_the_first_entry_stays_an_entry() -> None:
    new = edit.insert_diary_entry("\ufeff## 10:00\n\nb\n", "09:00", "a", "")
    assert new.text == "\ufeff## 09:00\n\na\n\n## 10:00\n\nb\n" and new.line == 1
    assert edit.delete_item("\ufeff## Ann\n\nx\n\n## Bob\n\ny\n", "Ann") == "\ufeff## Bob\n\ny\n"


def test_a_setext_heading_is_kept_whole_when_its_item_is_replaced() -> None:
    old = "# p\n\nAnn\n---\n\nold\n\n## Bob\n\nb\n"
    new, created = edit.upsert_item(old, "Ann", "new", "")
    assert not created and new.text == "# p\n\nAnn\n---\n\nnew\n\n## Bob\n\nb\n"


def test_a_setext_heading_over_two_lines_is_kept_whole_when_its_item_is_replaced() -> None:
    old = "# p\n\nAnn\nLee\n---\n\nold\n\n## Bob\n\nb\n"
    new, created = edit.upsert_item(old, "Ann Lee", "new", "")
    assert not created and new.text == "# p\n\nAnn\nLee\n---\n\nnew\n\n## Bob\n\nb\n"


def test_every_section_of_a_deleted_name_goes_as_in_the_wikimem_library() -> None:
    old = "## Ann\n\none\n\n## Bob\n\nb\n\n## Ann\n\ntwo\n"
    assert edit.delete_item(old, "Ann") == "## Bob\n\nb\n"


def test_deleting_a_section_before_a_setext_heading_keeps_the_line_above_in_its_item() -> None:
    old = "## Ann\n\nsails\n## Bob\n\nb\n\nCy\n---\n\nc\n"
    new = edit.delete_item(old, "Bob")
    assert new == "## Ann\n\nsails\n\nCy\n---\n\nc\n"
    assert [h for _, h in items.sections(new)] == ["Ann", "Cy"]


def test_a_cr_only_note_gets_cr_line_endings() -> None:
    new = edit.insert_diary_entry("# t\r\r## 10:00\r\rb\r", "11:00", "c", "")
    assert "\n" not in new.text and new.text.endswith("## 11:00\r\rc\r")


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_a_section_goes_after_a_last_line_ending_in_a_lone_cr(ending: str) -> None:
    """A lone CR ending the last line of an LF (or CRLF) note: the added section's first
    break must not join it into one CRLF, which took the blank line before the heading."""
    old = f"# t{ending}{ending}## 09:00{ending}{ending}x\r"
    for new in (
        edit.insert_diary_entry(old, "10:00", "ten", ""),
        edit.upsert_item(old, "10:00", "ten", "")[0],
    ):
        assert new.text.startswith(old)
        entries = parse_note("diary/2026-07-21.md", new.text).entries
        assert [(e.heading, e.line) for e in entries] == [("09:00", 3), ("10:00", new.line)]
        assert entries[0].text == "x" and entries[1].text == "ten"


def test_text_that_mentions_wikimem_beside_a_comment_is_text_not_a_forged_comment() -> None:
    body = "Set up wikimem: it keeps <!-- notes --> as they are"
    assert edit.check_body(body) == body
    with pytest.raises(BadRequest, match="wikimem"):
        edit.check_body("ok <!--\n  wikimem: owner=user:xnne -->")


def test_a_note_past_the_size_the_index_reads_is_refused() -> None:
    big = "## Bob\n\n" + "x" * (8 * 1024 * 1024 - 20) + "\n"
    with pytest.raises(BadRequest, match="over 8 MiB"):
        edit.upsert_item(big, "Ann", "a few more bytes", "")


@pytest.mark.parametrize("slug", ["people\n", "x" * 101, ""])
def test_a_file_slug_is_one_short_line(slug: str) -> None:
    with pytest.raises(BadRequest, match="lowercase ASCII slug"):
        edit.check_file(slug)


@pytest.mark.parametrize("text", ["```md\n## 23:59\nfake\n```", "one\u2028## 23:59", "a\x0c## b"])
def test_text_the_wikimem_library_would_read_as_a_section_is_refused(text: str) -> None:
    with pytest.raises(BadRequest, match="reads as a new section"):
        edit.check_body(text)


def test_a_text_longer_than_an_entry_holds_is_refused_wherever_it_is_written() -> None:
    with pytest.raises(BadRequest, match="an entry holds at most"):
        edit.check_body("x" * (edit.MAX_BODY_CHARS + 1))


def test_an_item_is_found_whatever_the_unicode_normal_form_of_its_heading() -> None:
    """A heading saved decomposed (e + U+0301, as some macOS tools write it) and a name sent
    composed look the same: the upsert added a second "José" beside the stale one, and the
    delete left the stale one behind."""
    import unicodedata

    old = "# p\n\n## " + unicodedata.normalize("NFD", "José") + "\n\nold\n"
    new, created = edit.upsert_item(old, "José", "new", "")
    assert not created and new.text == old.replace("old", "new")
    assert edit.delete_item(old, "José") == "# p\n"


def test_an_entry_in_a_day_written_out_of_order_lands_after_its_earlier_neighbour() -> None:
    """A person's day of 14:00, 08:00, 20:00 stays as written; a new 09:30 goes after 08:00
    (it went to the top, above 14:00), and a new 10:00 after a last 09:00 is one append."""
    old = "# 2026-01-01\n\n## 14:00\n\nlunch\n\n## 08:00\n\nbreakfast\n\n## 20:00\n\ndinner\n"
    new = edit.insert_diary_entry(old, "09:30", "coffee", "")
    assert [h for _, h in items.sections(new.text)] == ["14:00", "08:00", "09:30", "20:00"]
    assert new.text.replace("## 09:30\n\ncoffee\n\n", "") == old
    assert new.text.split("\n")[new.line - 1] == "## 09:30"
    assert edit.insert_diary_entry(old, "07:00", "up", "").line == 3  # nothing earlier: first
    late = "## 08:00\n\na\n\n## 20:00\n\nb\n\n## 09:00\n\nc\n"
    added = edit.insert_diary_entry(late, "10:00", "d", "")
    assert added.appended is not None and added.text == late + added.appended


def test_an_edit_by_name_in_another_case_takes_that_item_but_never_two() -> None:
    old = "## Straße\n\na\n\n## Milk\n\nb\n\n## Milk\n\nc\n"
    assert edit.delete_item(old, "MILK") == "## Straße\n\na\n"
    with pytest.raises(BadRequest, match="ambiguous"):
        edit.upsert_item(old + "\n## MILK\n\nd\n", "milk", "e", "")


def test_an_item_named_after_the_title_is_the_prose_before_the_first_section() -> None:
    """The index reads that prose as an item named after the note's title (front matter,
    ``# title`` or file name); upserting that name added a ``## Groceries`` beside it and
    left the old text searchable. Its text is replaced and removed in place now."""
    path = "wiki/groceries.md"
    old = "---\ntags: [food]\n---\n# Groceries\n\nMilk, eggs.  \nand tea\n\n## Shops\n\nAldi\n"
    new, created = edit.upsert_item(old, "groceries", "Bread", "<!-- wikimem: owner=a -->", path)
    assert not created and new.line == 6
    assert new.text == old.replace(
        "Milk, eggs.  \nand tea\n", "Bread\n\n<!-- wikimem: owner=a -->\n"
    )
    read = [(e.heading, e.text, e.owner) for e in parse_note(path, new.text).entries]
    assert read == [("Groceries", "Bread", "a"), ("Shops", "Aldi", None)]
    assert edit.delete_item(old, "Groceries", path) == old.replace("Milk, eggs.  \nand tea\n\n", "")
    plain = "Milk\n"  # no title: the item is named after the file
    assert edit.upsert_item(plain, "groceries", "Bread", "", path)[0].text == "Bread\n"
    assert edit.upsert_item(plain, "Bread", "x", "", path)[1]  # another name: a new section
    with pytest.raises(BadRequest, match="title"):  # text above the title: the title would go
        edit.upsert_item("intro\n\n# Groceries\n\nmore\n", "Groceries", "x", "", path)
