"""The index snapshot (ADR-0015): a restored engine equals a fresh scan, only changed files
are re-read, and anything torn, foreign or inconsistent is ignored (a cold scan)."""

from __future__ import annotations

import json
import os
import struct
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import write
from wikimem_watch.config import load_config
from wikimem_watch.core import snapshot
from wikimem_watch.core.engine import Engine
from wikimem_watch.core.snapshot import MAGIC, read_snapshot, save_snapshot, scan_with_snapshot
from wikimem_watch.core.snapshot_columns import _json_list
from wikimem_watch.retrieval.query import run_query
from wikimem_watch.retrieval.request import QueryRequest

OLD = time.time() - 10_000  # older than any racy window


def _age(root: Path) -> None:
    """Give every note an old mtime, so a snapshot may trust its stat."""
    for path in root.rglob("*.md"):
        os.utime(path, (OLD, OLD))


def _vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    write(root, "diary/2026-01-01.md", "## 09:00\ncat tea [[wiki/a]]\n\n## 10:00\nmoon 火锅\n")
    write(root, "diary/2026-01-02.md", "## 09:00\nwhich tea today?\n\n## 09:05\ngreen tea\n")
    write(root, "wiki/a.md", "---\naliases: [Alpha]\ntags: [x]\n---\n## Item\ncat run #tag\n")
    write(root, "notes/b.md", "# Bee\nprose <!-- wikimem: owner=me | ts=2026-01-01T09:00 -->\n")
    (root / "notes" / "bad.md").write_bytes(b"caf\xe9 broken utf8")
    (root / "notes" / "bin.md").write_bytes(b"\x00\x01binary")
    _age(root)
    return root


def _engine(root: Path, **flags: object) -> Engine:
    return Engine(load_config(root, flags))


def _snapshotted(tmp_path: Path) -> tuple[Path, Engine, Path]:
    """The test vault, an engine that scanned it and saved its snapshot, and the snapshot."""
    root = _vault(tmp_path)
    engine = _engine(root)
    scan_with_snapshot(engine)
    path = engine.config.snapshot_path
    assert path is not None
    return root, engine, path


def _scores(engine: Engine, q: str) -> list[tuple[str, float, object]]:
    result = run_query(engine, QueryRequest.from_dict({"q": q, "k": 50, "parse_time": False}))
    hits = result["hits"]
    assert isinstance(hits, list)
    return [(str(h["id"]), round(float(h["score"]), 9), h["matched_terms"]) for h in hits]


def assert_same(got: Engine, want: Engine) -> None:
    assert got.digest() == want.digest()
    assert got.skipped == want.skipped
    assert got.warnings() == want.warnings()
    assert got.names == want.names
    assert got.day_counts() == want.day_counts()
    assert sorted(map(str, got.unresolved_links())) == sorted(map(str, want.unresolved_links()))
    assert {k: v.text_hash for k, v in got.files.items()} == {
        k: v.text_hash for k, v in want.files.items()
    }
    for q in ("cat", "火锅 moon", "prose alpha", "broken", "tea"):
        assert _scores(got, q) == _scores(want, q)
    assert _asks(got) == _asks(want)


def _asks(engine: Engine) -> dict[str, bool]:
    """Entry id → "ends with a question" (ADR-0009 §10), which a snapshot must keep."""
    slots = [s for record in engine.files.values() for s in record.slots]
    return {engine.slot_id(s): bool(engine.asks()[s]) for s in slots}


def test_a_restored_engine_equals_a_fresh_scan_and_rereads_nothing(tmp_path: Path) -> None:
    root, _, path = _snapshotted(tmp_path)
    assert path.is_file()
    assert root not in path.parents  # per machine, outside the vault by default
    again = _engine(root)
    stats = scan_with_snapshot(again)
    # Only the skipped (binary) note is read again: it is not in the snapshot.
    assert stats.changed == [] and stats.skipped == ["notes/bin.md"]
    fresh = _engine(root)
    fresh.scan()
    assert_same(again, fresh)


