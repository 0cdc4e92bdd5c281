"""The note name table: a name held by one note maps to its path, by several to a set."""

from __future__ import annotations

from wikimem_watch.core.names import add_names, name_keys, paths_named, remove_names


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
