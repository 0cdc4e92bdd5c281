"""Which files of a vault are notes, and reading them tolerantly.

A note is a ``*.md`` file outside any dot-folder (``.obsidian``, ``.trash``, ``.git``, the
``.wikimem`` cache), not an editor swap or backup file, and matched by the include/exclude
globs. Paths are vault-relative with forward slashes: the same on every OS and machine.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

MAX_NOTE_BYTES = 8 * 1024 * 1024  # larger "notes" are exports or logs: skipped and reported
UNREADABLE_DIR = "folder not readable"  # how a ``linked_dirs`` reason for one starts


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
        if self.include != ("*",) and not any(_match(rel, g) for g in self.include):
            return False  # "*" matches every path: no glob to run (it is the default)
        return not any(_match(rel, g) for g in self.exclude)


def _match(rel: str, glob: str) -> bool:
    return _glob_regex(glob).match(rel) is not None or (
        _glob_regex(glob.rstrip("/") + "/*").match(rel) is not None
    )


@lru_cache(maxsize=256)
def _glob_regex(glob: str) -> re.Pattern[str]:
    """``glob`` as ``fnmatch`` reads it, except that ``**/`` is any number of whole folders
    (none too): ``**/drafts/*`` is every ``drafts`` folder and not ``book-drafts``, which the
    ``*drafts/*`` it used to become also matched. A NUL (no path holds one) marks each."""
    translated = fnmatch.translate(glob.replace("\x00", "").replace("**/", "\x00"))
    return re.compile(translated.replace("\x00", "(?:.*/)?"))


def rel_path(root: Path, path: Path | str) -> str | None:
    """``path`` relative to ``root`` with ``/`` separators, or ``None`` when outside it."""
    try:
        rel = Path(os.path.abspath(path)).relative_to(root)
    except ValueError:
        return None
    return rel.as_posix()


def is_inside(real_root: str, real: str) -> bool:
    """True when the resolved path ``real`` is ``real_root`` or below it."""
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def iter_notes(
    root: Path, note_filter: NoteFilter, linked_dirs: dict[str, str] | None = None
) -> Iterator[str]:
    """Every note path under ``root``, sorted, without descending into dot-folders.

    Symlinked directories are never descended (``os.walk`` does not follow them): a note
    under one that leads inside the vault is indexed at its real path; one that leads
    outside is recorded in ``linked_dirs`` (vault-relative path → reason) when given, and
    so is a folder that cannot be read (its notes are not indexed, and ``status`` says why).
    """
    real_root = os.path.realpath(root)
    top = os.fspath(root)

    def unreadable(exc: OSError) -> None:
        rel = os.path.relpath(exc.filename or top, top).replace(os.sep, "/")
        if linked_dirs is not None:
            linked_dirs[rel] = f"{UNREADABLE_DIR} ({exc.strerror}); its notes are not indexed"

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):
        base = Path(dirpath)
        # os.walk joins names onto ``top``, so the relative part is a plain string suffix
        # (no pathlib per file: a 100k-entry vault has 12k notes).
        rel_dir = os.path.relpath(dirpath, top).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        for d in sorted(dirnames):
            if d.startswith(".") or not os.path.islink(base / d):
                continue
            target = os.path.realpath(base / d)
            rel = rel_path(root, base / d)
            if linked_dirs is not None and rel is not None and not is_inside(real_root, target):
                linked_dirs[rel] = _led_out(target)
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            rel = prefix + name
            if note_filter.accepts(rel):
                yield rel


def _led_out(target: str) -> str:
    return f"symlinked directory outside the vault ({target}); not followed"


def linked_out(root: Path, rel: str) -> str | None:
    """Why the walk does not enter ``rel`` when it is a symlinked folder that leads out of
    the vault (as ``iter_notes`` records it), else ``None``."""
    path = os.path.join(root, *rel.split("/"))
    if not (os.path.islink(path) and os.path.isdir(path)):
        return None
    target = os.path.realpath(path)
    return None if is_inside(os.path.realpath(root), target) else _led_out(target)


