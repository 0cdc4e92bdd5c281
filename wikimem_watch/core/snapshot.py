"""The index snapshot: a deletable derived cache of a whole engine, so a start over an
unchanged vault re-reads nothing (ADR-0015).

One file, written atomically: ``MAGIC``, then sections, then a JSON header naming each
section's offset, length and CRC-32, then the header's length and ``MAGIC`` again. The
sections are the engine's own columns (ADR-0018): the file table, every entry field as a
little-endian array or a packed UTF-8 column (:mod:`.snapshot_columns`), and the postings
(term ids and counts, term-major). A load reads each section into one ``bytes`` object and
keeps it: no Python object is made per entry. It is parsed defensively (never pickle):
every array and column is checked by :mod:`.snapshot_check`, and anything torn, foreign
(another vault, format, version, tokenizer or index setting) or inconsistent means "no
snapshot" and a cold scan — never a crash. Corpus statistics are recomputed, never read.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import importlib.util
import json
import logging
import os
import struct
import sys
import time
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

import Stemmer

from .. import __version__
from ..atomic import atomic_file
from ..config import Config, cache_dir_problem
from .engine import ApplyStats, Engine
from .heap import release_free_heap
from .prepare import record_key, stat_key
from .snapshot_check import SnapshotInvalid, check_header, json_of
from .snapshot_columns import Loaded, engine_sections, load_sections
from .vault import iter_notes

log = logging.getLogger(__name__)

MAGIC = b"WIKIMEM-WATCH-SNAPSHOT\n"
FORMAT = 3  # 3: a file's stat holds its inode and ctime
REWRITE_MIN_FILES = 256  # a one-shot rewrites the snapshot when more files than this changed
_TRAILER = struct.Struct("<QI")  # the header's length and CRC-32


# The modules whose code decides what is indexed: what a file parses into and which terms
# an entry gets. Their bytes are part of a snapshot's settings, so a change to a rule (a
# new heading case, a tokenizer fix) makes older snapshots foreign without a version bump
# anyone has to remember.
# ``vectors/texts.py`` decides the text whose hash is an entry's vector key.
_RULE_MODULES = (
    "parse", "frontmatter", "headings", "inline", "prepare", "tokenize", "facts", "vault", "models",
    "../vectors/texts",
)  # fmt: skip


# The libraries that decide what a note parses into: markdown-it-py (headings of a note
# that could hide or fake one) and PyYAML (front matter: tags, aliases, date). Their
# ``__init__.py`` holds their version; it is read, not imported (~10-25 ms each, and a start
# from the snapshot parses no note). PyStemmer and jieba are settings of their own.
_RULE_LIBRARIES = ("markdown_it", "yaml")


def index_rules() -> str:
    """A digest of the code of ``_RULE_MODULES`` and of the ``_RULE_LIBRARIES``' versions
    (the package version when unreadable)."""
    digest = hashlib.blake2b(digest_size=8)
    for name in _RULE_MODULES:
        path = Path(__file__).parent / f"{name}.py"
        try:
            digest.update(path.read_bytes())
        except OSError:
            return __version__
    for library in _RULE_LIBRARIES:
        digest.update(library.encode() + b"\0" + _library_init(library))
    return digest.hexdigest()


def _library_init(name: str) -> bytes:
    """The bytes of package ``name``'s ``__init__.py``, found without importing it (empty
    when it is not installed or has no such file)."""
    try:
        spec = importlib.util.find_spec(name)
        origin = None if spec is None else spec.origin
        return b"" if origin is None else Path(origin).read_bytes()
    except (ImportError, ValueError, OSError):
        return b""


def settings_of(config: Config, engine: Engine) -> dict[str, object]:
    """Everything that changes what is indexed: a snapshot made under others is foreign.

    The tokenizer's libraries are in it too: removing an entry derives its terms again
    (ADR-0018), so they must be the terms it was indexed with.
    """
    jieba = sys.modules.get("jieba") if engine.tokenizer.segmenter is not None else None
    return {
        "format": FORMAT,
        "version": __version__,
        "rules": index_rules(),
        "vault": str(config.vault),
        "stop_words": config.stop_words,
        "stem": config.stem,
        "stemmer": Stemmer.version(),
        "unicode": unicodedata.unidata_version,  # NFKC and case folding of the tokenizer
        "jieba": None if jieba is None else str(getattr(jieba, "__version__", "?")),
        "heading_weight": config.heading_weight,
        "question_context": config.question_context,
        "include": list(config.include or ("*",)),
        "exclude": list(config.exclude),
        "follow_external_symlinks": config.follow_external_symlinks,
    }


# ----------------------------------------------------------------------------- writing


STALE_TEMP_S = 600  # a temp file of a snapshot write this old was left by a killed process


def _remove_stale_temps(path: Path) -> None:
    """Remove the temp files of snapshot writes that a killed process left beside ``path``
    (hundreds of MB each at a million entries). A young one may be another process's write
    in progress (a one-shot beside the daemon): it is left alone."""
    now = time.time()
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        with contextlib.suppress(OSError):
            if now - tmp.lstat().st_mtime > STALE_TEMP_S:
                tmp.unlink()


def write_snapshot(engine: Engine, path: Path) -> int:
    """Write the engine's index to ``path`` atomically; returns the bytes written.

    Holds ``apply_lock`` only (no applier runs, queries go on): the engine is consistent.
    """
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    _remove_stale_temps(path)
    with atomic_file(path) as fh, engine.apply_lock:
        sections: list[dict[str, object]] = []
        fh.write(MAGIC)
        for name, payload in engine_sections(engine):
            offset, crc = fh.tell(), 0
            for blob in [payload] if isinstance(payload, bytes) else payload:
                crc = zlib.crc32(blob, crc)
                fh.write(blob)
            sections.append(
                {"name": name, "offset": offset, "length": fh.tell() - offset, "crc": crc}
            )
        header = {
            "settings": settings_of(engine.config, engine),
            "written_at": time.time(),
            "counts": {"files": len(engine.files), "entries": len(engine.index)},
            "sections": sections,
        }
        raw = json.dumps(header).encode()
        fh.write(raw)
        fh.write(_TRAILER.pack(len(raw), zlib.crc32(raw)))
        fh.write(MAGIC)
        size = fh.tell()
    return size


# ----------------------------------------------------------------------------- reading


def read_snapshot(path: Path, engine: Engine, known: Iterable[str] = ()) -> Loaded | None:
    """The snapshot at ``path`` when it is whole, ours and consistent; else ``None`` (the
    reason is logged once, at INFO for a missing file and WARNING otherwise). ``known``:
    paths already found to be notes by the walk (their filter check is skipped)."""
    try:
        with open(path, "rb") as fh:
            return _read(fh, engine, set(known))
    except FileNotFoundError:
        log.info("no index snapshot at %s: cold scan", path)
    except SnapshotInvalid as exc:
        log.warning("index snapshot %s ignored (%s): cold scan", path, exc)
    except (OSError, ValueError, MemoryError) as exc:
        log.warning("index snapshot %s ignored (%s): cold scan", path, exc)
    return None


def _read(fh: BinaryIO, engine: Engine, known: set[str]) -> Loaded:
    size = os.fstat(fh.fileno()).st_size
    tail = len(MAGIC) + _TRAILER.size
    if size < len(MAGIC) + tail or fh.read(len(MAGIC)) != MAGIC:
        raise SnapshotInvalid("not a snapshot, or torn")
    fh.seek(size - tail)
    raw_tail = fh.read(tail)
    header_len, header_crc = _TRAILER.unpack(raw_tail[: _TRAILER.size])
    if raw_tail[_TRAILER.size :] != MAGIC:
        raise SnapshotInvalid("torn (no trailer)")
    if header_len > size - len(MAGIC) - tail:
        # Format 1 ended "<header length: 8 bytes> MAGIC"; read as format 2, that length is
        # nonsense, but read as format 1 it fits.
        (v1_len,) = struct.unpack("<Q", raw_tail[4:12])
        if v1_len <= size - 2 * len(MAGIC) - 8:
            raise SnapshotInvalid("made by another version (an older layout)")
        raise SnapshotInvalid("torn (no trailer)")
    fh.seek(size - tail - header_len)
    raw_header = fh.read(header_len)
    if zlib.crc32(raw_header) != header_crc:
        raise SnapshotInvalid("the header is torn or corrupt")
    header = json_of(raw_header, "header")
    table = check_header(header, settings_of(engine.config, engine), size - tail - header_len)

    def section(name: str) -> bytes:
        if name not in table:
            raise SnapshotInvalid(f"section {name!r} is missing")
        offset, length, crc = table[name]
        fh.seek(offset)
        blob = fh.read(length)
        if len(blob) != length or zlib.crc32(blob) != crc:
            raise SnapshotInvalid(f"section {name!r} is torn or corrupt")
        return blob

    assert isinstance(header, dict)
    accepts = engine.note_filter.accepts

    def is_note(rel: str) -> bool:
        return rel in known or accepts(rel)

    loaded = load_sections(section, set(table), is_note, engine.config)
    if header["counts"] != {"files": len(loaded.files), "entries": loaded.entries}:
        raise SnapshotInvalid("counts disagree with the file table")
    return loaded


# ---------------------------------------------------------------------------- using it


def restore_engine(
    engine: Engine, path: Path, on_disk: Mapping[str, tuple[int, int, int, int]]
) -> list[str] | None:
    """Fill an empty engine from the snapshot at ``path``; returns the paths still to apply
    (new, gone, or whose (mtime_ns, size) in ``on_disk`` differs or was racy), or ``None``
    when there is no usable snapshot (the engine is untouched: scan it cold)."""
    with no_gc():
        snap = read_snapshot(path, engine, on_disk)
        if snap is None:
            return None
        engine.restore(snap.files, snap.store, snap.index, snap.vector_keys)
    stale = []
    for rel, key in on_disk.items():
        rec = snap.files.get(rel)
        if rec is None or rec.stat is None or rec.stat[2] or record_key(rec.stat) != key:
            stale.append(rel)
    stale.extend(rel for rel in snap.files if rel not in on_disk)
    log.info("index snapshot %s: %d files to re-read", path, len(stale))
    return stale


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """The cyclic collector paused: a cold scan allocates millions of objects and no
    cycles, and each collection would walk all of them (a tenth of a cold scan)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def disk_stats(root: Path, rels: Iterable[str]) -> dict[str, tuple[int, int, int, int]]:
    """The ``stat_key`` of each note, through symlinks; one that cannot be had matches no
    record (and so is re-read, which reports why)."""
    out: dict[str, tuple[int, int, int, int]] = {}
    top = os.path.join(root, "")
    for rel in rels:
        try:
            st = os.stat(top + (rel if os.sep == "/" else rel.replace("/", os.sep)))
        except (OSError, ValueError):
            out[rel] = (-1, -1, -1, -1)
            continue
        out[rel] = stat_key(st)
    return out


