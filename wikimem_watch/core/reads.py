"""The engine's read side: per-slot facts for the ranking, links, days, notes and digests.

A mixin of :class:`~wikimem_watch.core.engine.Engine`, which owns the state and is its only
mutator; every method here reads under the engine's ``lock`` (or is called by one that
holds it) and changes nothing but the lazily folded digest.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import date, timedelta

import numpy as np
import numpy.typing as npt

from ..errors import NotFound
from .bm25 import Bm25Index
from .facts import entry_digest
from .models import Entry, Link

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .engine import FileRecord


class EngineReads:
    """Read methods over the engine's state (declared here for the type checker)."""

    lock: threading.RLock
    index: Bm25Index
    files: dict[str, FileRecord]
    entries: dict[str, Entry]
    days: dict[str, list[str]]
    names: dict[str, set[str]]
    _digest: int
    _digest_pending: list[Entry]
    _slot_entry: list[Entry | None]
    _slot_day: npt.NDArray[np.int32]
    _slot_wiki: npt.NDArray[np.bool_]
    _slot_epoch: npt.NDArray[np.float64]
    _slot_prev: npt.NDArray[np.int64]
    _vector_key: dict[str, str]
    _by_key: dict[str, set[str]]

    def slot_entry(self, slot: int) -> Entry:
        entry = self._slot_entry[slot]
        assert entry is not None
        return entry

    def slot_arrays(
        self,
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
        """Per-slot day ordinal (0 = none), is-wiki flag and entry time in epoch days."""
        return self._slot_day, self._slot_wiki, self._slot_epoch

    def previous_slots(self) -> npt.NDArray[np.int64]:
        """Per slot, the slot of the diary entry before it in its file (-1: none)."""
        return self._slot_prev

    def vector_key(self, slot: int) -> str:
        """The vector cache key of the entry at ``slot``."""
        return self._vector_key[self.slot_entry(slot).id]

    def slots_of_keys(self, keys: Iterable[str]) -> npt.NDArray[np.int64]:
        """Index slots of the live entries whose vector key is in ``keys``."""
        slots = [
            slot
            for key in keys
            for entry_id in self._by_key.get(key, ())
            if (slot := self.index.slot(entry_id)) is not None
        ]
        return np.array(slots, dtype=np.int64)

    def resolve(self, link: Link) -> list[Entry]:
        """The entries a link points at (a section, or the whole note); [] when unresolvable."""
        with self.lock:
            note = self._resolve_note(link.target)
            heading = link.heading
            if note is None and link.style == "wikimem" and link.target == "file" and heading:
                note, heading = self._resolve_note(heading), None  # [[file:note]] form
            if note is None:
                return []
            entries = [self.entries[i] for i in self.files[note].ids]
            if heading:
                want = heading.strip().lower()
                entries = [e for e in entries if e.heading.strip().lower() == want]
            return entries

    def _resolve_note(self, target: str) -> str | None:
        key = target.strip().lower().removesuffix(".md")
        for candidate in (key, key + ".md"):
            paths = self.names.get(candidate)
            if paths:
                return min(paths, key=lambda p: (p.count("/"), p))
        return None

    def entries_of(self, rel: str) -> list[Entry]:
        with self.lock:
            record = self.files.get(rel)
            if record is None:
                raise NotFound(f"no indexed note at {rel!r} (paths are vault-relative)")
            return [self.entries[i] for i in record.ids]

    def entries_on(self, day: str) -> list[Entry]:
        with self.lock:
            return [self.entries[i] for i in self.days.get(day, [])]

    def day_counts(self, start: str | None = None, end: str | None = None) -> list[tuple[str, int]]:
        with self.lock:
            return sorted(
                (d, len(ids))
                for d, ids in self.days.items()
                if (start is None or d >= start) and (end is None or d <= end)
            )

    def window_entries(self, start: date, end: date) -> list[Entry]:
        """Diary entries dated within [start, end], oldest first. Costs O(days + entries)."""
        with self.lock:
            out: list[Entry] = []
            if (end - start).days > 4 * len(self.days):
                days = sorted(d for d in self.days if start.isoformat() <= d <= end.isoformat())
            else:
                days = [(start + timedelta(n)).isoformat() for n in range((end - start).days + 1)]
            for day in days:
                out.extend(self.entries[i] for i in self.days.get(day, ()))
            return out

    def count_days(self, start: date, end: date) -> int:
        """How many diary entries are dated within [start, end]. Costs O(days)."""
        with self.lock:
            if (end - start).days > 4 * len(self.days):
                lo, hi = start.isoformat(), end.isoformat()
                return sum(len(ids) for d, ids in self.days.items() if lo <= d <= hi)
            days = ((start + timedelta(n)).isoformat() for n in range((end - start).days + 1))
            return sum(len(self.days.get(d, ())) for d in days)

    def backlinks(self, rel: str) -> list[tuple[Entry, Link]]:
        with self.lock:
            if rel not in self.files:
                raise NotFound(f"no indexed note at {rel!r} (paths are vault-relative)")
            out = []
            for entry in self.entries.values():
                for link in entry.links:
                    if any(t.path == rel for t in self.resolve(link)):
                        out.append((entry, link))
            return sorted(out, key=lambda x: (x[0].path, x[0].line))

    def unresolved_links(self) -> list[dict[str, object]]:
        """Links to notes that resolve to nothing, by path and line (attachments such as
        ``![[x.png]]`` are not links to notes and are left out)."""
        with self.lock:
            found = [
                {"id": e.id, "path": e.path, "line": e.line, "target": link.target}
                for e in self.entries.values()
                for link in e.links
                if not link.attachment and not self.resolve(link)
            ]
        return sorted(found, key=lambda u: (str(u["path"]), int(str(u["line"]))))

    def digest(self) -> str:
        """Order-independent digest of every indexed entry's id and content hash."""
        with self.lock:
            if self._digest_pending:
                for entry in self._digest_pending:
                    self._digest ^= entry_digest(entry)
                self._digest_pending = []
            return f"{self._digest:032x}"

    def file_digests(self) -> dict[str, str]:
        with self.lock:
            out = {}
            for rel, record in self.files.items():
                acc = 0
                for i in record.ids:
                    acc ^= entry_digest(self.entries[i])
                out[rel] = f"{acc:032x}"
            return out

    def counts(self) -> dict[str, int]:
        with self.lock:
            diary = sum(len(v) for v in self.days.values())
            return {"diary": diary, "wiki": len(self.entries) - diary}

    def warnings(self) -> dict[str, list[str]]:
        with self.lock:
            return {p: list(r.warnings) for p, r in self.files.items() if r.warnings}
