"""Which indexed note a path *as a person types it* names: the one place that reads it.

``note``, ``links`` and ``backlinks`` (socket and CLI alike) accept what people type:
``wiki/people.md``, ``./wiki/people.md``, ``vault/wiki/people.md`` (the vault folder's own
name first), an absolute path inside the vault, and Obsidian-style ``wiki/people`` or
``people`` (resolved as a ``[[link]]`` is), or the link itself, ``[[people]]``. A path that
leads outside the vault is an error that says so, never silently shortened.
"""

from __future__ import annotations

import os
import posixpath
from pathlib import Path, PurePosixPath

from ..errors import BadRequest, NotFound
from .models import Link
from .parse import parse_link

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .engine import Engine


def resolve_note_path(engine: Engine, raw: str) -> str:
    """The vault-relative path of the indexed note ``raw`` names.

    Raises BadRequest for a path outside the vault and NotFound when no note matches.
    """
    with engine.lock:
        if raw in engine.files:
            return raw  # exactly a note's path: " draft.md" is a name, not a typo to strip
    text = raw.strip().replace(os.sep, "/")
    if text.lstrip("!").startswith("[[") and text.endswith("]]"):  # a link, pasted whole
        link = parse_link(text.lstrip("!")[2:-2], embed=False)
        linked = _by_link(engine, link) if link is not None else None
        if linked is None and link is not None and link.style == "obsidian" and link.heading:
            # The note is read whole: a heading it lacks does not make the note not there.
            linked = _by_link(engine, Link(link.target))
        if linked is None:
            raise NotFound(f"{raw!r} names no indexed note")
        return linked
    if PurePosixPath(text).is_absolute():
        rel = _inside_vault(engine.root, text, raw)
    else:
        rel = posixpath.normpath(text)
        if rel == ".." or rel.startswith("../"):
            raise BadRequest(f"{raw!r} leads outside the vault {str(engine.root)!r}")
    with engine.lock:
        if rel in engine.files:
            return rel
        head, _, rest = rel.partition("/")
        if rest and head == engine.root.name and rest in engine.files:
            return rest  # "vault/wiki/people.md", typed from the vault's parent folder
        found = _by_name(engine, rel)
    if found is not None:
        return found
    raise NotFound(
        f"no indexed note at {raw!r} (give a vault-relative path such as wiki/people.md, "
        "an absolute path inside the vault, or a note name as in [[people]])"
    )


def _inside_vault(root: Path, text: str, raw: str) -> str:
    """An absolute path as a vault-relative one (symlinks on the way resolved), or an error."""
    for base, path in ((str(root), os.path.abspath(text)), _real(root, text)):
        if path == base:
            raise BadRequest(f"{raw!r} is the vault itself; name a note inside it")
        if path.startswith(base.rstrip("/") + "/"):
            return path[len(base.rstrip("/")) + 1 :]
    raise BadRequest(f"{raw!r} is outside the vault {str(root)!r}")


def _real(root: Path, text: str) -> tuple[str, str]:
    return os.path.realpath(root), os.path.realpath(text)


def _by_name(engine: Engine, rel: str) -> str | None:
    """``wiki/people`` or ``people`` (or a title or alias), as a link would resolve it."""
    return _by_link(engine, Link(rel))


def _by_link(engine: Engine, link: Link) -> str | None:
    """The note ``link`` points at, or None when it resolves to nothing."""
    with engine.lock:  # the slot and its path read together
        slots = engine.resolve_slots(link)
        return engine.store.path[slots[0]] if slots else None
