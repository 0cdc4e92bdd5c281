"""The engine's state as snapshot sections, and back (ADR-0015, ADR-0018).

Sections are the store's own columns in file order — so a file's entries are the slots
``start .. start + n`` of the restored engine — and raw little-endian arrays, each checked
by :mod:`.snapshot_check` before use. Per file: path, stat, text hash, entry count, title
and aliases (every entry of a note shares them), warnings and symlink target (sparse).
Per entry: line, time, recency time, content hash, and the packed columns key (the id after
the path), heading, text, ts, owner, source, tags, meta and links. Then the postings,
renumbered to the file order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from itertools import chain, repeat

import numpy as np
import numpy.typing as npt

from ..config import Config
from .bm25 import Bm25Index
from .bulk import narrow_type
from .columns import I64, ListColumn, StrColumn
from .engine import Engine, FileRecord
from .parse import diary_date
from .snapshot_check import (
    SnapshotInvalid,
    array_of,
    check_counts,
    check_file_extra,
    check_keys,
    check_overrides,
    check_paths,
    check_postings,
    check_range,
    check_strings,
    check_terms,
    check_text_hash,
    json_of,
)
from .store import EntryStore
from .vector_keys import KEY_BYTES

Payload = bytes | Iterable[bytes]
STRINGS = {"key": False, "heading": False, "text": False, "meta": True}
LISTS = {"tags": (1, False), "links": (3, True)}
_OPTIONAL_FIELDS = {("links", 1), ("links", 2)}  # a link's heading and alias may be None
# The term frequencies are written as the narrowest of these that holds them all (one byte,
# almost always); a snapshot holds one of the three sections.
TF_SECTIONS = {np.uint8: ("post_tfs.u8", "u1"), np.uint16: ("post_tfs.u16", "<u2")}
TF_WIDE = ("post_tfs", "<i4")
POSTING_CHUNK = 1 << 16  # postings renumbered at a time when writing (arrays of ~0.5 MB)


@dataclass(slots=True)
class Loaded:
    """A loaded, checked snapshot: what :meth:`Engine.restore` takes."""

    files: dict[str, FileRecord]
    store: EntryStore
    index: Bm25Index
    entries: int
    vector_keys: npt.NDArray[np.uint8] | None = None  # saved by an engine with an embedder


# ----------------------------------------------------------------------------- writing


def _packed(values: list[str | None]) -> tuple[bytes, bytes]:
    raws = [None if v is None else v.encode("utf-8", "surrogatepass") for v in values]
    sizes = np.array([-1 if r is None else len(r) for r in raws], dtype="<i4")
    return b"".join(r for r in raws if r), sizes.tobytes()


def engine_sections(engine: Engine) -> Iterator[tuple[str, Payload]]:
    """(name, bytes or chunks of bytes) of each section, entries in the order of ``files``."""
    store = engine.store
    records = list(engine.files.values())
    order = np.fromiter(chain.from_iterable(r.slots for r in records), np.int64)
    yield "files.paths", json.dumps(list(engine.files)).encode()
    stats = [r.stat if r.stat is not None else (-1, -1, True, -1, -1) for r in records]
    stat_keys = [(s[0], s[1], s[3], s[4]) for s in stats]  # (mtime_ns, size, inode, ctime_ns)
    yield "files.stat", np.array(stat_keys, dtype="<i8").reshape(-1, 4).tobytes()
    yield "files.racy", np.array([s[2] for s in stats], dtype=np.uint8).tobytes()
    yield "files.hash", b"".join(bytes.fromhex(r.text_hash) for r in records)
    yield "files.entries", np.array([len(r.slots) for r in records], dtype="<i4").tobytes()
    extra = [
        [n, list(r.warnings), r.target]
        for n, r in enumerate(records)
        if r.warnings or r.target is not None
    ]
    yield "files.extra", json.dumps(extra).encode()
    titles: list[str | None] = []
    aliases: list[tuple[str, ...]] = []
    for rel, r in engine.files.items():
        first = r.slots[0] if r.slots else None
        titles.append(None if first is None else store.title[first])
        aliases.append(() if first is None else store.aliases[first])
        if any(store.title[s] != titles[-1] or store.aliases[s] != aliases[-1] for s in r.slots):
            raise ValueError(f"{rel!r}: entries of one note with different titles or aliases")
    blob, sizes = _packed(titles)
    yield "files.title", blob
    yield "files.title.sizes", sizes
    yield "files.aliases.count", np.array([len(a) for a in aliases], dtype="<i4").tobytes()
    blob, sizes = _packed(list(chain.from_iterable(aliases)))
    yield "files.aliases.0", blob
    yield "files.aliases.0.sizes", sizes
    yield "e.line", store.line[order].astype("<i4").tobytes()
    yield "e.minute", store.minute[order].astype("<i2").tobytes()
    yield "e.asks", store.asks[order].astype(np.uint8).tobytes()
    yield "e.epoch", store.epoch[order].astype("<f8").tobytes()
    yield "e.hash", store.hash[order].tobytes()
    if engine.tracks_vectors:  # each entry's vector key (core/vector_keys.py)
        keys = engine.vector_keys
        if order.size and (order.max() >= keys.has.size or not keys.has[order].all()):
            raise ValueError("an entry without a vector key")
        yield "e.vkey", keys.raw[order].tobytes()
    # Columns are streamed in pieces and the postings in blocks: the snapshot of a 100k
    # vault is ~50 MB, and a writer that held each section whole raised a daemon's peak
    # RSS by about that much, 5 s after its first start, for good (freed heap is kept).
    for name in STRINGS:
        column: StrColumn = getattr(store, name)
        yield f"e.{name}", column.pieces(order)
        yield f"e.{name}.sizes", column.size[order].astype("<i4").tobytes()
    row_of = np.full(store.capacity, -1, dtype=np.int64)
    row_of[order] = np.arange(order.size)
    overrides = {
        name: sorted([int(row_of[slot]), value] for slot, value in values.items())
        for name, values in store.overrides.items()
    }
    yield "e.overrides", json.dumps(overrides).encode()
    for name in LISTS:
        lst: ListColumn = getattr(store, name)
        items = lst.item_rows(order)
        yield f"e.{name}.count", lst.count[order].astype("<i4").tobytes()
        for n, col in enumerate(lst.fields):
            yield f"e.{name}.{n}", col.pieces(items)
            yield f"e.{name}.{n}.sizes", col.size[items].astype("<i4").tobytes()
        if lst.flags is not None:
            yield f"e.{name}.flags", lst.flags[items].astype(np.uint8).tobytes()
    yield from _postings(engine.index, order)


def _json_list(items: list[str], chunk: int = 1 << 15) -> Iterator[bytes]:
    """``json.dumps(items).encode()`` in pieces: a 100k vault's terms are ~4 MB of JSON, and
    the whole text and its bytes at once were ~8 MB of a daemon's peak, for good."""
    yield b"["
    for i in range(0, len(items), chunk):
        yield (b", " if i else b"") + json.dumps(items[i : i + chunk])[1:-1].encode()
    yield b"]"


