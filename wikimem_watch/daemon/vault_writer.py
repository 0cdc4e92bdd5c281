"""The write path: ``append_diary``, ``upsert_wiki`` and ``delete_wiki`` (ADR-0016).

One implementation behind the socket, the CLI and the Python API. Each call validates its
input (nothing is written on bad input), takes the lock of its one file (writes to one
file are serialised, writes to different files run concurrently), edits the text with the
pure functions of ``core.edit`` and writes it with ``writes`` (``O_APPEND`` when a diary
entry belongs at the end, else the compare-and-swap replace), journals it, and hands the
path to ``on_written`` — the daemon applies it to the index there, so the write is
searchable when the call returns.

Then, for ``REAPPLY_WINDOW_S``, a sweeper looks after it. An editor that saves by writing
its whole buffer can overwrite our write a moment after it landed; when the file then
shows our item exactly as it was *before* our write (the diary entry absent, the wiki
section back to its old text), the write is re-applied once more — never when the item
changed into anything else, which is a person's edit and wins. The sweeper also hands bytes
that were appended to a file our replace displaced over to the new file.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..core import edit, items
from ..core.parse import parse_note, text_hash
from ..errors import BadRequest, NotFound
from . import writes
from .journal import Journal
from .stamps import check_ts, when

log = logging.getLogger(__name__)

REAPPLY_WINDOW_S = 5.0
MAX_REAPPLY = 3
SWEEP_S = 0.05
OWN_KEPT = 64  # text hashes of a file our writes left, kept to tell them from a person's save


@dataclass(slots=True)
class _Op:
    """One write, repeatable: ``run()`` → (reply, text it was based on, text written);
    ``state(text)`` is what the write changes (its entry count, its section)."""

    rel: str
    run: Callable[[], tuple[dict[str, object], str | None, str]]
    state: Callable[[str | None], object]
    journal: Callable[[str | None], None]
    what: str  # for the log: "the entry at 10:00", "item 'milk'"
    adds: bool = False  # a diary entry: another write never replaces it, only adds beside it


@dataclass(slots=True)
class _Recent:
    """A write the sweeper checks: its ``state`` back to ``before`` means it was lost."""

    op: _Op
    before: object
    after: object
    until: float
    redone: int = 0


@dataclass(slots=True)
class _FileState:
    lock: threading.Lock = field(default_factory=threading.Lock)
    recent: list[_Recent] = field(default_factory=list)
    retired: list[writes.Retired] = field(default_factory=list)
    own: dict[str, int] = field(default_factory=dict)  # the file's text hashes after our
    # last OWN_KEPT writes, oldest first, each with its ``own_mark``
    seen: tuple[int, int, int] | None = None  # (ino, size, mtime) at the last sweep


class VaultWriter:
    """Safe writes into one vault; ``on_written(rel)`` makes them visible (→ generation)."""

    def __init__(
        self,
        root: Path | str,
        *,
        journal: Journal | None = None,
        on_written: Callable[[str], int] | None = None,
        indexed_hash: Callable[[str], str | None] | None = None,
        shared_lock: bool = False,
    ) -> None:
        self.root = root = Path(root)  # the README's snippet passes a str
        # The daemon's writers take the vault lock shared, any other writer exclusive
        # (writes.vault_lock): writers in other processes take turns with them.
        self.shared_lock = shared_lock
        self.journal = journal if journal is not None else Journal(root)
        self.on_written = on_written
        self.indexed_hash = indexed_hash  # rel → the text hash the index holds for it
        self._files: dict[str, _FileState] = {}
        self._guard = threading.Lock()
        self._marks = 0  # own states recorded so far (``own_mark``)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------- methods

    def append_diary(
        self,
        text: object,
        *,
        date: str | None = None,
        time: str | None = None,
        ts: str | None = None,
        tz: str | None = None,
        owner: str | None = None,
        source: str | None = None,
    ) -> dict[str, object]:
        """Write a ``## HH:MM`` entry into ``diary/<date>.md`` in chronological order."""
        body = edit.check_body(text)
        ts, day, hhmm = when(ts, date, time, tz)
        meta = edit.render_meta(owner, source, ts)
        rel = f"diary/{day}.md"
        block = edit.diary_block(hhmm, body, meta)
        op = _Op(
            rel,
            lambda: self._diary(rel, day, hhmm, body, meta),
            # What a lost write changes: how many entries that time has (a person's fix to
            # the entry's words keeps it, and must not read as the entry lost), and whether
            # this very entry is there (a person deleting another entry of that minute must
            # not read as this one lost, which would write it twice).
            lambda t: (0, False) if t is None else _entry_state(t, hhmm, block),
            lambda detail: self.journal.diary(day, hhmm, owner, source, detail),
            f"the entry at {hhmm}",
            adds=True,
        )
        return self._perform(op)

    def upsert_wiki(
        self,
        file: object,
        name: object,
        text: object,
        *,
        owner: str | None = None,
        source: str | None = None,
        ts: str | None = None,
    ) -> dict[str, object]:
        """Replace item ``name``'s section of ``wiki/<file>.md``, or add it."""
        slug, item, body = edit.check_file(file), edit.check_name(name), edit.check_body(text)
        stamp = (
            check_ts(ts)
            if ts is not None
            else datetime.now().astimezone().isoformat(timespec="seconds")
        )
        meta = edit.render_meta(owner, source, stamp)
        rel = f"wiki/{slug}.md"
        created: list[bool] = []
        touched: list[str] = []  # the item's heading as the note writes it ("Milk" for "milk")

        def run() -> tuple[dict[str, object], str | None, str]:
            reply, base, text_out = self._upsert(rel, slug, item, body, meta)
            created[:] = [reply["created"] is True]
            touched[:] = [str(reply["heading"])]
            return reply, base, text_out

        def note(detail: str | None) -> None:
            action = "add" if created and created[0] else "update"
            self.journal.wiki(action, slug, touched[0] if touched else item, owner, source, detail)

        op = _Op(rel, run, lambda t: items.item_state(t, item, rel), note, f"item {item!r}")
        return self._perform(op)

    def delete_wiki(
        self, file: object, name: object, *, owner: str | None = None, source: str | None = None
    ) -> dict[str, object]:
        """Remove item ``name``'s section from ``wiki/<file>.md`` (NotFound when absent);
        ``owner`` and ``source`` go to the journal line, as a write's do."""
        slug, item = edit.check_file(file), edit.check_name(name)
        edit.render_meta(owner, source, None)  # the same checks as a write's provenance
        rel = f"wiki/{slug}.md"
        removed: list[str] = []  # the item's heading as the note wrote it

        def run() -> tuple[dict[str, object], str | None, str]:
            reply, base, text_out = self._delete(rel, item)
            removed[:] = [str(reply["item"])]
            return reply, base, text_out

        op = _Op(
            rel,
            run,
            lambda t: items.item_state(t, item, rel),
            lambda detail: self.journal.wiki(
                "remove", slug, removed[0] if removed else item, owner, source, detail
            ),
            f"the removal of item {item!r}",
        )
        return self._perform(op)

    # ------------------------------------------------------------------ plumbing

    def _state(self, rel: str) -> _FileState:
        with self._guard:
            return self._files.setdefault(rel, _FileState())

    def _perform(self, op: _Op, redone: int = 0) -> dict[str, object]:
        state = self._state(op.rel)
        with state.lock, writes.vault_lock(self.root, shared=self.shared_lock):
            self._rescue(op.rel, state)
            try:
                reply, base, written = op.run()
            except OSError as exc:  # the file system's answer, not a bug: say it
                raise writes.WriteFailed(
                    f"cannot write {op.rel!r}: {exc.strerror or exc} (no permission, an "
                    "immutable file, or a read-only or full file system?)"
                ) from exc
            self._journal_folded_in(op.rel, base, state)
            op.journal("reapplied: another save had overwritten it" if redone else None)
            digest = text_hash(written)
            state.own.pop(digest, None)  # kept newest last
            with self._guard:
                self._marks += 1
                state.own[digest] = self._marks
            while len(state.own) > OWN_KEPT:
                del state.own[next(iter(state.own))]
            norm = edit.normalize(written)
            was = None if base is None else edit.normalize(base)
            # A write of ours that changed an earlier write's item ends that watch (the item
            # is ours again); one that left it alone keeps it, even when a save had already
            # reverted it (then the sweeper re-applies it). A diary entry is never replaced:
            # another entry of the same minute leaves its watch on.
            state.recent = [
                r for r in state.recent if r.op.adds or r.op.state(was) == r.op.state(norm)
            ]
            before, after = op.state(was), op.state(norm)
            if before != after:
                until = time.monotonic() + REAPPLY_WINDOW_S
                state.recent.append(_Recent(op, before, after, until, redone))
        if self.on_written is not None:
            reply["generation"] = self.on_written(op.rel)
        return reply

    def _journal_folded_in(self, rel: str, base: str | None, state: _FileState) -> None:
        """A person's save the index has not applied yet, which this write was built on:
        applying the write applies both, and the watcher then finds nothing new, so the
        save's journal line is written here, before the write's own."""
        if self.indexed_hash is None or base is None:
            return
        digest, indexed = text_hash(base), self.indexed_hash(rel)
        if digest != indexed and digest not in state.own:
            self.journal.external("create" if indexed is None else "edit", rel)

    def is_own(self, rel: str, digest: str) -> bool:
        """True when ``rel`` with text hash ``digest`` is a state one of our writes left.
        A write of ``rel`` in progress is waited for: its bytes are on disk before its
        hash is recorded, and the watcher may read them in between."""
        with self._guard:
            state = self._files.get(rel)
        if state is None:
            return False
        with state.lock:
            return digest in state.own

    def own_mark(self) -> int:
        """How many states our writes have left so far: taken before a file is read, it
        tells the ones left before that read (``not_own_before``)."""
        with self._guard:
            return self._marks

    def not_own_before(self, rel: str, mark: int) -> None:
        """A person's save of ``rel``, read after our writes up to ``mark``, was applied: the
        states those writes left are ours no more. The file back at one of them (an undo) is
        the person's change, and journaled as such."""
        with self._guard:
            state = self._files.get(rel)
        if state is None:
            return
        with state.lock:
            for digest in [d for d, at in state.own.items() if at <= mark]:
                del state.own[digest]

    def _retire(self, rel: str) -> Callable[[writes.Retired], None]:
        state = self._state(rel)

        def keep(old: writes.Retired) -> None:
            old.until = time.monotonic() + writes.RETIRE_S
            state.retired.append(old)

        return keep

    def _diary(
        self, rel: str, day: str, hhmm: str, body: str, meta: str
    ) -> tuple[dict[str, object], str | None, str]:
        path = writes.target(self.root, rel)
        made: list[edit.Edit] = []
        based: list[str] = []

        block = edit.diary_block(hhmm, body, meta)
        first: list[int] = []

        def apply(current: str) -> str:
            # A retry may be based on a file that already holds our entry (another writer
            # built on our first attempt): then it stays as it is, never twice.
            have = edit.count_block(current, block)
            if first and have > first[0]:
                at = items.split_lines(current[: current.rindex("## " + hhmm)])
                made[:] = [edit.Edit(current, len(at) + 1)]
                return current
            first[:] = first or [have]
            based[:] = [current]
            made[:] = [edit.insert_diary_entry(current, hhmm, body, meta)]
            return made[0].text

        for _ in range(writes.RETRIES):
            snap = writes.read_snapshot(path, rel)
            try:
                if snap.text is None:
                    new = edit.new_file(day, hhmm, body, meta)
                    if writes.create(path, new.text.encode()):
                        return _ref(rel, new.text, new.line, hhmm), None, new.text
                    continue
                planned = edit.insert_diary_entry(snap.text, hhmm, body, meta)
                if planned.appended is not None:
                    done = writes.append(path, snap, planned.appended.encode())
                    if done is None:
                        continue
                    before = done[1].decode("utf-8", "replace")
                    lead = len(planned.appended) - len(planned.appended.lstrip("\r\n"))
                    line = len(items.split_lines(before + planned.appended[:lead])) + 1
                    text = before + planned.appended
                    return _ref(rel, text, line, hhmm), before, text
                text = writes.replace(path, rel, snap, apply, self._retire(rel))
                return _ref(rel, text, made[0].line, hhmm), based[0], text
            finally:
                snap.close()
        raise writes.WriteConflict(f"{rel!r} kept changing under other writers; retry")

    def _upsert(
        self, rel: str, slug: str, item: str, body: str, meta: str
    ) -> tuple[dict[str, object], str | None, str]:
        path = writes.target(self.root, rel)
        made: list[tuple[edit.Edit, bool]] = []
        based: list[str] = []

        def apply(current: str) -> str:
            based[:] = [current]
            made[:] = [edit.upsert_item(current, item, body, meta, rel)]
            return made[0][0].text

        for _ in range(writes.RETRIES):
            snap = writes.read_snapshot(path, rel)
            try:
                if snap.text is None:
                    new = edit.new_file(slug, item, body, meta)
                    if writes.create(path, new.text.encode()):
                        return (
                            {**_ref(rel, new.text, new.line, item), "created": True},
                            None,
                            new.text,
                        )
                    continue
                text = writes.replace(path, rel, snap, apply, self._retire(rel))
                (done, created) = made[0]
                return {**_ref(rel, text, done.line, item), "created": created}, based[0], text
            finally:
                snap.close()
        raise writes.WriteConflict(f"{rel!r} kept changing under other writers; retry")

    def _delete(self, rel: str, item: str) -> tuple[dict[str, object], str | None, str]:
        if not (self.root / rel).parent.is_dir():  # nothing to delete: and nothing made
            raise NotFound(f"no item {item!r} in {rel!r}; nothing deleted")
        path = writes.target(self.root, rel)
        snap = writes.read_snapshot(path, rel)
        try:
            heading = None if snap.text is None else items.item_heading(snap.text, item, rel)
            if heading is None:
                raise NotFound(f"no item {item!r} in {rel!r}; nothing deleted")
            based: list[str] = []

            def apply(current: str) -> str:
                based[:] = based or [current]
                out = edit.delete_item(current, item, rel)
                return current if out is None else out  # already gone (a retry): done

            text = writes.replace(path, rel, snap, apply, self._retire(rel))
        finally:
            snap.close()
        return {"path": rel, "item": heading, "deleted": True}, based[0], text

    # ------------------------------------------------------------------- sweeper

    def start(self) -> None:
        """Start the sweeper thread (re-applies lost writes, rescues late appends)."""
        self._thread = threading.Thread(target=self._sweep_loop, name="write-sweeper", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._guard:
            states = list(self._files.values())
        for state in states:
            with state.lock:
                for old in state.retired:
                    os.close(old.fd)
                state.retired.clear()

    def _sweep_loop(self) -> None:
        while not self._stop.wait(SWEEP_S):
            try:
                self.sweep()
            except Exception:  # a bug must not end the sweeper; the next round tries again
                log.exception("checking recent writes failed")

    def sweep(self) -> None:
        """One round: for each file written recently, rescue late appends to displaced
        files and re-apply writes that a later save overwrote."""
        with self._guard:
            busy = [(rel, s) for rel, s in self._files.items() if s.recent or s.retired]
        for rel, state in busy:
            redo: list[_Recent] = []
            with state.lock, writes.vault_lock(self.root, shared=self.shared_lock):
                self._rescue(rel, state)
                now = time.monotonic()
                state.recent = [r for r in state.recent if r.until > now]
                # An empty note is an editor's in-place save caught between its truncate and
                # its write: it is not judged (a write re-applied into it would be overwritten
                # by the rest of the save, leaving a torn tail of ours); the save's result is.
                judge = bool(state.recent) and self._changed(rel, state)
                current = _read_text(self.root / rel) if judge else ""
                if current != "":
                    current = None if current is None else edit.normalize(current)
                    given_up: list[_Recent] = []
                    for r in state.recent:
                        if r.op.state(current) == r.before:
                            (redo if r.redone < MAX_REAPPLY else given_up).append(r)
                    for r in given_up:  # said once: a save that keeps overwriting it wins
                        log.warning(
                            "%s: saves overwrote %s %d times; not re-applying it again "
                            "(the saved version stands)",
                            rel,
                            r.op.what,
                            r.redone + 1,
                        )
                    state.recent = [r for r in state.recent if r not in redo and r not in given_up]
            for r in redo:
                log.warning(
                    "%s: a save overwrote a write made %.1fs before; re-applying it",
                    rel,
                    REAPPLY_WINDOW_S - (r.until - time.monotonic()),
                )
                try:
                    self._perform(r.op, r.redone + 1)
                except (
                    BadRequest,
                    NotFound,
                    writes.WriteConflict,
                    writes.WriteFailed,
                    OSError,
                ) as exc:
                    log.warning("%s: re-applying a lost write failed: %s", rel, exc)

    def _changed(self, rel: str, state: _FileState) -> bool:
        try:
            st = os.stat(self.root / rel)
            key: tuple[int, int, int] | None = (st.st_ino, st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            key = None
        changed = key != state.seen or key is None
        state.seen = key
        return changed

    def _rescue(self, rel: str, state: _FileState) -> None:
        now = time.monotonic()
        keep = []
        for old in state.retired:
            try:
                tail = writes.rescue(self.root / rel, old)
            except OSError as exc:
                log.warning("%s: could not hand over late bytes: %s", rel, exc)
                tail = b""
            if tail:
                log.warning(
                    "%s: %d bytes appended to the replaced file were moved over", rel, len(tail)
                )
            if old.until > now:
                keep.append(old)
            else:
                os.close(old.fd)
        state.retired = keep


def _entry_state(text: str, hhmm: str, block: str) -> tuple[int, bool]:
    """A diary entry's state in ``text``: the entries of its minute, and whether it is one."""
    return edit.count_time(text, hhmm), edit.count_block(text, block) > 0


def _read_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def _ref(rel: str, text: str, line: int, heading: str) -> dict[str, object]:
    """The reply's reference to what was written: the entry id and heading as the index
    names them (an item found in another case keeps the note's: "Milk" for "milk")."""
    entry = next((e for e in parse_note(rel, text).entries if e.line == line), None)
    if entry is None:
        return {"id": f"{rel}#{heading}", "path": rel, "heading": heading, "line": line}
    return {"id": entry.id, "path": rel, "heading": entry.heading, "line": line}