def notes_below(
    root: Path, rel_dir: str, note_filter: NoteFilter, linked: dict[str, str] | None = None
) -> list[str]:
    """The notes under the vault directory ``rel_dir`` (vault-relative paths); none when
    ``rel_dir`` is reached through a symlink (its notes live elsewhere, or outside).
    ``linked``, when given, gets the folders below ``rel_dir`` (or it) that the walk does
    not enter: those that cannot be listed and the symlinked ones leading out of the vault
    (vault-relative path → reason, as ``iter_notes`` gives them)."""
    base = root / rel_dir
    real_root = os.path.realpath(root)
    if os.path.realpath(base) != os.path.join(real_root, *rel_dir.split("/")):
        return []
    if not base.is_dir():
        return []
    prefix = rel_dir.rstrip("/") + "/"
    found: dict[str, str] = {}
    notes = [prefix + rel for rel in iter_notes(base, note_filter, found)]
    if linked is not None:
        for rel, why in found.items():
            at = rel_dir if rel == "." else prefix + rel
            if why.startswith(UNREADABLE_DIR):
                linked[at] = why
            else:  # ``found`` said "outside" ``rel_dir``: outside the vault is asked here
                led_out = linked_out(root, at)
                if led_out is not None:
                    linked[at] = led_out
    return notes