def _postings(index: Bm25Index, order: I64) -> Iterator[tuple[str, Payload]]:
    """Live postings, term-major, slots renumbered to the entry order, ascending per term;
    streamed in blocks of whole terms, ``POSTING_CHUNK`` postings or so (slots, then tfs: two
    passes; the tfs in the narrowest section that holds them)."""
    new_slot = np.full(index.capacity, -1, dtype=np.int32)
    new_slot[order] = np.arange(order.size, dtype=np.int32)
    tf_name, tf_type = TF_SECTIONS.get(narrow_type(index.max_tf()), TF_WIDE)
    terms: list[str] = []
    counts: list[np.ndarray] = []

    def chunks(part: int) -> Iterator[bytes]:
        for names, per_term, slots, tfs in index.posting_blocks(POSTING_CHUNK):
            mapped = new_slot[slots]
            term_of = np.repeat(np.arange(len(names), dtype=np.int32), per_term)
            live = mapped >= 0
            mapped, tfs, term_of = mapped[live], tfs[live], term_of[live]
            if mapped.size > 1:
                rising = (np.diff(mapped) > 0) | (np.diff(term_of) != 0)
                if not rising.all():  # slots reused out of order: sort within each term
                    by = np.lexsort((mapped, term_of))
                    mapped, tfs, term_of = mapped[by], tfs[by], term_of[by]
            if part == 0:
                kept = np.bincount(term_of, minlength=len(names))
                terms.extend(t for t, k in zip(names, kept.tolist(), strict=True) if k)
                counts.append(kept[kept > 0].astype("<i4"))
            yield (mapped.astype("<i4") if part == 0 else tfs.astype(tf_type)).tobytes()

    yield "post_slots", chunks(0)
    yield tf_name, chunks(1)
    yield "terms", _json_list(terms)
    yield "term_counts", np.concatenate(counts or [np.zeros(0, "<i4")]).astype("<i4").tobytes()