def test_changed_files_are_reread_and_the_rest_is_trusted(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    scan_with_snapshot(_engine(root))
    write(root, "wiki/a.md", "## Item\ndog walk\n")  # an edit: new mtime
    (root / "notes" / "b.md").unlink()
    write(root, "wiki/new.md", "## New\nfresh tea\n")
    engine = _engine(root)
    stats = scan_with_snapshot(engine)
    assert sorted(stats.changed) == ["wiki/a.md", "wiki/new.md"]
    assert stats.removed == ["notes/b.md"]
    fresh = _engine(root)
    fresh.scan()
    assert_same(engine, fresh)


def test_a_racy_file_is_hashed_not_trusted(tmp_path: Path) -> None:
    """Written within the mtime tick of its read: same stat, new bytes."""
    root = _vault(tmp_path)
    engine = _engine(root)
    path = root / "wiki" / "a.md"
    os.utime(path, None)  # now: racy when read
    scan_with_snapshot(engine)
    assert engine.files["wiki/a.md"].stat is not None
    assert engine.files["wiki/a.md"].stat[2]  # recorded as racy
    st = path.stat()
    path.write_text(path.read_text().replace("cat run", "dog run"))  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime
    again = _engine(root)
    stats = scan_with_snapshot(again)
    assert stats.changed == ["wiki/a.md"]
    assert [hit[0] for hit in _scores(again, "dog")] == ["wiki/a.md#Item"]
    assert "wiki/a.md#Item" not in [hit[0] for hit in _scores(again, "cat")]


def _sections(path: Path) -> tuple[dict[str, object], dict[str, bytes]]:
    data = path.read_bytes()
    (hlen, _) = struct.unpack("<QI", data[-len(MAGIC) - 12 : -len(MAGIC)])
    header = json.loads(data[-len(MAGIC) - 12 - hlen : -len(MAGIC) - 12])
    blobs = {s["name"]: data[s["offset"] : s["offset"] + s["length"]] for s in header["sections"]}
    return header, blobs


def _rewrite(path: Path, header: dict[str, object], blobs: dict[str, bytes]) -> None:
    """Write the sections back with valid CRCs: only the content checks can catch a change."""
    out = bytearray(MAGIC)
    table = []
    for name, blob in blobs.items():
        table.append(
            {"name": name, "offset": len(out), "length": len(blob), "crc": zlib.crc32(blob)}
        )
        out += blob
    raw = json.dumps({**header, "sections": table}).encode()
    path.write_bytes(bytes(out) + raw + struct.pack("<QI", len(raw), zlib.crc32(raw)) + MAGIC)


def _mangle(path: Path, section: str, change: Callable[[bytes], bytes]) -> None:
    """Rewrite one section with a valid CRC."""
    header, blobs = _sections(path)
    blobs[section] = change(blobs[section])
    _rewrite(path, header, blobs)


def _json_edit(fn: Callable[[object], object]) -> Callable[[bytes], bytes]:
    return lambda blob: json.dumps(fn(json.loads(blob))).encode()


def _ints(fmt: str, values: list[int]) -> Callable[[bytes], bytes]:
    """Overwrite the first values of a little-endian array."""
    size = struct.calcsize(fmt)
    return lambda blob: struct.pack(f"<{len(values)}{fmt}", *values) + blob[size * len(values) :]


def _all(fmt: str, value: int) -> Callable[[bytes], bytes]:
    size = struct.calcsize(fmt)
    return lambda blob: struct.pack(f"<{len(blob) // size}{fmt}", *[value] * (len(blob) // size))


BAD = {
    "torn": None,
    "flipped byte": None,
    "flipped header byte": None,
    "path outside": ("files.paths", _json_edit(lambda f: ["../x.md", *f[1:]])),  # type: ignore[index]
    # Another spelling of a note on disk: read again at every start, and indexed twice.
    "path not canonical": (
        "files.paths",
        _json_edit(lambda f: [*f[:-1], f[-1].replace("/", "//", 1)]),  # type: ignore[index]
    ),
    "path from the root": ("files.paths", _json_edit(lambda f: [*f[:-1], "/" + f[-1]])),  # type: ignore[index]
    "repeated file": ("files.paths", _json_edit(lambda f: [f[0], f[0], *f[2:]])),  # type: ignore[index]
    "file stats torn": ("files.stat", lambda blob: blob[:-8]),
    "racy flag not a flag": ("files.racy", _all("B", 7)),
    "negative entry count": ("files.entries", _ints("i", [-1])),
    "warnings row out of range": ("files.extra", lambda blob: b'[[1000000, ["w"], null]]'),
    "symlink to itself": ("files.extra", _json_edit(lambda f: [[0, [], "SELF"]])),
    "line zero": ("e.line", _ints("i", [0])),
    "time out of range": ("e.minute", _ints("h", [1440])),
    "a wiki item with a time": ("e.minute", _all("h", 0)),
    "infinite recency time": ("e.epoch", lambda blob: struct.pack("<d", float("inf")) + blob[8:]),
    "hashes torn": ("e.hash", lambda blob: blob[:-1]),
    "foreign id": ("e.key", lambda blob: b"x" + blob[1:]),
    "repeated id": ("e.key", lambda blob: blob.replace(b"#10:00", b"#09:00")),
    "link flags out of range": ("e.links.flags", _all("B", 9)),
    "negative tag count": ("e.tags.count", _ints("i", [-1])),
    "missing link target": ("e.links.0.sizes", _ints("i", [-1])),
    "override out of range": (
        "e.overrides",
        lambda blob: b'{"ts": [[1000000, null]], "owner": [], "source": [], "meta": []}',
    ),
    "override not a string": (
        "e.overrides",
        lambda blob: b'{"ts": [[0, 5]], "owner": [], "source": [], "meta": []}',
    ),
    "deep json": ("files.paths", lambda blob: b"[" * 100_000 + b"]" * 100_000),
    "repeated term": ("terms", _json_edit(lambda t: [t[1], *t[1:]])),  # type: ignore[index]
    "slot out of range": ("post_slots", _ints("i", [10**6])),
    "zero tf": ("post_tfs.u8", _ints("B", [0])),
    "counts off": ("term_counts", _ints("i", [10**6])),
    "ragged": ("post_slots", lambda blob: blob[:-1]),
    "tfs short": ("post_tfs.u8", lambda blob: blob[:-1]),
    "short texts": ("e.text", lambda blob: blob[:-1]),
    "texts not utf-8": ("e.text", lambda blob: b"\xff" + blob[1:]),
}


def _cut_inside_a_character(path: Path) -> None:
    """Move one text boundary into the middle of 火 (3 UTF-8 bytes)."""
    header, blobs = _sections(path)
    sizes = list(struct.unpack(f"<{len(blobs['e.text.sizes']) // 4}i", blobs["e.text.sizes"]))
    inside = blobs["e.text"].index("火".encode()) + 1
    end = 0
    for row, size in enumerate(sizes):
        end += max(size, 0)
        if end > inside:
            sizes[row] -= end - inside
            sizes[row + 1] += end - inside
            break
    blobs["e.text.sizes"] = struct.pack(f"<{len(sizes)}i", *sizes)
    _rewrite(path, header, blobs)


def _extra_section(path: Path) -> None:
    header, blobs = _sections(path)
    _rewrite(path, header, {**blobs, "junk": b"x"})


def _tfs_as(path: Path, name: str, fmt: str, *, keep: bool = False) -> None:
    """The term frequencies as another section (``keep``: beside the one written)."""
    header, blobs = _sections(path)
    tfs = blobs["post_tfs.u8"] if "post_tfs.u8" in blobs else blobs.pop("post_tfs.u16")
    values = struct.unpack(f"<{len(tfs)}B", tfs) if "post_tfs.u8" in blobs else tfs
    if not keep:
        blobs.pop("post_tfs.u8", None)
    _rewrite(path, header, {**blobs, name: struct.pack(f"<{len(values)}{fmt}", *values)})


SPECIAL = {
    "texts cut inside a character": _cut_inside_a_character,
    "unknown section": _extra_section,
    "two tf sections": lambda path: _tfs_as(path, "post_tfs", "i", keep=True),
}


@pytest.mark.parametrize("how", sorted([*BAD, *SPECIAL]))
def test_a_torn_or_inconsistent_snapshot_is_ignored_never_trusted(tmp_path: Path, how: str) -> None:
    root, first, path = _snapshotted(tmp_path)
    if how == "torn":
        path.write_bytes(path.read_bytes()[:-40])
    elif how in ("flipped byte", "flipped header byte"):
        header, _ = _sections(path)
        text = next(s for s in header["sections"] if s["name"] == "e.text")  # type: ignore[attr-defined]
        data = bytearray(path.read_bytes())
        at = len(data) - len(MAGIC) - 20 if "header" in how else text["offset"] + 2
        data[at] ^= 0x55
        path.write_bytes(bytes(data))
    elif how in SPECIAL:
        SPECIAL[how](path)
    else:
        section, change = BAD[how]  # type: ignore[misc]
        if how == "symlink to itself":
            paths = json.loads(_sections(path)[1]["files.paths"])
            change = _json_edit(lambda f: [[0, [], paths[0]]])
        _mangle(path, section, change)
    engine = _engine(root)
    assert read_snapshot(path, engine) is None
    stats = scan_with_snapshot(engine)
    assert len(stats.changed) == len(first.files)  # a cold scan
    fresh = _engine(root)
    fresh.scan()
    assert_same(engine, fresh)


def test_a_snapshot_of_the_older_layout_is_named_as_such_not_as_torn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = _vault(tmp_path)
    engine = _engine(root)
    path = engine.config.snapshot_path
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    header = json.dumps({"format": 1, "sections": []}).encode()
    path.write_bytes(MAGIC + b"x" * 64 + header + struct.pack("<Q", len(header)) + MAGIC)
    assert read_snapshot(path, engine) is None
    assert "made by another version (an older layout)" in caplog.text
    path.write_bytes(MAGIC + b"x" * 64 + struct.pack("<QI", 2**40, 0) + MAGIC)
    assert read_snapshot(path, engine) is None
    assert "torn (no trailer)" in caplog.text


def test_the_mangling_helper_keeps_an_untouched_snapshot_valid(tmp_path: Path) -> None:
    """The control for the test above: a rewrite that changes nothing is still loaded."""
    root, _, path = _snapshotted(tmp_path)
    _mangle(path, "files.paths", lambda blob: blob)
    assert read_snapshot(path, _engine(root)) is not None


@pytest.mark.parametrize(
    "flags",
    [
        {"stem": False},
        {"stop_words": False},
        {"heading_weight": 5},
        {"question_context": False},
        {"exclude": "n*"},
    ],
)
def test_a_snapshot_made_under_other_index_settings_is_foreign(
    tmp_path: Path, flags: dict[str, object]
) -> None:
    root = _vault(tmp_path)
    scan_with_snapshot(_engine(root))
    other = _engine(root, **flags)
    path = other.config.snapshot_path
    assert path is not None and path.is_file()
    assert read_snapshot(path, other) is None


def test_a_snapshot_made_by_other_indexing_code_is_foreign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _vault(tmp_path)
    engine = _engine(root)
    scan_with_snapshot(engine)
    path = engine.config.snapshot_path
    assert path is not None and read_snapshot(path, _engine(root)) is not None
    monkeypatch.setattr(snapshot, "index_rules", lambda: "a parser changed since")
    assert read_snapshot(path, _engine(root)) is None


@pytest.mark.parametrize("library", ["markdown_it", "yaml"])
def test_a_snapshot_made_under_another_parser_library_version_is_foreign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, library: str
) -> None:
    """markdown-it-py and PyYAML decide what a note parses into (its headings, its front
    matter): after an upgrade, entries restored for unchanged notes would be the old
    parser's, for good, while a fresh scan gives the new one's."""
    import importlib.util

    root = _vault(tmp_path)
    engine = _engine(root)
    scan_with_snapshot(engine)
    path = engine.config.snapshot_path
    assert path is not None and read_snapshot(path, _engine(root)) is not None
    upgraded = tmp_path / "upgraded" / library / "__init__.py"
    upgraded.parent.mkdir(parents=True)
    upgraded.write_text('__version__ = "99.0.0"\n')
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        if name == library:
            return importlib.util.spec_from_file_location(name, upgraded)
        return real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert read_snapshot(path, _engine(root)) is None


def test_a_snapshot_of_another_vault_is_foreign(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    first = _engine(root)
    scan_with_snapshot(first)
    other_root = tmp_path / "other"
    other_root.mkdir()
    assert first.config.snapshot_path is not None
    assert read_snapshot(first.config.snapshot_path, _engine(other_root)) is None


def test_snapshot_off_writes_nothing(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    engine = _engine(root, snapshot=False)
    assert engine.config.snapshot_path is None
    scan_with_snapshot(engine)
    assert len(engine.files) == 5
    assert not list(Path(os.environ["XDG_CACHE_HOME"]).rglob("index.snapshot"))


def test_the_snapshot_goes_where_the_user_says(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    engine = _engine(root, snapshot_dir=str(tmp_path / "snaps"))
    scan_with_snapshot(engine)
    assert engine.config.snapshot_path is not None
    assert engine.config.snapshot_path.parent.parent == tmp_path / "snaps"
    assert engine.config.snapshot_path.is_file()


def test_the_loader_builds_entries_in_the_order_of_their_fields() -> None:
    """check_entries calls Entry(*row): a new or moved field must be added there too."""
    from dataclasses import fields

    from wikimem_watch.core.models import Entry

    assert [f.name for f in fields(Entry)] == (
        "id kind path heading line text hash date time ts owner source meta tags links title "
        "aliases"
    ).split()


def test_every_entry_field_survives_the_round_trip(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    first = _engine(root)
    scan_with_snapshot(first)
    again = _engine(root)
    scan_with_snapshot(again)
    assert again.entries == first.entries  # frozen dataclasses: every field compared
    assert any(e.meta for e in again.entries.values())
    assert any(e.links for e in again.entries.values())
    assert any(e.aliases for e in again.entries.values())


def test_a_one_shot_rewrites_the_snapshot_only_when_much_changed(tmp_path: Path) -> None:
    """A few stale files cost a few reads next time; a rewrite costs the whole index."""
    root, _, path = _snapshotted(tmp_path)
    before = path.stat().st_mtime_ns
    write(root, "wiki/a.md", "## Item\ndog walk\n")
    for _ in range(2):  # not rewritten: the edited file is re-read at each start
        engine = _engine(root)
        assert scan_with_snapshot(engine).changed == ["wiki/a.md"]
    assert path.stat().st_mtime_ns == before
    path.write_bytes(b"junk")  # unusable: the cold scan writes a new one
    scan_with_snapshot(_engine(root))
    assert read_snapshot(path, _engine(root)) is not None


def test_an_entry_whose_ts_is_not_its_metadata_ts_survives_the_round_trip(tmp_path: Path) -> None:
    """An invalid ts is None though the metadata comment holds it: stored as an exception."""
    root = _vault(tmp_path)
    write(root, "wiki/t.md", "## T\nbody <!-- wikimem: ts=yesterday | owner=a -->\n")
    _age(root)
    first = _engine(root)
    scan_with_snapshot(first)
    again = _engine(root)
    assert scan_with_snapshot(again).changed == []
    entry = again.entries["wiki/t.md#T"]
    assert entry.ts is None and entry.owner == "a" and ("ts", "yesterday") in entry.meta
    assert again.entries == first.entries


@pytest.mark.parametrize("mixing", [True, False])
@pytest.mark.parametrize("repeated", ["#09:00", "#a heading longer than eight bytes", "#火锅"])
def test_a_repeated_id_within_a_file_is_found_short_or_long(
    repeated: str, mixing: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Also with the file and length left out of the one-array fast check, so that every
    equal key ties there and the exact check decides."""
    import numpy as np

    from wikimem_watch.core import snapshot_check
    from wikimem_watch.core.snapshot_check import SnapshotInvalid, check_keys

    if not mixing:
        monkeypatch.setattr(snapshot_check, "_K_FILE", np.uint64(0))
        monkeypatch.setattr(snapshot_check, "_K_LEN", np.uint64(0))

    def check(keys: list[str], files: list[int]) -> None:
        raw = [k.encode() for k in keys]
        sizes = np.array([len(r) for r in raw], dtype=np.int32)
        check_keys(b"".join(raw), sizes, np.array(files, dtype=np.int64))

    others = ["", "#a heading longer than eight byteS", "#09:01", "~2"]
    check([repeated, *others, repeated], [0, 0, 0, 0, 0, 1])  # the same key in two files
    with pytest.raises(SnapshotInvalid):
        check([repeated, *others, repeated], [0, 0, 0, 0, 0, 0])


def test_postings_are_renumbered_to_file_order_and_sorted_within_each_term() -> None:
    """The writer maps slots to the file order; where that reverses a term's slots it sorts
    them again, a few postings at a time (chunks of whole terms)."""
    from unittest.mock import patch

    import numpy as np

    from wikimem_watch.core import snapshot_columns
    from wikimem_watch.core.bm25 import Bm25Index

    index = Bm25Index()
    index.add_many([["x", "z"], ["y"], ["x", "x"], ["z"]])  # slots 0..3
    index.remove(1, ["y"])  # dead: left out
    order = np.array([3, 2, 0], dtype=np.int64)  # file order: slot 3 first, then 2, then 0
    with patch.object(snapshot_columns, "POSTING_CHUNK", 1):
        parts = {
            name: b"".join([blob] if isinstance(blob, bytes) else list(blob))
            for name, blob in snapshot_columns._postings(index, order)
        }
    assert json.loads(parts["terms"]) == ["x", "z"]
    as_ints = lambda name: np.frombuffer(parts[name], "<i4").tolist()  # noqa: E731
    assert as_ints("term_counts") == [2, 2]
    assert as_ints("post_slots") == [1, 2, 0, 2]  # x: slots 2, 0 → 1, 2; z: 3, 0 → 0, 2
    assert "post_tfs" not in parts  # one byte holds each tf: the narrow section
    assert np.frombuffer(parts["post_tfs.u8"], "u1").tolist() == [2, 1, 1, 1]


@pytest.mark.parametrize("name, fmt", [("post_tfs", "i"), ("post_tfs.u16", "H")])
def test_term_frequencies_in_a_wider_section_load_the_same(
    tmp_path: Path, name: str, fmt: str
) -> None:
    # A snapshot written before tfs were narrowed ("post_tfs", int32), or by an index
    # holding a tf past 255 (uint16), loads as one written narrow does.
    root, first, path = _snapshotted(tmp_path)
    _tfs_as(path, name, fmt)
    assert name in _sections(path)[1] and "post_tfs.u8" not in _sections(path)[1]
    engine = _engine(root)
    assert read_snapshot(path, engine) is not None
    assert scan_with_snapshot(engine).changed == []
    assert_same(engine, first)


def test_a_tf_past_a_byte_is_written_wider_and_comes_back(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    write(root, "wiki/long.md", "## Tea\n" + "tea " * 300 + "\n")
    _age(root)
    engine = _engine(root)
    scan_with_snapshot(engine)
    path = engine.config.snapshot_path
    assert path is not None and "post_tfs.u16" in _sections(path)[1]
    again = _engine(root)
    assert scan_with_snapshot(again).changed == []
    assert_same(again, engine)
    assert again.index.max_tf() == 303  # 300 in the text, 3 for the heading (ADR-0009 §6)


def test_postings_written_a_few_at_a_time_load_the_same(tmp_path: Path) -> None:
    """The writer renumbers postings in chunks of whole terms (a million at a time); with
    chunks of three, slots reused out of order included, the snapshot still loads equal."""
    from unittest.mock import patch

    from wikimem_watch.core import bm25, snapshot_columns

    root = _vault(tmp_path)
    with patch.object(bm25, "COMPACT_MIN", 1):
        first = _engine(root)
        first.scan()
        write(root, "wiki/a.md", "## Item\ndog walk tea\n")  # frees slots, reused below
        first.apply(["wiki/a.md"])
        first.index.flush(force=True)
        write(root, "wiki/c.md", "## C\ncat tea moon\n")
        first.apply(["wiki/c.md"])
    path = first.config.snapshot_path
    assert path is not None
    with patch.object(snapshot_columns, "POSTING_CHUNK", 3):
        save_snapshot(first)
    again = _engine(root)
    assert scan_with_snapshot(again).changed == []
    assert_same(again, first)


def _fresh(root: Path) -> Engine:
    fresh = _engine(root)
    fresh.scan()
    return fresh


def test_a_note_renamed_over_another_of_the_same_size_and_mtime_is_reread(
    tmp_path: Path,
) -> None:
    """(mtime, size) cannot tell them apart; the inode and ctime can (a checkout, a sync
    tool, or ``cp -p`` while the daemon was down)."""
    root = _vault(tmp_path)
    write(root, "diary/2026-01-03.md", "## 09:00\nmood: good 1\n")
    write(root, "diary/2026-01-04.md", "## 09:00\nmood: good 2\n")
    _age(root)
    scan_with_snapshot(_engine(root))
    os.rename(root / "diary" / "2026-01-04.md", root / "diary" / "2026-01-03.md")
    engine = _engine(root)
    stats = scan_with_snapshot(engine)
    assert "diary/2026-01-03.md" in stats.changed
    assert_same(engine, _fresh(root))


def test_a_chmod_with_mtime_and_size_unchanged_is_looked_at_again(tmp_path: Path) -> None:
    """A note made unreadable (or readable again) keeps its mtime and size: its ctime says
    it changed, so a start reads it and skips it as a fresh scan would."""
    root, _, path = _snapshotted(tmp_path)
    note = root / "wiki" / "a.md"
    os.chmod(note, 0o000)
    try:
        engine = _engine(root)
        stale = snapshot.restore_engine(engine, path, snapshot.disk_stats(root, [
            str(p.relative_to(root)) for p in root.rglob("*.md")
        ]))  # fmt: skip
        assert stale is not None and "wiki/a.md" in stale
    finally:
        os.chmod(note, 0o644)


def test_a_folder_replaced_by_a_symlink_to_another_is_not_indexed_twice(tmp_path: Path) -> None:
    root, _, _ = _snapshotted(tmp_path)
    os.rename(root / "notes", root / "notes3")
    (root / "notes").symlink_to("notes3", target_is_directory=True)
    engine = _engine(root)
    scan_with_snapshot(engine)
    assert not any(rel.startswith("notes/") for rel in engine.files)
    assert_same(engine, _fresh(root))


def test_a_note_that_turns_unreadable_is_a_change_a_snapshot_records(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    engine = _engine(root)
    engine.scan()
    before = engine.generation
    (root / "wiki" / "a.md").write_bytes(b"\x00 now binary")
    engine.apply(["wiki/a.md"])
    assert "wiki/a.md" in engine.skipped and engine.generation > before


def test_temp_files_a_killed_snapshot_write_left_are_removed(tmp_path: Path) -> None:
    root, engine, path = _snapshotted(tmp_path)
    old, young = (path.parent / f".{path.name}.{tag}.tmp" for tag in ("old", "young"))
    for tmp in (old, young):
        tmp.write_bytes(b"half a snapshot")
    os.utime(old, (OLD, OLD))
    save_snapshot(engine)
    assert not old.exists() and young.exists()  # a young one may be a write in progress


def test_a_note_symlinked_to_a_file_that_is_no_note_keeps_the_snapshot_usable(
    tmp_path: Path,
) -> None:
    """Its target (a ``.txt``, a file in ``.obsidian/``) is a file of the vault all the same:
    the snapshot was refused for it, and every start scanned cold."""
    root = _vault(tmp_path)
    write(root, "plain.txt", "## t\nplain text\n")
    (root / "link.md").symlink_to("plain.txt")
    _age(root)
    scan_with_snapshot(_engine(root))
    engine = _engine(root)
    stats = scan_with_snapshot(engine)
    assert stats.changed == [] and engine.files["link.md"].target == "plain.txt"
    assert_same(engine, _fresh(root))


@pytest.mark.parametrize(
    ("target", "ok"),
    [("plain.txt", True), (".obsidian/x.md", True), ("wiki/a.md", True), ("../x.md", False),
     ("/etc/passwd", False), ("a//b.md", False), ("", False), ("a\x00.md", False)],
)  # fmt: skip
def test_a_recorded_symlink_target_is_any_file_of_the_vault_never_one_out_of_it(
    target: str, ok: bool
) -> None:
    from wikimem_watch.core.snapshot_check import _vault_path

    assert _vault_path(target) is ok


def test_a_vault_whose_cache_dir_is_suspect_gets_no_snapshot_in_process_either(
    tmp_path: Path,
) -> None:
    """The daemon neither loads nor writes a snapshot for a vault whose ``.wikimem`` is a
    symlink (ADR-0011, ADR-0015); a one-shot ``query --in-process`` did both."""
    root = _vault(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (root / ".wikimem").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    engine = _engine(root)
    path = engine.config.snapshot_path
    assert path is not None
    scan_with_snapshot(engine)
    assert not path.exists()
    scan_with_snapshot(_engine(root, cache_dir=str(tmp_path / "elsewhere")))  # the user's: fine
    assert path.exists()
    again = _engine(root)
    assert scan_with_snapshot(again).changed  # read cold: the snapshot is not loaded
    assert_same(again, _fresh(root))


@pytest.mark.parametrize("chunk", [1, 2, 7, 1 << 15])
def test_the_terms_are_written_in_pieces_as_one_json_list(chunk: int) -> None:
    """The terms section is streamed (its JSON whole, and its bytes, were ~8 MB at 100k)."""
    for terms in ([], ["a"], ["a", "中文", '"q', "\\", "é"], [str(n) for n in range(100)]):
        written = b"".join(_json_list(terms, chunk))
        assert written == json.dumps(terms).encode() and json.loads(written) == terms


def test_a_day_of_two_files_at_one_time_loads_in_a_fresh_scans_order(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    for folder in ("diary/a", "diary/b"):
        write(root, f"{folder}/2026-01-01.md", f"## 09:00\nfrom {folder}\n")
    engine = _engine(root)
    engine.scan()
    write(root, "diary/a/2026-01-01.md", "## 09:00\nfrom a, edited\n")
    engine.apply(["diary/a/2026-01-01.md"])  # the snapshot lists its files b, then a
    _age(root)
    engine.apply(["diary/a/2026-01-01.md", "diary/b/2026-01-01.md"])  # stats no longer racy
    save_snapshot(engine)
    restored = _engine(root)
    assert not scan_with_snapshot(restored, save=False).changed  # all of it from the snapshot
    fresh = _engine(root)
    fresh.scan()
    ids = [e.id for e in restored.entries_on("2026-01-01")]
    assert ids == [e.id for e in fresh.entries_on("2026-01-01")]
    assert ids == ["diary/a/2026-01-01.md#09:00", "diary/b/2026-01-01.md#09:00"]


def test_a_restored_digest_covers_tags_titles_and_aliases_as_a_fresh_scan_does(
    tmp_path: Path,
) -> None:
    """The digest ``check`` compares covers a note's front-matter tags, title and aliases;
    read again from a snapshot's columns it equals a fresh scan's, file by file."""
    root, saved, _ = _snapshotted(tmp_path)
    again = _engine(root)
    scan_with_snapshot(again)
    fresh = _engine(root)
    fresh.scan()
    assert again.file_digests() == fresh.file_digests() == saved.file_digests()
    assert again.digest() == fresh.digest()
    a = fresh.files["wiki/a.md"]
    fresh.store.aliases[next(iter(a.slots))] = ("Beta",)  # an index that kept an old alias
    fresh._digest ^= a.digest
    fresh._digest_pending.add("wiki/a.md")
    assert fresh.digest() != again.digest()
