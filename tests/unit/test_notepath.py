"""``note``, ``links`` and ``backlinks`` read a path as a person types it (core.notepath)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import write
from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.core.notepath import resolve_note_path
from wikimem_watch.errors import BadRequest, NotFound


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    root = tmp_path / "myvault"
    write(root, "wiki/people.md", "# People\n\n## Ann\nlikes sailing\n")
    write(root, "diary/2026-07-20.md", "## 08:00\ncoffee\n")
    found = Engine(load_config(root))
    found.scan()
    return found


@pytest.mark.parametrize(
    "typed",
    [
        "wiki/people.md",
        "./wiki/people.md",
        "wiki/./people.md",
        "myvault/wiki/people.md",  # typed from the vault's parent folder
        "wiki/people",  # as an Obsidian link
        "people",
        "People",  # the note's title
        "[[people]]",  # a link pasted whole
        "[[people#Ann|her]]",
        "[[people#No such heading]]",  # the note is named all the same
        "[[file:people]]",  # a wikimem link
        "![[wiki/people]]",
    ],
)
def test_a_note_path_is_read_as_people_type_it(engine: Engine, typed: str) -> None:
    assert resolve_note_path(engine, typed) == "wiki/people.md"


def test_a_note_whose_name_starts_with_a_space_is_found_by_its_path(tmp_path: Path) -> None:
    # Sync tools and file managers keep such names; the note is indexed and searchable.
    root = tmp_path / "v"
    write(root, " draft.md", "## d\ndraft\n")
    write(root, "wiki/ idea.md", "## i\nidea\n")
    found = Engine(load_config(root))
    found.scan()
    assert resolve_note_path(found, " draft.md") == " draft.md"
    assert resolve_note_path(found, "wiki/ idea.md") == "wiki/ idea.md"


def test_an_absolute_path_inside_the_vault_is_made_vault_relative(engine: Engine) -> None:
    assert resolve_note_path(engine, str(engine.root / "wiki" / "people.md")) == "wiki/people.md"


@pytest.mark.parametrize("typed", ["/wiki/people.md", "/etc/passwd", "../other/x.md", ".."])
def test_a_path_outside_the_vault_is_a_clear_error_not_silently_shortened(
    engine: Engine, typed: str
) -> None:
    with pytest.raises(BadRequest, match="outside the vault"):
        resolve_note_path(engine, typed)


def test_a_name_that_matches_no_note_says_what_paths_look_like(engine: Engine) -> None:
    with pytest.raises(NotFound, match="vault-relative path such as wiki/people.md"):
        resolve_note_path(engine, "wiki/nobody.md")


def test_the_vault_itself_is_not_a_note_and_says_so(engine: Engine) -> None:
    with pytest.raises(BadRequest, match="is the vault itself; name a note inside it"):
        resolve_note_path(engine, str(engine.root))


def test_a_link_to_nothing_says_it_names_no_note(engine: Engine) -> None:
    with pytest.raises(NotFound, match="names no indexed note"):
        resolve_note_path(engine, "[[nobody]]")