# ----------------------------------------------------------------------------- reading


def load_sections(
    section: Callable[[str], bytes], names: set[str], is_note: Callable[[str], bool], config: Config
) -> Loaded:
    """Check every section and build the file table, the entry store and the index."""
    paths = check_paths(json_of(section("files.paths"), "file paths"), is_note)
    n_files = len(paths)
    stat = array_of(section("files.stat"), "<i8", n_files, "file stats", 4)
    racy = array_of(section("files.racy"), "u1", n_files, "file stats")
    check_range(racy, 0, 1, "file racy flags")
    text_hashes = check_text_hash(section("files.hash"), n_files)
    counts = array_of(section("files.entries"), "<i4", n_files, "file entry counts")
    n = check_counts(counts, "file entry counts")
    extra = check_file_extra(json_of(section("files.extra"), "file warnings"), paths)
    titles = _strings(section, "files.title", n_files, optional=True)
    aliases = _list(section, "files.aliases", n_files, 1, False)

    store = EntryStore()
    store.line = array_of(section("e.line"), "<i4", n, "entry lines").astype(np.int32)
    check_range(store.line, 1, 2**31 - 1, "entry lines")
    store.minute = array_of(section("e.minute"), "<i2", n, "entry times").astype(np.int16)
    check_range(store.minute, -1, 1439, "entry times")
    asks = array_of(section("e.asks"), "u1", n, "question flags")
    check_range(asks, 0, 1, "question flags")
    store.asks = asks.astype(bool)
    store.epoch = array_of(section("e.epoch"), "<f8", n, "entry times").astype(np.float64)
    if np.isinf(store.epoch).any():
        raise SnapshotInvalid("entry times: an infinite value")
    store.hash = array_of(section("e.hash"), "u1", n, "entry hashes", 16).astype(np.uint8)
    for name, optional in STRINGS.items():
        setattr(store, name, _strings(section, f"e.{name}", n, optional=optional))
    for name, (fields, flags) in LISTS.items():
        setattr(store, name, _list(section, f"e.{name}", n, fields, flags, optional=name))
    store.overrides = check_overrides(json_of(section("e.overrides"), "entry overrides"), n)
    file_of = np.repeat(np.arange(n_files, dtype=np.int64), counts)
    key_blob, key_sizes = store.key.gather(np.arange(n, dtype=np.int64))
    check_keys(key_blob, key_sizes, file_of)

    # Per file: the date its path names (diary) and the objects its entries share.
    days = [diary_date(p) for p in paths]
    ordinals = np.array([date.fromisoformat(d).toordinal() if d else 0 for d in days], np.int32)
    store.day = np.repeat(ordinals, counts)
    store.wiki = store.day == 0
    if (store.minute[store.wiki] != -1).any():
        raise SnapshotInvalid("a wiki item has a diary time")
    if store.asks[store.wiki].any():
        raise SnapshotInvalid("a wiki item has a question flag")
    store.prev = np.full(n, -1, dtype=np.int32)
    store.next = np.full(n, -1, dtype=np.int32)
    per_file = counts.tolist()
    store.path = list(chain.from_iterable(map(repeat, paths, per_file)))
    file_titles = titles.values(n_files)
    store.title = list(chain.from_iterable(map(repeat, file_titles, per_file)))
    alias_tuples: list[tuple[str, ...]] = [()] * n_files
    for f in np.flatnonzero(aliases.count[:n_files]).tolist():
        alias_tuples[f] = tuple(str(a) for (a,) in aliases.get(f))
    store.aliases = list(chain.from_iterable(map(repeat, alias_tuples, per_file)))

    files: dict[str, FileRecord] = {}
    start = 0
    # As Python ints in one step each (a numpy scalar per field costs ~2 µs: 25 ms at 100k).
    stat_rows, racy_flags = stat.tolist(), racy.tolist()
    for row, rel in enumerate(paths):
        mtime, size, inode, ctime = stat_rows[row]
        warnings, target = extra.get(row, ((), None))
        record_stat = (
            None if mtime < 0 or size < 0 else (mtime, size, bool(racy_flags[row]), inode, ctime)
        )
        files[rel] = FileRecord(
            text_hashes[row], range(start, start + per_file[row]), warnings, target, record_stat
        )
        start += per_file[row]

    terms = check_terms(json_of(section("terms"), "terms"))
    term_counts = array_of(section("term_counts"), "<i4", len(terms), "term counts")
    post_slots = _int32s(section("post_slots"))
    tf_name, tf_type = next((t for t in TF_SECTIONS.values() if t[0] in names), TF_WIDE)
    post_tfs = _ints(section(tf_name), tf_type)
    check_postings(len(terms), n, term_counts, post_slots, post_tfs)
    index = Bm25Index.from_postings(
        n, terms, term_counts, post_slots, post_tfs, k1=config.k1, b=config.b
    )
    vector_keys = None
    if "e.vkey" in names:
        vector_keys = array_of(section("e.vkey"), "u1", n, "vector keys", KEY_BYTES)
        names = names - {"e.vkey"}
    if names != set(_expected_names(tf_name)):
        raise SnapshotInvalid("unknown or missing sections")
    return Loaded(files, store, index, n, vector_keys)


