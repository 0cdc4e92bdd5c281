"""The index snapshot: a deletable derived cache of a whole engine, so a start over an
unchanged vault re-reads nothing (ADR-0015).

One file, written atomically: ``MAGIC``, then sections (JSON or little-endian int32
arrays), then a JSON header naming each section's offset, length and CRC-32, then the
header's length and ``MAGIC`` again. It holds every file's stat, text hash, warnings and
entries, and the postings (term ids and counts, term-major). It is parsed defensively
(never pickle): every field and array is checked by :mod:`.snapshot_check`, and anything
torn, foreign (another vault, format, version or index setting) or inconsistent means
"no snapshot" and a cold scan — never a crash, never a wrong answer. Corpus statistics are
recomputed from the postings, never read.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import struct
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from .. import __version__
from ..atomic import atomic_file
from ..config import Config
from .bm25 import Bm25Index
from .engine import ApplyStats, Engine, FileRecord
from .models import Entry
from .snapshot_check import (
    SnapshotInvalid,
    check_entries,
    check_files,
    check_header,
    check_postings,
    check_terms,
)
from .vault import iter_notes

log = logging.getLogger(__name__)

MAGIC = b"WIKIMEM-WATCH-SNAPSHOT\n"
FORMAT = 1
REWRITE_MIN_FILES = 256  # a one-shot rewrites the snapshot when more files than this changed
CHUNK_ENTRIES = 16_384  # entries per JSON section: bounds the transient copy while loading
_TRAILER = struct.Struct("<Q")
_COLUMNS = (
    "id kind heading line text hash date time ts owner source meta tags links title aliases"
).split()


def settings_of(config: Config, engine: Engine) -> dict[str, object]:
    """Everything that changes what is indexed: a snapshot made under others is foreign."""
    return {
        "format": FORMAT,
        "version": __version__,
        "vault": str(config.vault),
        "stop_words": config.stop_words,
        "stem": config.stem,
        "jieba": engine.tokenizer.segmenter is not None,
        "heading_weight": config.heading_weight,
        "question_context": config.question_context,
        "include": list(config.include or ("*",)),
        "exclude": list(config.exclude),
        "follow_external_symlinks": config.follow_external_symlinks,
    }


# ----------------------------------------------------------------------------- writing


def write_snapshot(engine: Engine, path: Path) -> int:
    """Write the engine's index to ``path`` atomically; returns the bytes written.

    Holds ``apply_lock`` only (no applier runs, queries go on): the engine is consistent.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with atomic_file(path) as fh, engine.apply_lock:
        sections: list[dict[str, object]] = []
        fh.write(MAGIC)
        for name, blob in _sections(engine):
            sections.append(
                {
                    "name": name,
                    "offset": fh.tell(),
                    "length": len(blob),
                    "crc": zlib.crc32(blob),
                }
            )
            fh.write(blob)
        header = {
            "settings": settings_of(engine.config, engine),
            "written_at": time.time(),
            "counts": {
                "files": len(engine.files),
                "entries": len(engine.entries),
            },
            "chunk_entries": CHUNK_ENTRIES,
            "sections": sections,
        }
        raw = json.dumps(header).encode()
        fh.write(raw)
        fh.write(_TRAILER.pack(len(raw)))
        fh.write(MAGIC)
        size = fh.tell()
    return size


def _sections(engine: Engine) -> Iterator[tuple[str, bytes]]:
    """(name, bytes) of each section, in file order, entries in the order of ``files``."""
    files = []
    order: list[str] = []
    for rel, rec in engine.files.items():
        mtime, size, racy = rec.stat if rec.stat is not None else (-1, -1, True)
        files.append([rel, mtime, size, racy, rec.text_hash, list(rec.warnings), rec.target])
        files[-1].append(len(rec.ids))
        order.extend(rec.ids)
    yield "files", json.dumps(files, ensure_ascii=False).encode()
    for n, start in enumerate(range(0, len(order), CHUNK_ENTRIES)):
        chunk = [engine.entries[i] for i in order[start : start + CHUNK_ENTRIES]]
        yield f"entries.{n}", json.dumps(_columns(chunk), ensure_ascii=False).encode()
        # The texts, the bulk of the file, as one UTF-8 run cut by the lengths in the
        # chunk's "text" column: slicing one decoded string beats parsing JSON strings.
        yield f"texts.{n}", "".join(e.text for e in chunk).encode(errors="surrogatepass")
    yield from _postings(engine, order)


