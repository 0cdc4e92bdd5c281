"""The content-addressed, incremental vector cache: load, pick up, add, merge, search.

``VectorCache`` owns the vector files in the cache directory (DESIGN §4, ADR-0005). Every
file group is content-addressed, ``seg-<sha256[:16]>.npy`` + ``seg-<same>.keys.jsonl``, so
two synced daemons never write one name with different bytes, and a file once written is
never rewritten, only deleted when a merge has replaced it. The largest group is the
*base*; ``vectors.keys.jsonl`` is a copy of its keys file (the name wikimem reads). Which
groups merge when is ``policy.py``; the rows in memory and the search are ``memory.py``.

Rows are keyed by the content hash of the embedded text, never by path. Every write is
atomic; every read is tolerant: a torn or corrupt group costs its untrusted blocks only
(reported in ``dropped``). ``refresh`` picks up groups another machine's daemon wrote into
a synced cache dir while we run. A fingerprint mismatch turns the cache off ("mismatch")
until an explicit rebuild. Filling it (embedding the missing hashes) is ``sync.py``'s job.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem_watch.atomic import atomic_write
from wikimem_watch.vectors.embedders import EmbedError
from wikimem_watch.vectors.files import (
    BASE_NPY,
    KEYS_FILE,
    MANIFEST_NPY,
    OURS,
    SEG_KEYS,
    Span,
    group_sums,
    manifest_target,
    npy_of,
    packed,
    read_keys,
    read_matrix,
    remove_stale,
    signature,
    write_group,
)
from wikimem_watch.vectors.memory import VectorMatrix
from wikimem_watch.vectors.policy import MergePolicy, next_step

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]

__all__ = ["RECENT_S", "VectorCache"]

log = logging.getLogger(__name__)

RECENT_S = 600.0  # a base rewrite keeps rows another machine sent this recently (see keep)
MAX_DROPPED = 32  # reasons kept for ``status``


@dataclass(slots=True)
class _Group:
    """One file group on disk, as loaded: its rows, the hashes it holds that we trust."""

    keys: Path
    npy: Path
    rows: int
    hashes: tuple[str, ...]
    sig: tuple[int, ...]
    complete: bool
    arrived_at: float | None = None  # monotonic time a refresh found it (another machine's)


class VectorCache:
    """Content-hash → vectors, persisted incrementally, searched brute force in memory.

    ``state``: "off" (not loaded), "ready", "embedding" (a sync is running), "error" (the
    last sync failed; loaded vectors still serve), "mismatch" (files are from another
    fingerprint: unused until ``clear``/rebuild). Thread-safe: one lock guards everything.
    """

    def __init__(
        self,
        cache_dir: Path,
        fingerprint: Mapping[str, object],
        *,
        policy: MergePolicy | None = None,
    ) -> None:
        self.cache_dir = Path(cache_dir)
        self.fingerprint: dict[str, object] = json.loads(json.dumps(dict(fingerprint)))
        self.policy = policy or MergePolicy()
        self.state = "off"
        self.last_error: str | None = None
        self.dropped: list[str] = []
        self.bytes_written = 0  # by this process, every vector file (for status and benches)
        self.last_arrival: float | None = None  # monotonic: another machine's group picked up
        self.loading = False
        self._lock = threading.RLock()
        self._reset()

    def _reset(self) -> None:
        dim = self.fingerprint.get("dim")
        self._m = VectorMatrix(dim if isinstance(dim, int) else 0, self.cache_dir)
        self._groups: dict[str, _Group] = {}  # keys-file name → group
        self._failed: dict[str, tuple[int, ...]] = {}  # keys-file name → signature that failed
        # Rows added, keys dropped and rows picked up since dead rows were last counted: an
        # upper bound on how many more rows can have died (``maintain``).
        self.churn = 0

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        """Read every group; drop (and report in ``dropped``) whatever cannot be trusted."""
        self.loading = True  # read without the lock by ``stats``: a load of 1M rows takes s
        try:
            self._load()
        finally:
            self.loading = False

    def _load(self) -> None:
        with self._lock:
            self._reset()
            self.dropped = []
            verdicts = [self._load_group(name) for name in self._group_names(legacy=True)]
            ours, foreign = verdicts.count("ok"), verdicts.count("foreign")
            self.state = "mismatch" if foreign and not ours else "ready"
            if self.state == "mismatch":
                self._reset()
            for message in self.dropped:
                log.warning("vector cache %s: %s", self.cache_dir, message)

    def refresh(self) -> int:
        """Pick up groups that appeared (a sync tool delivered another machine's), retry ones
        that were torn and have changed since, forget ones that vanished. Never embeds.
        Returns how many groups were picked up."""
        with self._lock:
            if self.state not in ("ready", "embedding", "error"):
                return 0
            names = self._group_names(legacy=False)
            for gone in [n for n in self._groups if n != KEYS_FILE and n not in names]:
                self._m.ref(self._groups.pop(gone).hashes, -1)  # its rows stay in memory
            arrived = 0
            for name in names:
                group = self._groups.get(name)
                if group is not None and group.complete:
                    continue
                sig = signature(self.cache_dir / name, self.cache_dir / npy_of(name))
                if (group is not None and group.sig == sig) or self._failed.get(name) == sig:
                    continue
                if group is not None:
                    self._m.ref(self._groups.pop(name).hashes, -1)
                if self._load_group(name) == "ok":
                    arrived += 1
                    self._groups[name].arrived_at = time.monotonic()
                    self.churn += self._groups[name].rows
            if arrived:
                self.last_arrival = time.monotonic()
            return arrived

    def _group_names(self, *, legacy: bool) -> list[str]:
        """Segment keys files, sorted; first the fixed-name keys file when it is a base of
        the older layout (``vectors-NNNNNN.npy``), not a copy of a segment's keys."""
        try:
            names = sorted(p.name for p in self.cache_dir.iterdir() if SEG_KEYS.fullmatch(p.name))
        except OSError:
            return []
        if legacy and BASE_NPY.fullmatch(manifest_target(self.cache_dir / KEYS_FILE)):
            names.insert(0, KEYS_FILE)
        return names

    def _load_group(self, name: str) -> str:
        keys_path = self.cache_dir / name
        npy_name = BASE_NPY if name == KEYS_FILE else MANIFEST_NPY
        sig = signature(keys_path, self.cache_dir / npy_of(name))
        try:
            header, spans = read_keys(keys_path, npy_name)
            if any(header.get(k) != v for k, v in self.fingerprint.items()):
                self._drop(f"{name}: fingerprint differs ({header.get('model')!r})")
                return "foreign"
            npy_path = self.cache_dir / str(header["vectors_file"])
            if name != KEYS_FILE and npy_path.name != npy_of(name):
                raise ValueError(f"names {npy_path.name}, not its own matrix")
            rows, dim = header["rows"], header["dim"]
            if not isinstance(rows, int) or not isinstance(dim, int) or dim < 1:
                raise ValueError(f"header says {rows!r} rows of dim {dim!r}")
            if self._m.dim and dim != self._m.dim:
                raise ValueError(f"dim {dim} != {self._m.dim}")
            # Straight into the matrix's free rows (a map: off the heap); kept by commit.
            good = read_matrix(npy_path, header, self._m.reserve(rows, dim), self._m.settle)
        except ValueError as exc:
            self._failed[name] = sig
            self._drop(f"{name}: {exc}; its rows are treated as missing")
            return "dropped"
        complete = bool(good.all())
        if not complete:
            kept = [sp for sp in spans if good[sp[1] : sp[1] + sp[2]].all()]
            self._drop(
                f"{npy_path.name}: {int((~good).sum())} of {len(good)} rows failed their block "
                f"checksum or are not finite; {len(spans) - len(kept)} texts are treated as "
                "missing (re-embedded)"
            )
            spans = kept
        self._m.commit(spans)
        hashes = tuple(h for h, _, _ in spans)
        self._m.ref(hashes, 1)
        self._groups[name] = _Group(keys_path, npy_path, len(good), hashes, sig, complete)
        self._failed.pop(name, None)
        return "ok"

    def _drop(self, message: str) -> None:
        self.dropped = [*self.dropped[-MAX_DROPPED + 1 :], message]
        if self.state != "off":  # load() logs its own list once
            log.info("vector cache %s: %s", self.cache_dir, message)

    # -- queries ---------------------------------------------------------------------------

    @property
    def usable(self) -> bool:
        """True when the loaded vectors may be used for ranking."""
        return self.state in ("ready", "embedding", "error") and bool(self._m.hashes)

    def has(self, content_hash: str) -> bool:
        with self._lock:
            return content_hash in self._m.hid

    def missing(self, hashes: Iterable[str]) -> list[str]:
        """The hashes (deduplicated, in order) that have no vectors yet."""
        # Listed before the lock: the engine's map takes the engine's lock to list its keys,
        # and a query holds that one while it waits for this one.
        wanted = list(dict.fromkeys(hashes))
        with self._lock:
            return [h for h in wanted if h not in self._m.hid]

    def search(
        self, query: FloatMatrix, hashes: Collection[str] | None, k: int
    ) -> list[tuple[str, float]]:
        """Top ``k`` (hash, best-chunk cosine), restricted to ``hashes`` when given."""
        with self._lock:
            return self._m.search(query, hashes, k) if self.usable else []

    def cosines(self, query: FloatMatrix, hashes: Iterable[str]) -> dict[str, float]:
        """Best-chunk cosine for each of ``hashes`` that has vectors (others are absent)."""
        with self._lock:
            return self._m.cosines(query, hashes) if self.usable else {}

    # -- writing ---------------------------------------------------------------------------

    def ensure_dir(self) -> None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        gitignore = self.cache_dir / ".gitignore"
        if not gitignore.exists():
            atomic_write(gitignore, b"*\n")

    def add(self, items: Mapping[str, FloatMatrix]) -> int:
        """Add vectors (hash → (n_chunks, dim)) as ONE new segment; returns rows added.

        Hashes already held are skipped. A failed write is reported in ``last_error`` and
        the vectors still serve from memory for this process.
        """
        import numpy as np

        with self._lock:
            if self.state == "mismatch":
                raise EmbedError("the vector cache holds another model's vectors; rebuild it")
            fresh = {h: np.atleast_2d(np.asarray(v, np.float32)) for h, v in items.items()}
            fresh = {h: v for h, v in fresh.items() if h not in self._m.hid and v.shape[0]}
            bad = [h for h, v in fresh.items() if not np.isfinite(v).all()]
            if bad:  # never stored: a NaN row would poison every cosine it meets
                log.warning("vector cache: refused %d non-finite vectors", len(bad))
                fresh = {h: v for h, v in fresh.items() if h not in bad}
            if not fresh:
                return 0
            dims = {v.shape[1] for v in fresh.values()}
            if len(dims) != 1 or (self._m.dim and dims != {self._m.dim}):
                raise EmbedError(
                    f"vectors of dim {sorted(dims)} do not fit the cache dim {self._m.dim}"
                )
            matrix = np.ascontiguousarray(np.concatenate(list(fresh.values())))
            spans = packed([(h, v.shape[0]) for h, v in fresh.items()])
            self._m.append(spans, matrix)
            self.churn += int(matrix.shape[0])
            try:
                self._write(spans, matrix)
            except OSError as exc:
                self.last_error = f"cannot write to {self.cache_dir}: {exc}"
                log.warning("vector cache: %s (vectors kept in memory only)", self.last_error)
            return int(matrix.shape[0])

    def _write(
        self,
        spans: list[Span],
        matrix: FloatMatrix,
        *,
        base: bool = False,
        done: Callable[[int, int], None] | None = None,
    ) -> str:
        """Write a group (unless a group of the same content is on disk) and track it;
        ``base`` also copies its keys to ``vectors.keys.jsonl``. Returns its keys name.
        The rows are streamed from ``matrix`` (``done``: ``files.group_sums``)."""
        sums = group_sums(self.fingerprint, [h for h, _, _ in spans], matrix, done)
        keys_name = f"{sums[0]}.keys.jsonl"
        keys_path, npy_path = self.cache_dir / keys_name, self.cache_dir / f"{sums[0]}.npy"
        if keys_name not in self._groups:  # equal name, equal bytes: another machine's copy
            self.ensure_dir()
            copy = self.cache_dir / KEYS_FILE if base else None
            self.bytes_written += write_group(
                keys_path,
                npy_path,
                self.fingerprint,
                spans,
                matrix,
                copy_keys_to=copy,
                sums=sums,
                done=done,
            )
            hashes = tuple(h for h, _, _ in spans)
            sig = signature(keys_path, npy_path)
            self._groups[keys_name] = _Group(keys_path, npy_path, len(matrix), hashes, sig, True)
            self._m.ref(hashes, 1)
        elif base and manifest_target(self.cache_dir / KEYS_FILE) != npy_path.name:
            atomic_write(self.cache_dir / KEYS_FILE, keys_path.read_bytes())
        return keys_name

    def _forget(self, name: str) -> None:
        """Delete one group's files (merged into another) and stop counting its rows."""
        group = self._groups.pop(name)
        self._m.ref(group.hashes, -1)
        paths = [group.npy] if name == KEYS_FILE else [group.keys, group.npy]
        if name == KEYS_FILE and manifest_target(group.keys) == group.npy.name:
            paths.append(group.keys)  # an old-layout base that no copy has replaced
        for path in paths:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

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

    def maintain(self, live: Collection[str] | None) -> int:
        """Merge files as the policy says (``policy.py``) until it is satisfied; returns the
        number of merges. Raises OSError when a write fails (the old files stay).

        ``live`` are the hashes live entries need, listed by the caller before this takes
        the lock (the engine's map takes the engine's lock to list them). Without them
        (``needs_live`` said no) dead rows count as none and the base is left alone: segments
        still merge by size.
        """
        with self._lock:
            if self.state == "mismatch":
                return 0
            steps = 0
            while steps < 64:
                groups = [(name, g.rows) for name, g in self._groups.items()]
                dead = 0
                if live is not None:
                    dead = sum(rows for _, rows in groups) - self._m.live_rows_on_disk(live)
                    self.churn = 0
                step = next_step(groups, dead, self.policy)
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
                    keep.update(group.hashes)
            # Straight into a new matrix (a map when large), written from there: no copy of
            # the rows on the heap.
            self._replace_all(self._m.subset(sorted(keep), self.cache_dir), list(self._groups))

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

    def adopt(self, rebuilt: VectorCache, live: Collection[str]) -> None:
        """Swap in a rebuild: ``rebuilt``'s ``live`` rows become this cache's new base, then
        every older vector file here (any fingerprint) is deleted. Until the new keys file
        lands, the old cache is intact and serving; a failure leaves it so."""
        wanted = sorted(set(live))  # listed before the locks (see ``missing``)
        with self._lock, rebuilt._lock:
            self.ensure_dir()
            fresh = rebuilt._m.subset(wanted, self.cache_dir)
            old = [p for p in self.cache_dir.iterdir() if OURS.fullmatch(p.name) and p.is_file()]
            self.fingerprint = dict(rebuilt.fingerprint)
            self._reset()
            self._m = fresh
            spans, matrix = fresh.spans(), fresh.mat[: fresh.n_rows]
            done = fresh.store.release
            out = self._write(spans, matrix, base=True, done=done) if spans else ""
            for path in old:
                if path.name not in (out, npy_of(out)):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
            self.state, self.last_error, self.dropped = "ready", None, []

    def clear(self) -> None:
        """Delete every vector file (any fingerprint) and start empty: the rebuild path."""
        with self._lock:
            with contextlib.suppress(OSError):
                for path in [self.cache_dir / KEYS_FILE, *self.cache_dir.iterdir()]:
                    if path.name == KEYS_FILE or OURS.fullmatch(path.name):
                        with contextlib.suppress(FileNotFoundError):
                            path.unlink()
            self._reset()
            self.state, self.last_error, self.dropped = "ready", None, []

    def stats(self) -> dict[str, object]:
        out: dict[str, object] = {
            "state": "loading",  # read without the lock a load holds for seconds
            "model": self.fingerprint.get("model"),
            "dim": self.fingerprint.get("dim"),
            "hashes": 0,
            "rows": 0,
            "disk_rows": 0,
            "segments": 0,
            "base": None,
            "bytes_written": self.bytes_written,
            "dropped": [],
            "last_error": None,
        }
        if self.loading:
            return out
        with self._lock:
            base = max(self._groups.values(), key=lambda g: (g.rows, g.npy.name), default=None)
            out.update(
                state=self.state,
                dim=self._m.dim,
                hashes=len(self._m.hashes),
                rows=self._m.n_rows,
                disk_rows=sum(g.rows for g in self._groups.values()),
                segments=max(len(self._groups) - 1, 0),
                base=base.npy.name if base else None,
                dropped=list(self.dropped),
                last_error=self.last_error,
            )
            return out
