"""``journal.jsonl`` at the vault root: one JSON object per line, the wikimem library's shapes.

Writes through the daemon (ADR-0016)::

    {"ts", "action": "add"|"update"|"remove", "file", "item", "owner"?, "source_conv"?}
    {"ts", "action": "diary", "date", "time", "owner"?, "source_conv"?}

and external changes the watcher applied (one line per file, after debouncing)::

    {"ts", "action": "edit"|"create"|"delete"|"move", "path", "by": "external", "from"? (a move)}

including those a start from the index snapshot finds were made while no daemon ran (or an
in-process run that writes a new snapshot: the next start compares from it); a start without
one (no snapshot, or an unusable one) knows no earlier state and writes one line that says
so, ``{"ts", "action": "reset", "path": ".", "by": "external", "detail"}``.

Lines may carry a ``detail`` (as wikimem's own journal may), e.g. when a write was
re-applied after an editor's save overwrote it. Each line is one ``write`` on an
``O_APPEND`` descriptor, so it is safe beside another appender (wikimem itself); the file is
opened ``O_NOFOLLOW | O_NONBLOCK`` and must be a regular file, so a symlink or FIFO planted
as ``journal.jsonl`` neither redirects nor blocks a write (the line is skipped, with a
warning). It is not a note (not ``.md``), so it is never indexed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger(__name__)

JOURNAL_NAME = "journal.jsonl"
UNKNOWN_DETAIL = "no index snapshot at start: what changed while no daemon ran is unknown"
MAX_READ_BYTES = 4 * 1024 * 1024  # one `journal` reply reads at most this much
MARK_BYTES = 4096  # a cursor's mark covers at most this much of the line before it
_MARK_SHAPE = re.compile(r"[0-9a-f]{16}")
_OPEN = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def now_iso() -> str:
    """The current instant, UTC, whole seconds (the wikimem library's journal ``ts``)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class Journal:
    """Appends lines to ``<vault>/journal.jsonl``."""

    def __init__(self, root: Path) -> None:
        self.path = root / JOURNAL_NAME
        self._warned = False

    def append(self, record: dict[str, object]) -> bool:
        """Write one line (``ts`` first); False when the journal cannot be written."""
        line = json.dumps({"ts": now_iso(), **record}, ensure_ascii=False) + "\n"
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError:  # a file name that is not UTF-8: its bytes as \udcXX
            data = (json.dumps({"ts": now_iso(), **record}) + "\n").encode("ascii")
        try:
            fd = os.open(self.path, _OPEN, 0o644)
        except OSError as exc:
            return self._skip(f"cannot open it: {exc.strerror or exc}")
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return self._skip("it is not a regular file")
            # A torn last line (a writer that died mid-line, a full disk) is ended first:
            # else this line is glued to it and neither reads back as JSON.
            if st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
                data = b"\n" + data
            os.write(fd, data)
            return True
        except OSError as exc:
            return self._skip(f"cannot write it: {exc.strerror or exc}")
        finally:
            os.close(fd)

    def _skip(self, why: str) -> bool:
        if not self._warned:
            log.warning("journal %s: %s; journal lines are skipped", self.path, why)
            self._warned = True
        return False

    def wiki(
        self,
        action: str,
        file: str,
        item: str,
        owner: str | None,
        source: str | None,
        detail: str | None = None,
    ) -> None:
        record: dict[str, object] = {"action": action, "file": file, "item": item}
        _provenance(record, owner, source)
        if detail:
            record["detail"] = detail
        self.append(record)

    def diary(
        self,
        day: str,
        time: str,
        owner: str | None,
        source: str | None,
        detail: str | None = None,
    ) -> None:
        record: dict[str, object] = {"action": "diary", "date": day, "time": time}
        _provenance(record, owner, source)
        if detail:
            record["detail"] = detail
        self.append(record)

    def external(self, action: str, path: str, **extra: str) -> None:
        self.append({"action": action, "path": path, "by": "external", **extra})

    def unknown_changes(self) -> None:
        """The vault (``path`` ``.``, as ``subscribe`` names it) may have changed in ways no
        line tells: a start without an index snapshot to compare with. Only into a journal
        that exists: a vault with none has no follower to tell."""
        if os.path.lexists(self.path):
            self.external("reset", ".", detail=UNKNOWN_DETAIL)


def _provenance(record: dict[str, object], owner: str | None, source: str | None) -> None:
    if owner is not None:
        record["owner"] = owner
    if source is not None:
        record["source_conv"] = source


def parse_cursor(value: object) -> tuple[int, str | None] | None:
    """A ``since`` as (byte offset, mark of the line before it): a cursor of this reader
    (``"<offset>:<mark>"``, or 0), or a plain offset (the shape before marks, no mark).
    None when it is neither."""
    if type(value) is int:
        return (value, None) if value >= 0 else None
    if isinstance(value, str):
        offset, sep, mark = value.partition(":")
        digits = offset.isascii() and offset.isdigit() and len(offset) <= 20
        if sep and digits and _MARK_SHAPE.fullmatch(mark):
            return int(offset), mark
    return None


def read_journal(root: Path, since: int | str | None, limit: int) -> dict[str, object]:
    """Lines of the journal: after ``since`` (a previous ``cursor``), at most ``limit`` of
    them, else the last ``limit``. ``cursor`` is where the next read starts: its byte offset
    and a mark of the line it follows (0 at the start); ``reset`` says ``since`` is not in
    this file any more (it shrank below it, ``since`` is not at a line's start, or the line
    there is not the one it followed: rotated, or rewritten by hand) and reading restarted
    at 0. A plain offset (a cursor of the earlier shape) is checked as before, without a
    mark. Lines that are not JSON objects are skipped."""
    parsed = parse_cursor(since) if since is not None else None
    if since is not None and parsed is None:
        raise ValueError(f"not a journal cursor: {since!r}")
    path = root / JOURNAL_NAME
    # No journal (yet, or rotated away) reads as an empty file: every field of a reply.
    empty = {"entries": [], "cursor": 0, "reset": bool(parsed and parsed[0]), "skipped": 0}
    try:
        fd = os.open(path, _READ)
    except FileNotFoundError:
        return empty
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return empty
        size = st.st_size
        reset = parsed is not None and _elsewhere(fd, size, *parsed)
        since = None if parsed is None else parsed[0]
        if since is None or reset:
            start = 0 if reset else max(size - MAX_READ_BYTES, 0)
        else:
            start = since
        raw = os.pread(fd, min(size - start, MAX_READ_BYTES), start)
        overlong = 0
        if since is not None and len(raw) == MAX_READ_BYTES and b"\n" not in raw:
            past = _past_line(fd, start + len(raw), size)
            overlong = past - start if past else 0  # no newline yet: still being written
        if overlong:  # one line longer than a reply may read (a hand edit): skipped
            cursor = _cursor(fd, start + overlong)
            return {"entries": [], "cursor": cursor, "reset": reset, "skipped": 1}
        end = raw.rfind(b"\n") + 1  # complete lines only: one being written is read next time
        lines = raw[:end].split(b"\n")[:-1]
        if since is None and start > 0:
            lines = lines[1:]  # the first line was cut by the read window
        if since is None:
            lines = lines[-limit:]
            offset = start + end
        else:  # on from the cursor, or from the start of a file rotated or rewritten
            lines = lines[:limit]
            offset = start + sum(len(ln) + 1 for ln in lines)
        cursor = _cursor(fd, offset)
    finally:
        os.close(fd)
    entries = []
    for ln in lines:
        try:
            obj = json.loads(ln)
        except ValueError:  # also bytes that are not UTF-8
            obj = None
        if isinstance(obj, dict):
            entries.append(obj)
    skipped = len(lines) - len(entries)  # not a JSON object: a hand edit, a torn copy
    return {"entries": entries, "cursor": cursor, "reset": reset, "skipped": skipped}


def _elsewhere(fd: int, size: int, since: int, mark: str | None) -> bool:
    """True when the cursor ``since`` (with ``mark``, when it has one) is not a place in
    this file: past its end, not at a line's start, or (with a mark) after a line other
    than the one it followed. An offset alone cannot tell a rotated file grown to a line
    start at the same offset; the mark of the line before it can."""
    if since > size:
        return True
    if since == 0:  # a file's start is the start of any file
        return False
    if mark is None:  # a cursor is always just past a newline
        return not _at_line(fd, since)
    return _mark(fd, since) != mark


def _cursor(fd: int, offset: int) -> int | str:
    """The cursor of ``offset``: 0, or ``"<offset>:<mark>"``."""
    return f"{offset}:{_mark(fd, offset)}" if offset else 0


def _mark(fd: int, pos: int) -> str:
    """A digest of the line that ends at ``pos`` (its last ``MARK_BYTES`` at most): the
    journal only grows, so the bytes before a cursor stay what they were while the file is
    the one it was made in (also when a sync tool puts a longer copy in its place), and a
    rotated or rewritten file holds another line there (its own ``ts``, at least)."""
    start = max(pos - MARK_BYTES, 0)
    tail = os.pread(fd, pos - start, start)
    cut = tail.rfind(b"\n", 0, len(tail) - 1) + 1  # the line's start, when in the window
    return hashlib.blake2b(tail[cut:], digest_size=8).hexdigest()


def _at_line(fd: int, pos: int) -> bool:
    """True when ``pos`` (> 0) is the start of a line: the byte before it is a newline."""
    return os.pread(fd, 1, pos - 1) == b"\n"


def _past_line(fd: int, pos: int, size: int) -> int:
    """The offset just past the first newline at or after ``pos``; 0 when the file ends
    first."""
    while pos < size:
        chunk = os.pread(fd, min(size - pos, MAX_READ_BYTES), pos)
        if not chunk:
            break
        cut = chunk.find(b"\n")
        if cut >= 0:
            return pos + cut + 1
        pos += len(chunk)
    return 0