def _columns(entries: list[Entry]) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {c: [] for c in _COLUMNS}
    for e in entries:
        for c in ("id", "kind", "heading", "line", "hash", "date", "time", "ts"):
            out[c].append(getattr(e, c))
        out["text"].append(len(e.text))
        out["owner"].append(e.owner)
        out["source"].append(e.source)
        out["title"].append(e.title)
    # Mostly-empty list fields are sparse ([[row, value], ...]): parsing 100k "[]" costs.
    for n, e in enumerate(entries):
        if e.meta:
            out["meta"].append([n, [x for kv in e.meta for x in kv]])  # flat k, v, k, v
        if e.tags:
            out["tags"].append([n, list(e.tags)])
        if e.links:
            links = [[k.target, k.heading, k.alias, k.embed, k.style] for k in e.links]
            out["links"].append([n, links])
        if e.aliases:
            out["aliases"].append([n, list(e.aliases)])
    return out


def _postings(engine: Engine, order: list[str]) -> Iterator[tuple[str, bytes]]:
    """Live postings, term-major, slots renumbered to the entry order, ascending per term."""
    index = engine.index
    new_slot = np.full(index.capacity, -1, dtype=np.int64)
    for n, key in enumerate(order):
        slot = index.slot(key)
        assert slot is not None
        new_slot[slot] = n
    terms: list[str] = []
    counts: list[int] = []
    slot_parts: list[np.ndarray] = []
    tf_parts: list[np.ndarray] = []
    for tid, term in enumerate(index._terms):
        if not term or index._df[tid] == 0:
            continue
        slots = new_slot[np.frombuffer(index._post_slot[tid], dtype=np.int32)]
        tfs = np.frombuffer(index._post_tf[tid], dtype=np.int32)
        live = slots >= 0
        slots, tfs = slots[live], tfs[live]
        by_slot = np.argsort(slots, kind="stable")
        terms.append(term)
        counts.append(int(slots.size))
        slot_parts.append(slots[by_slot].astype("<i4"))
        tf_parts.append(tfs[by_slot].astype("<i4"))
    yield "terms", json.dumps(terms, ensure_ascii=False).encode()
    yield "term_counts", np.asarray(counts, dtype="<i4").tobytes()
    yield "post_slots", np.concatenate(slot_parts or [np.empty(0, "<i4")]).tobytes()
    yield "post_tfs", np.concatenate(tf_parts or [np.empty(0, "<i4")]).tobytes()


# ----------------------------------------------------------------------------- reading


@dataclass(slots=True)
class Snapshot:
    """A loaded, checked snapshot: what :meth:`Engine.restore` takes."""

    files: dict[str, FileRecord]
    entries: list[Entry]
    index: Bm25Index


def read_snapshot(path: Path, engine: Engine) -> Snapshot | None:
    """The snapshot at ``path`` when it is whole, ours and consistent; else ``None`` (the
    reason is logged once, at INFO for a missing file and WARNING otherwise)."""
    try:
        with open(path, "rb") as fh:
            return _read(fh, engine)
    except FileNotFoundError:
        log.info("no index snapshot at %s: cold scan", path)
    except SnapshotInvalid as exc:
        log.warning("index snapshot %s ignored (%s): cold scan", path, exc)
    except (OSError, ValueError, MemoryError) as exc:
        log.warning("index snapshot %s ignored (%s): cold scan", path, exc)
    return None


def _read(fh: BinaryIO, engine: Engine) -> Snapshot:
    size = os.fstat(fh.fileno()).st_size
    tail = len(MAGIC) + _TRAILER.size
    if size < len(MAGIC) + tail or fh.read(len(MAGIC)) != MAGIC:
        raise SnapshotInvalid("not a snapshot, or torn")
    fh.seek(size - tail)
    raw_tail = fh.read(tail)
    (header_len,) = _TRAILER.unpack(raw_tail[: _TRAILER.size])
    if raw_tail[_TRAILER.size :] != MAGIC or header_len > size - len(MAGIC) - tail:
        raise SnapshotInvalid("torn (no trailer)")
    fh.seek(size - tail - header_len)
    header = _json(fh.read(header_len), "header")
    sections = check_header(header, settings_of(engine.config, engine), size - tail - header_len)

    def section(name: str) -> bytes:
        if name not in sections:
            raise SnapshotInvalid(f"section {name!r} is missing")
        offset, length, crc = sections[name]
        fh.seek(offset)
        blob = fh.read(length)
        if len(blob) != length or zlib.crc32(blob) != crc:
            raise SnapshotInvalid(f"section {name!r} is torn or corrupt")
        return blob

    assert isinstance(header, dict)
    counts = header["counts"]
    files = check_files(_json(section("files"), "files"), engine.note_filter.accepts)
    n_entries = sum(len(r.ids) for r in files.values())
    if counts != {"files": len(files), "entries": n_entries}:
        raise SnapshotInvalid("counts disagree with the file table")
    paths = [rel for rel, rec in files.items() for _ in rec.ids]
    entries: list[Entry] = []
    for n, start in enumerate(range(0, n_entries, CHUNK_ENTRIES)):
        part = paths[start : start + CHUNK_ENTRIES]
        columns = _json(section(f"entries.{n}"), "entries")
        texts = section(f"texts.{n}").decode(errors="surrogatepass")
        entries.extend(check_entries(columns, texts, part))
        del columns, texts
    if f"entries.{(n_entries + CHUNK_ENTRIES - 1) // CHUNK_ENTRIES}" in sections:
        raise SnapshotInvalid("more entry sections than entries")
    ids = [e.id for e in entries]
    start = 0
    for rec in files.values():
        rec.ids = tuple(ids[start : start + len(rec.ids)])
        start += len(rec.ids)
    terms = check_terms(_json(section("terms"), "terms"))
    term_counts = _int32s(section("term_counts"))
    post_slots = _int32s(section("post_slots"))
    post_tfs = _int32s(section("post_tfs"))
    check_postings(len(terms), n_entries, term_counts, post_slots, post_tfs)
    cfg = engine.config
    index = Bm25Index.from_postings(
        ids, terms, term_counts, post_slots, post_tfs, k1=cfg.k1, b=cfg.b
    )
    return Snapshot(files, entries, index)


