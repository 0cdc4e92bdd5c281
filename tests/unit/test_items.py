"""Finding an item of a note by name, as the index reads the note (core/items.py, ADR-0016)."""

from __future__ import annotations

import unicodedata

import pytest

from wikimem_watch.core import items
from wikimem_watch.errors import BadRequest


def test_an_item_name_finds_its_heading_in_any_case_but_never_two_headings() -> None:
    old = "## Straße\n\na\n\n## Milk\n\nb\n\n## Milk\n\nc\n"
    assert items.find_item(old, "STRASSE") == (0, 4)
    assert items.find_item(old, "milk") == (8, 11)  # repeated as written: the last, as before
    assert items.item_heading(old, "milk") == "Milk"
    with pytest.raises(BadRequest, match="ambiguous"):
        items.find_item(old + "\n## MILK\n\nd\n", "milk")
    assert (
        items.item_state(old + "\n## MILK\n\nd\n", "milk")
        == "## Milk\n\nb\n\n## Milk\n\nc\n\n## MILK\n\nd\n"
    )


def test_a_heading_written_as_the_name_is_wins_over_one_in_another_case() -> None:
    old = "## Milk\n\nb\n\n## MILK\n\nd\n"
    assert items.find_item(old, "MILK") == (4, 7)
    assert items.item_state(old, "Milk") == "## Milk\n\nb\n\n"


def test_a_name_finds_its_heading_whatever_the_unicode_normal_form_and_spacing() -> None:
    old = "## " + unicodedata.normalize("NFD", "José") + "   Luis\n\nx\n"
    assert items.find_item(old, "José Luis") == (0, 3)
    assert items.item_heading(old, " José  Luis ") == "José Luis"


def test_a_level_two_line_in_a_code_fence_is_not_an_item() -> None:
    old = "## Ann\n\n```\n## Bob\n```\n"
    assert items.sections(old) == [(0, "Ann")]
    assert items.find_item(old, "Bob") is None
    assert items.find_item(old, "Ann") == (0, 5)


def test_sections_are_numbered_as_the_file_s_lines_past_front_matter_and_any_line_ending() -> None:
    old = "---\r\ntags: [a]\r\n---\r\n## Ann\rx\n## Bob\n"
    assert items.sections(old) == [(3, "Ann"), (5, "Bob")]
    assert items.split_lines(old)[3:] == ["## Ann\r", "x\n", "## Bob\n"]


def test_the_prose_before_the_first_section_is_the_item_named_after_the_title() -> None:
    old = "---\ntags: [food]\n---\n# Groceries\n\nMilk, eggs.\n\n## Shops\n\nAldi\n"
    path = "wiki/groceries.md"
    assert items.find_item(old, "groceries", path) == (5, 7)
    assert items.item_state(old, "Groceries", path) == "Milk, eggs.\n\n"
    assert items.find_item(old, "groceries") is None  # no path: no title item
    assert items.find_item("# Groceries\n\n## Shops\n\nAldi\n", "Groceries", path) is None


def test_a_missing_item_has_no_span_heading_or_state() -> None:
    assert items.find_item("## Ann\n", "Bob") is None
    assert items.item_heading("## Ann\n", "Bob") is None
    assert items.item_state("## Ann\n", "Bob") is None
    assert items.item_state(None, "Ann") is None