# Applies files and tells the journal what changed; the flag is False for a cold scan,
# which has no earlier state to compare with (``scan_with_snapshot``'s ``told``).
ToldApply = Callable[[list[str], bool], ApplyStats]


def scan_with_snapshot(
    engine: Engine, *, save: bool = True, told: ToldApply | None = None
) -> ApplyStats:
    """``engine.scan()``, starting from the configured snapshot when it is usable, and
    (with ``save``) writing a new one when the scan changed anything. A snapshot that
    cannot be written costs a warning, never the scan. Under the daemon's rule (ADR-0015):
    none for a vault whose cache dir is a symlink or leads out of it (ADR-0011).

    The snapshot is also where the daemon's next start compares from to journal what
    changed while no daemon ran: a run that writes a new one applies through ``told``
    (given), or those changes would never be journaled."""
    path = engine.config.snapshot_path
    if path is None or cache_dir_problem(engine.config) is not None:
        return engine.scan()  # as the daemon: a vault whose cache dir is suspect gets none
    with engine.apply_lock:
        linked_dirs: dict[str, str] = {}
        on_disk = list(iter_notes(engine.root, engine.note_filter, linked_dirs))
        engine.linked_dirs = linked_dirs
        stale = restore_engine(engine, path, disk_stats(engine.root, on_disk))
        # A few stale files cost a few reads at the next start; rewriting the snapshot costs
        # ~1 s per 100k entries of a one-shot query's time. Rewrite when it pays.
        drift = len(stale) if stale is not None else 0
        rewrite = stale is None or drift > max(REWRITE_MIN_FILES, len(on_disk) // 100)
        saving = save and (rewrite or engine.vector_keys_missing)
        todo = on_disk if stale is None else stale
        with no_gc():
            if saving and told is not None:
                stats = told(todo, stale is not None)
            else:
                stats = engine.apply(todo)
        if saving:
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
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        log.warning("could not write the index snapshot %s: %s", path, reason)
        return False
    finally:
        release_free_heap()  # the sections' buffers: a daemon would keep them for good
    took = time.perf_counter() - started
    log.info("index snapshot written: %s (%.1f MB, %.2fs)", path, size / 1e6, took)
    return True