def _json(blob: bytes, what: str) -> object:
    try:
        return json.loads(blob)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise SnapshotInvalid(f"{what}: not JSON ({exc})") from None


def _int32s(blob: bytes) -> np.ndarray:
    if len(blob) % 4:
        raise SnapshotInvalid("an int32 section has a ragged length")
    return np.frombuffer(blob, dtype="<i4").astype(np.int32, copy=False)


# ---------------------------------------------------------------------------- using it


def restore_engine(
    engine: Engine, path: Path, on_disk: Mapping[str, tuple[int, int]]
) -> list[str] | None:
    """Fill an empty engine from the snapshot at ``path``; returns the paths still to apply
    (new, gone, or whose (mtime_ns, size) in ``on_disk`` differs or was racy), or ``None``
    when there is no usable snapshot (the engine is untouched: scan it cold)."""
    with no_gc():
        snap = read_snapshot(path, engine)
        if snap is None:
            return None
        engine.restore(snap.files, snap.entries, snap.index)
    stale = []
    for rel, key in on_disk.items():
        rec = snap.files.get(rel)
        if rec is None or rec.stat is None or rec.stat[2] or rec.stat[:2] != key:
            stale.append(rel)
    stale.extend(rel for rel in snap.files if rel not in on_disk)
    log.info("index snapshot %s: %d files to re-read", path, len(stale))
    return stale


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic collector paused: a load allocates millions of objects and no cycles, and
    each collection would walk all of them (a third of the load time at 100k entries, a
    tenth of a cold scan)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def disk_stats(root: Path, rels: Iterable[str]) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of each note, through symlinks; one that cannot be had is left out
    (and so re-read, which reports why)."""
    out: dict[str, tuple[int, int]] = {}
    for rel in rels:
        try:
            st = os.stat(os.path.join(root, *rel.split("/")))
        except (OSError, ValueError):
            out[rel] = (-1, -1)  # matches no record: re-read, which says what is wrong
            continue
        out[rel] = (st.st_mtime_ns, st.st_size)
    return out


def scan_with_snapshot(engine: Engine, *, save: bool = True) -> ApplyStats:
    """``engine.scan()``, starting from the configured snapshot when it is usable, and
    (with ``save``) writing a new one when the scan changed anything. A snapshot that
    cannot be written costs a warning, never the scan."""
    path = engine.config.snapshot_path
    if path is None:
        return engine.scan()
    with engine.apply_lock:
        linked_dirs: dict[str, str] = {}
        on_disk = list(iter_notes(engine.root, engine.note_filter, linked_dirs))
        engine.linked_dirs = linked_dirs
        stale = restore_engine(engine, path, disk_stats(engine.root, on_disk))
        with no_gc():
            stats = engine.apply(on_disk if stale is None else stale)
        # A few stale files cost a few reads at the next start; rewriting the snapshot costs
        # ~1 s per 100k entries of a one-shot query's time. Rewrite when it pays.
        drift = len(stale) if stale is not None else 0
        if save and (stale is None or drift > max(REWRITE_MIN_FILES, len(on_disk) // 100)):
            save_snapshot(engine)
    return stats


def save_snapshot(engine: Engine) -> bool:
    """Write the engine's snapshot where the config says; False (and a warning) on failure."""
    path = engine.config.snapshot_path
    if path is None:
        return False
    started = time.perf_counter()
    try:
        size = write_snapshot(engine, path)
    except OSError as exc:
        log.warning("could not write the index snapshot %s: %s", path, exc.strerror or exc)
        return False
    took = time.perf_counter() - started
    log.info("index snapshot written: %s (%.1f MB, %.2fs)", path, size / 1e6, took)
    return True
