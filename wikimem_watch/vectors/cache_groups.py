"""The vector cache's file groups: which are on disk, reading one in, writing and deleting one.

A mixin of :class:`~wikimem_watch.vectors.cache.VectorCache`, which owns the state (declared
here for the type checker) and its lock. This module owns the cache's side of the files in
the cache directory (DESIGN §4, ADR-0005): ``_Group``, what the cache knows of one group it
loaded or wrote; listing the groups on disk; streaming one into the matrix
(``_load_group``, every block it cannot trust reported in ``dropped``); ``refresh``, which
picks up groups another machine's daemon wrote into a synced cache dir; writing a group
(``_write``, content-addressed: a name once written is never rewritten) and deleting one a
merge has replaced (``_forget``). The byte format of a group is ``files.py``; when groups
merge is ``cache_merges.py``; the start-up ``load`` (ready or mismatch) is ``cache.py``.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wikimem_watch.atomic import atomic_write
from wikimem_watch.vectors.files import (
    BASE_NPY,
    KEYS_FILE,
    MANIFEST_NPY,
    SEG_KEYS,
    Span,
    group_sums,
    manifest_target,
    npy_of,
    read_keys,
    read_matrix,
    signature,
    write_group,
)
from wikimem_watch.vectors.memory import VectorMatrix

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]

__all__ = ["MAX_DROPPED", "CacheGroups", "hashes_on_disk"]

log = logging.getLogger(__name__)

MAX_DROPPED = 32  # reasons kept for ``status``


def hashes_on_disk(cache_dir: Path, fingerprint: Mapping[str, object]) -> set[str]:
    """The hashes that the groups in ``cache_dir`` made with ``fingerprint`` name, read from
    their keys files alone (the matrices are neither read nor checked): what a cache there
    would hold, counted without loading it (``VectorSync`` counts a queued rebuild's work)."""
    try:
        names = sorted(p for p in cache_dir.iterdir() if SEG_KEYS.fullmatch(p.name))
    except OSError:
        return set()
    found: set[str] = set()
    for path in names:
        try:
            header, spans, _ = read_keys(path, MANIFEST_NPY)
        except ValueError:
            continue
        if all(header.get(k) == v for k, v in fingerprint.items()):
            found.update(h for h, _, _ in spans)
    return found


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


class CacheGroups:
    """The file groups of a ``VectorCache`` (state declared here for the type checker)."""

    cache_dir: Path
    fingerprint: dict[str, object]
    state: str
    dropped: list[str]
    bytes_written: int
    last_arrival: float | None
    churn: int
    _lock: threading.RLock
    _m: VectorMatrix
    _groups: dict[str, _Group]
    _failed: dict[str, tuple[int, ...]]

    # -- loading ---------------------------------------------------------------------------

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
            header, spans, bad_keys = read_keys(keys_path, npy_name)
            if any(header.get(k) != v for k, v in self.fingerprint.items()):
                # Another model's (a synced machine with another embedder): not read again,
                # nor reported again, until its files change.
                self._failed[name] = sig
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
        good[bad_keys] = False
        complete = bool(good.all())
        if not complete:
            kept = [sp for sp in spans if good[sp[1] : sp[1] + sp[2]].all()]
            self._drop(
                f"{npy_path.name}: {int((~good).sum())} of {len(good)} rows failed their block "
                f"checksum, are not finite or have a bad key line; {len(spans) - len(kept)} "
                "texts are treated as missing (re-embedded)"
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

    # -- writing ---------------------------------------------------------------------------

    def ensure_dir(self) -> None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        gitignore = self.cache_dir / ".gitignore"
        if not gitignore.exists():
            atomic_write(gitignore, b"*\n")

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
        held = self._groups.get(keys_name)
        if held is not None and not held.complete:
            # A torn copy of these very bytes (a crash, a sync tool): written again whole,
            # or the rows re-embedded for its torn part would be dropped with the merge
            # that wrote them, and embedded again at every start.
            self._m.ref(self._groups.pop(keys_name).hashes, -1)
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
