"""The note name table: a name held by one note maps to its path, by several to a set."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wikimem_watch.core.names import (
    Names,
    add_names,
    name_keys,
    names_of,
    paths_named,
    remove_names,
)


def test_a_name_held_by_two_notes_becomes_a_set_and_back() -> None:
    names: dict[str, str | set[str]] = {}
    add_names(names, "a/Note.md", name_keys("a/Note.md", "Title", ("Alias",)))
    add_names(names, "b/note.md", name_keys("b/note.md", None, ()))
    assert names["note"] == {"a/Note.md", "b/note.md"}
    assert names["title"] == "a/Note.md" and names["alias"] == "a/Note.md"
    assert sorted(paths_named(names, "note")) == ["a/Note.md", "b/note.md"]
    remove_names(names, "b/note.md", name_keys("b/note.md", None, ()))
    assert names["note"] == "a/Note.md"
    remove_names(names, "a/Note.md", name_keys("a/Note.md", "Title", ("Alias",)))
    assert names == {} and paths_named(names, "note") == ()


def _one_by_one(notes: list[tuple[str, str | None, tuple[str, ...]]]) -> Names:
    names: Names = {}
    for rel, title, aliases in notes:
        add_names(names, rel, name_keys(rel, title, aliases))
    return names


def test_the_table_built_at_once_equals_one_built_note_by_note() -> None:
    notes = [
        ("wiki/People.md", "People", ("Friends", "")),
        ("people.md", None, ()),  # shares "people" with wiki/People.md
        ("diary/2026-11-14.md", "2026-11-14", ()),
        ("notes/Cafe\u0301.md", "Cafe\u0301 list", ("CAFÉ",)),  # NFD name, NFC alias
        ("notes/same.md", "same", ("Same", "SAME")),  # one key three times
        ("odd/file.markdown", None, ("",)),  # not .md; an empty alias names nothing
        ("a/b/c.md", "C", ("b/c",)),
        ("x/c.md", None, ()),
    ]
    assert names_of(notes) == _one_by_one(notes)


@given(
    st.lists(
        st.tuples(
            st.text(alphabet="aAbB/é\u0301İ. ", min_size=1, max_size=8).map(lambda s: s + ".md"),
            st.none() | st.text(alphabet="aAbBé\u0301İ ", max_size=4),
            st.lists(st.text(alphabet="aAbBé\u0301İ", max_size=3), max_size=3).map(tuple),
        ),
        max_size=12,
        unique_by=lambda note: note[0],
    )
)
def test_any_table_built_at_once_equals_one_built_note_by_note(
    notes: list[tuple[str, str | None, tuple[str, ...]]],
) -> None:
    assert names_of(notes) == _one_by_one(notes)
