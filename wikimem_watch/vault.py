"""Which files of a vault are notes, and reading them tolerantly.

A note is a ``*.md`` file outside any dot-folder (``.obsidian``, ``.trash``, ``.git``, the
``.wikimem`` cache), not an editor swap or backup file, and matched by the include/exclude
globs. Paths are vault-relative with forward slashes: the same on every OS and machine.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_NOTE_BYTES = 8 * 1024 * 1024  # larger "notes" are exports or logs: skipped and reported


@dataclass(frozen=True, slots=True)
class NoteFilter:
    """Include/exclude globs over vault-relative paths (``fnmatch`` syntax, ``**`` allowed)."""

    include: tuple[str, ...] = ("*",)
    exclude: tuple[str, ...] = ()

    def accepts(self, rel: str) -> bool:
        """True when ``rel`` (vault-relative, ``/``-separated) names a note to index."""
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts) or not rel.endswith(".md"):
            return False
        name = parts[-1]
        if name.startswith("~") or name.endswith("~") or name.startswith("#"):
            return False  # backup / lock files some editors leave beside a note
        if not any(_match(rel, g) for g in self.include):
            return False
        return not any(_match(rel, g) for g in self.exclude)


def _match(rel: str, glob: str) -> bool:
    glob = glob.replace("**/", "*")
    return fnmatch.fnmatchcase(rel, glob) or fnmatch.fnmatchcase(rel, glob.rstrip("/") + "/*")


def rel_path(root: Path, path: Path | str) -> str | None:
    """``path`` relative to ``root`` with ``/`` separators, or ``None`` when outside it."""
    try:
        rel = Path(os.path.abspath(path)).relative_to(root)
    except ValueError:
        return None
    return rel.as_posix()


def iter_notes(root: Path, note_filter: NoteFilter) -> Iterator[str]:
    """Every note path under ``root``, sorted, without descending into dot-folders."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        base = Path(dirpath)
        for name in sorted(filenames):
            rel = rel_path(root, base / name)
            if rel is not None and note_filter.accepts(rel):
                yield rel


class SkipFile(Exception):
    """A file that cannot be indexed; ``reason`` is shown in ``status``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def read_note(root: Path, rel: str) -> tuple[str, str | None]:
    """Read a note as text. Raises :class:`FileNotFoundError` if it is gone, else
    :class:`SkipFile` for anything unreadable (binary, too big, permission denied).

    Invalid UTF-8 is decoded with replacement characters and still indexed: a few bad bytes
    should not hide a whole diary day. Returns (text, warning or ``None``).
    """
    path = root / rel
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_NOTE_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(rel) from None
    except IsADirectoryError:
        raise SkipFile("is a directory") from None
    except PermissionError:
        raise SkipFile("permission denied") from None
    except OSError as exc:
        raise SkipFile(f"unreadable: {exc.strerror or exc}") from None
    if len(raw) > MAX_NOTE_BYTES:
        raise SkipFile(f"larger than {MAX_NOTE_BYTES // (1024 * 1024)} MiB")
    if b"\x00" in raw[:8192]:
        raise SkipFile("binary file (NUL bytes)")
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        return text, f"invalid UTF-8 at byte {exc.start}; bad bytes replaced"


def glob_match(rel: str, patterns: Sequence[str]) -> bool:
    """True when ``rel`` starts with one of ``patterns`` as a prefix, or matches it as a glob."""
    for p in patterns:
        if any(c in p for c in "*?[") and _match(rel, p):
            return True
        if (
            rel == p
            or rel.startswith(p.rstrip("/") + "/")
            or (p.endswith("/") and rel.startswith(p))
        ):
            return True
    return False