class SkipFile(Exception):
    """A file that cannot be indexed; ``reason`` is shown in ``status``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class NoteText:
    """A note's text, a warning about how it was read, and where a symlink led (the
    vault-relative path of a target inside the vault, else ``None``)."""

    text: str
    warning: str | None = None
    target: str | None = None


_KINDS = (
    (stat.S_ISDIR, "is a directory"),
    (stat.S_ISFIFO, "not a regular file (named pipe)"),
    (stat.S_ISSOCK, "not a regular file (socket)"),
    (stat.S_ISCHR, "not a regular file (character device)"),
    (stat.S_ISBLK, "not a regular file (block device)"),
)
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the stat must not block the open
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOFOLLOW", 0)  # the resolved path is opened: no symlink may appear there
)


def _not_regular(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    return next((why for test, why in _KINDS if test(mode)), "not a regular file")


def read_note(
    root: Path, rel: str, *, follow_external: bool = False, real_root: str | None = None
) -> NoteText:
    """Read a note as text. Raises :class:`FileNotFoundError` if it is gone, else
    :class:`SkipFile` for anything that must not or cannot be read: a symlink that leads
    outside the vault (unless ``follow_external``), anything but a regular file (a FIFO
    would block the reader for good), binary, too big, permission denied.

    Invalid UTF-8 is decoded with replacement characters and still indexed: a few bad bytes
    should not hide a whole diary day. ``real_root`` is ``os.path.realpath(root)`` when the
    caller reads many notes at once (it costs a ``lstat`` per component of the root).
    """
    path = os.path.join(root, *rel.split("/"))
    real = os.path.realpath(path)
    if real_root is None:
        real_root = os.path.realpath(root)
    target = None
    if "/" in rel and real != os.path.join(real_root, *rel.split("/")):
        if _through_linked_dir(path, real_root, rel):
            # Not a note of the vault: the walk never descends a symlinked directory (inside
            # the vault or out of it, followed or not), and a fresh scan would not list it.
            raise FileNotFoundError(rel)
    if is_inside(real_root, real):
        real_rel = _rel_posix(real_root, real)
        target = real_rel if real_rel != rel else None
    elif not follow_external and os.path.exists(real):
        if os.path.isdir(real):  # a folder named like a note: the walk names it, not entered
            raise FileNotFoundError(rel)
        raise SkipFile(
            f"symlink to {real}, outside the vault; not read "
            "(set follow_external_symlinks to index it)"
        )
    try:
        raw = _read_regular(rel, real)
    except SkipFile:
        if not _walk_lists(root, rel):
            # In a folder the walk cannot list: not a note of the vault (``iter_notes``
            # names the folder in ``linked_dirs``), as a fresh scan sees it.
            raise FileNotFoundError(rel) from None
        raise
    if b"\x00" in raw:
        raise SkipFile("binary file (NUL bytes)")
    try:
        return NoteText(raw.decode("utf-8"), None, target)
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        return NoteText(text, f"invalid UTF-8 at byte {exc.start}; bad bytes replaced", target)


def dangling_target(root: Path, rel: str, real_root: str | None = None) -> str | None:
    """The vault-relative path a dangling symlink at ``rel`` leads to, when inside the vault
    (``None``: not a symlink, not dangling, or leading out): the note it will read once that
    path is made again."""
    if os.path.exists(os.path.join(root, *rel.split("/"))):
        return None
    return link_target(root, rel, real_root)


def link_target(root: Path, rel: str, real_root: str | None = None) -> str | None:
    """The vault-relative path the symlink at ``rel`` leads to, when inside the vault
    (``None``: not a symlink, or leading out): a symlink not indexed now (dangling, or
    skipped with its target) is read again when that path changes."""
    path = os.path.join(root, *rel.split("/"))
    if not os.path.islink(path):
        return None
    real_root = real_root or os.path.realpath(root)
    real = os.path.realpath(path)
    if real == os.path.join(real_root, *rel.split("/")):
        # A symlink loop (``realpath`` gives the path back): the link it leads to first,
        # whose change (a deletion) may break the loop.
        try:
            hop = os.path.join(os.path.dirname(path), os.readlink(path))
        except OSError:  # no longer a symlink: its own event reads it again
            return None
        real = os.path.join(os.path.realpath(os.path.dirname(hop)), os.path.basename(hop))
    if not is_inside(real_root, real) or ("/" in rel and _through_linked_dir(path, real_root, rel)):
        return None
    real_rel = _rel_posix(real_root, real)
    return real_rel if real_rel != rel else None


def _walk_lists(root: Path, rel: str) -> bool:
    """True when every folder from ``root`` down to ``rel``'s own can be listed, as
    ``iter_notes`` lists them (asked only when a read failed: a ``scandir`` per folder)."""
    parts = rel.split("/")[:-1]
    for depth in range(len(parts) + 1):
        try:
            with os.scandir(os.path.join(root, *parts[:depth])):
                pass
        except OSError:
            return False
    return True


def _through_linked_dir(path: str, real_root: str, rel: str) -> bool:
    """True when a directory on the way to ``path`` (vault-relative ``rel``) is a symlink."""
    parent = rel.rpartition("/")[0]
    return os.path.realpath(os.path.dirname(path)) != os.path.join(real_root, *parent.split("/"))


def _rel_posix(real_root: str, real: str) -> str:
    """``real`` (inside ``real_root``, both resolved) relative to it, ``/``-separated."""
    if real == real_root:
        return "."
    return real[len(real_root.rstrip(os.sep)) + 1 :].replace(os.sep, "/")


def _read_regular(rel: str, real: str) -> bytes:
    """The bytes of the regular file at the resolved path ``real``, never blocking."""
    try:
        mode = os.stat(real).st_mode
        if stat.S_ISDIR(mode):
            raise FileNotFoundError(rel)  # a folder named like a note: no note, nothing skipped
        why = _not_regular(mode)
        if why is not None:
            raise SkipFile(why)
        fd = os.open(real, _OPEN_FLAGS)
        try:
            st = os.fstat(fd)  # what was opened, not what was looked at before
            why = _not_regular(st.st_mode)
            if why is not None:
                raise SkipFile(why)
            if st.st_size > MAX_NOTE_BYTES:
                raise SkipFile(f"larger than {MAX_NOTE_BYTES // (1024 * 1024)} MiB")
            raw = _read_fd(fd, st.st_size)
        finally:
            os.close(fd)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(rel) from None
    except PermissionError:
        raise SkipFile("permission denied") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SkipFile("symlink loop, or replaced by a symlink while read") from None
        raise SkipFile(f"unreadable: {exc.strerror or exc}") from None
    if len(raw) > MAX_NOTE_BYTES:  # it grew after the fstat
        raise SkipFile(f"larger than {MAX_NOTE_BYTES // (1024 * 1024)} MiB")
    return raw


def _read_fd(fd: int, size: int) -> bytes:
    """Up to ``MAX_NOTE_BYTES + 1`` bytes from ``fd``, until end of file; ``size`` (the file's
    size when it was opened) sizes the first read, so a note is usually one read and one EOF.
    (A buffered ``read(MAX_NOTE_BYTES + 1)`` allocates the whole 8 MiB for every note.)"""
    chunks: list[bytes] = []
    left = MAX_NOTE_BYTES + 1
    want = min(size + 1, left)
    while left > 0:
        chunk = os.read(fd, max(want, 1))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
        want = min(64 * 1024, left)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


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