def _int32s(blob: bytes) -> np.ndarray:
    return _ints(blob, "<i4").astype(np.int32, copy=False)


def _ints(blob: bytes, dtype: str) -> np.ndarray:
    """A section of little-endian integers of ``dtype``, without a copy."""
    if len(blob) % np.dtype(dtype).itemsize:
        raise SnapshotInvalid(f"a {dtype} section has a ragged length")
    return np.frombuffer(blob, dtype=dtype)


def _strings(section: Callable[[str], bytes], name: str, rows: int, *, optional: bool) -> StrColumn:
    blob = section(name)
    sizes = array_of(section(f"{name}.sizes"), "<i4", rows, name).astype(np.int32)
    check_strings(blob, sizes, optional=optional, what=name)
    return StrColumn.packed(blob, sizes)


def _list(
    section: Callable[[str], bytes],
    name: str,
    rows: int,
    fields: int,
    flags: bool,
    optional: str = "",
) -> ListColumn:
    counts = array_of(section(f"{name}.count"), "<i4", rows, name).astype(np.int32)
    items = check_counts(counts, name)
    cols = [
        _strings(section, f"{name}.{f}", items, optional=(optional, f) in _OPTIONAL_FIELDS)
        for f in range(fields)
    ]
    flag_bytes = None
    if flags:
        flag_bytes = array_of(section(f"{name}.flags"), "u1", items, name).astype(np.uint8)
        check_range(flag_bytes, 0, 3, f"{name} flags")
    return ListColumn.packed(counts, cols, flag_bytes)


def _expected_names(tf_name: str = TF_WIDE[0]) -> list[str]:
    names = ["files.paths", "files.stat", "files.racy", "files.hash", "files.entries"]
    names += ["files.extra", "files.title", "files.title.sizes", "files.aliases.count"]
    names += ["files.aliases.0", "files.aliases.0.sizes", "e.line", "e.minute", "e.epoch"]
    names += ["e.asks"]
    names += ["e.hash", "e.overrides", "post_slots", tf_name, "terms", "term_counts"]
    for name in STRINGS:
        names += [f"e.{name}", f"e.{name}.sizes"]
    for name, (fields, flags) in LISTS.items():
        names += [
            f"e.{name}.count",
            *(f"e.{name}.{f}{s}" for f in range(fields) for s in ("", ".sizes")),
        ]
        names += [f"e.{name}.flags"] if flags else []
    return names
