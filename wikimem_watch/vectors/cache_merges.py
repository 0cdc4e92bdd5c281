"""When the vector cache merges its files, and the merges: segments by size, the base rarely.

A mixin of :class:`~wikimem_watch.vectors.cache.VectorCache`, which owns the state (declared
here for the type checker) and its lock. This module owns carrying out the merge policy
(``policy.py`` decides which groups merge when, ADR-0005): ``needs_live`` says whether the
live hashes must be listed, ``maintain`` merges until the policy is satisfied, ``compact``
rewrites the base from the live rows (keeping for ``RECENT_S`` the rows another machine
sent). The live hashes are always listed by the caller before the cache's lock is taken:
the engine's map takes the engine's lock to list them, and a query holds that one while it
waits for this one. Writing and deleting one group is ``cache_groups.py``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Collection

from wikimem_watch.vectors.cache_groups import CacheGroups
from wikimem_watch.vectors.files import KEYS_FILE, remove_stale
from wikimem_watch.vectors.memory import VectorMatrix
from wikimem_watch.vectors.policy import MergePolicy, next_step

__all__ = ["RECENT_S", "CacheMerges"]

RECENT_S = 600.0  # a base rewrite keeps rows another machine sent this recently (see keep)


class CacheMerges(CacheGroups):
    """The merges of a ``VectorCache`` (state declared here for the type checker)."""

    policy: MergePolicy
    _recent: dict[str, float]  # hash → when another machine sent it (kept for RECENT_S)

    def needs_live(self, exact: bool = False) -> bool:
        """Whether ``maintain`` needs the live hashes now: to count dead rows (always when
        ``exact``; else once ``churn`` passes a quarter of the dead rows the policy allows
        the base) or to rewrite the base. Counting reads every live hash, O(the vault), so it
        follows Θ(base) changes and costs O(1) per change, amortised; the dead share can pass
        the policy's by that quarter before the base is rewritten."""
        with self._lock:
            if self.state == "mismatch":
                return False
            groups = [(name, g.rows) for name, g in self._groups.items()]
            base_rows = max((rows for _, rows in groups), default=0)
            if exact or 4 * self.churn >= self.policy.max_dead_fraction * base_rows:
                return True
            step = next_step(groups, 0, self.policy)
            return step is not None and step.kind == "base"

    def maintain(self, live: Collection[str] | None, *, rewrite_base: bool = True) -> int:
        """Merge files as the policy says (``policy.py``) until it is satisfied; returns the
        number of merges. Raises OSError when a write fails (the old files stay).

        ``live`` are the hashes live entries need, listed by the caller before this takes
        the lock (the engine's map takes the engine's lock to list them). Without them
        (``needs_live`` said no) dead rows count as none and the base is left alone: segments
        still merge by size. ``rewrite_base`` False (another daemon sharing the cache dir
        owns the base rewrite, ``Peers.rewrites_base``) leaves the base alone too, and only
        merges segments by size.
        """
        with self._lock:
            if self.state == "mismatch":
                return 0
            live = None if live is None else set(live)
            steps = 0
            while steps < 64:
                groups = [(name, g.rows) for name, g in self._groups.items()]
                dead = 0
                if live is not None:
                    # Rows another machine sent lately are kept (``compact``): not dead.
                    needed = live | self._kept_from_others()
                    dead = sum(rows for _, rows in groups) - self._m.live_rows_on_disk(needed)
                    self.churn = 0
                step = next_step(groups, dead, self.policy, rewrite_base=rewrite_base)
                if step is None:
                    break
                if step.kind == "base":
                    if live is None:
                        break  # the next sync lists them (``needs_live``)
                    self.compact(live)
                else:
                    hashes = [h for name in step.names for h in self._groups[name].hashes]
                    merged = self._m.subset(hashes, self.cache_dir)  # a map when large
                    matrix = merged.mat[: merged.n_rows]
                    out = self._write(merged.spans(), matrix, done=merged.store.release)
                    for name in step.names:
                        if name != out:
                            self._forget(name)
                steps += 1
            return steps

    def compact(self, live: Collection[str]) -> None:
        """Rewrite the base: one group of the ``live`` rows held (sorted by hash, so two
        machines with the same vault write the same bytes), plus the rows another machine
        sent in the last ``RECENT_S`` (their notes may not have arrived yet); then delete
        every group it replaces. Memory keeps only those rows."""
        now = time.monotonic()
        keep = set(live)  # listed before the lock (see ``missing``)
        with self._lock:
            if self.state == "mismatch":
                return
            for group in self._groups.values():
                if group.arrived_at is not None and now - group.arrived_at < RECENT_S:
                    for h in group.hashes:  # in our base from now on, with no arrival time
                        self._recent[h] = max(self._recent.get(h, 0.0), group.arrived_at)
            keep |= self._kept_from_others()
            # Straight into a new matrix (a map when large), written from there: no copy of
            # the rows on the heap.
            self._replace_all(self._m.subset(sorted(keep), self.cache_dir), list(self._groups))

    def _kept_from_others(self) -> set[str]:
        """The hashes of rows another machine sent less than ``RECENT_S`` ago (their notes may
        not have arrived yet): in the group that brought them, or already in a base of ours
        that a rewrite took them into (which has no arrival time of its own)."""
        now = time.monotonic()
        self._recent = {h: t for h, t in self._recent.items() if now - t < RECENT_S}
        kept = set(self._recent)
        for group in self._groups.values():
            if group.arrived_at is not None and now - group.arrived_at < RECENT_S:
                kept.update(group.hashes)
        return kept

    def _replace_all(self, fresh: VectorMatrix, old: list[str]) -> None:
        spans = fresh.spans()
        matrix = fresh.mat[: fresh.n_rows]
        out = self._write(spans, matrix, base=True, done=fresh.store.release) if spans else None
        for name in old:
            if name != out and name in self._groups:
                self._forget(name)
        if not spans:
            with contextlib.suppress(FileNotFoundError):
                (self.cache_dir / KEYS_FILE).unlink()
        groups = dict(self._groups)
        self._m = fresh
        for group in groups.values():
            self._m.ref(group.hashes, 1)
        remove_stale(self.cache_dir, groups[out].npy.name if out else "")
