"""Vector rows off the heap (rows.py, ADR-0021): a matrix kept in an unlinked scratch file
answers exactly as one in memory; loading streams the files; nothing maps a cache file."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wikimem_watch.vectors import files as files_module
from wikimem_watch.vectors import memory as memory_module
from wikimem_watch.vectors import rows as rows_module
from wikimem_watch.vectors.cache import VectorCache
from wikimem_watch.vectors.files import BLOCK_ROWS, npy_bytes, packed, write_group
from wikimem_watch.vectors.memory import VectorMatrix

DIM = 40
FINGERPRINT = {"model": "test-rows", "dim": DIM}


@pytest.fixture
def small_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Map every matrix, and make every pass over rows take many small steps."""
    monkeypatch.setattr(rows_module, "MAP_MIN_BYTES", 0)
    monkeypatch.setattr(memory_module, "SCAN_ROWS", 37)
    monkeypatch.setattr(files_module, "READ_BYTES", 5000)


def _rows(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mat = rng.standard_normal((n, DIM)).astype(np.float32) + rng.standard_normal(DIM) * 0.3
    return (mat / np.linalg.norm(mat, axis=1, keepdims=True)).astype(np.float32)


def _spans(n: int, prefix: str) -> list[tuple[str, int, int]]:
    """Every fourth hash has three chunks, the rest one; ``n`` rows in all."""
    sizes, total = [], 0
    while total < n:
        sizes.append(min(3 if len(sizes) % 4 == 0 else 1, n - total))
        total += sizes[-1]
    return packed((f"{prefix}{i:05d}", s) for i, s in enumerate(sizes))


def _pair(tmp_path: Path) -> tuple[VectorMatrix, VectorMatrix]:
    mapped = VectorMatrix(DIM, tmp_path)
    assert mapped.store.map_min_bytes == 0
    return mapped, VectorMatrix(DIM)


def _same_answers(a: VectorMatrix, b: VectorMatrix, seed: int) -> None:
    rng = np.random.default_rng(seed)
    hashes = list(b.hid)
    for q in _rows(4, seed + 100):
        few = [hashes[i] for i in rng.choice(len(hashes), 9, replace=False)] + ["absent"]
        many = hashes[: len(hashes) // 2]
        assert a.search(q, None, 15) == b.search(q, None, 15)
        assert a.search(q, few, 5) == b.search(q, few, 5)
        assert a.cosines(q, few) == b.cosines(q, few)  # sparse: the named rows only
        assert a.cosines(q, many) == b.cosines(q, many)  # dense: one product over all
    for names in (hashes[::3], hashes[::-5] + ["absent"]):
        (spans_a, mat_a), (spans_b, mat_b) = a.gather(names), b.gather(names)
        assert spans_a == spans_b
        assert mat_a.tobytes() == mat_b.tobytes()


@pytest.mark.usefixtures("small_passes")
@pytest.mark.parametrize("quantize_rows", [10**9, 0, 500])
def test_a_mapped_matrix_answers_bit_for_bit_as_one_in_memory(
    tmp_path: Path, quantize_rows: int
) -> None:
    mapped, heap = _pair(tmp_path)
    assert mapped.store.mapped is False  # nothing held yet
    for m in (mapped, heap):
        m.quantize_rows = quantize_rows
    for step, n in enumerate([300, 1, 250, 700]):  # growth, then appends after coding
        spans, mat = _spans(n, f"s{step}-"), _rows(n, step)
        spans += [(spans[0][0], 0, 1)] if step else []  # a hash given twice: skipped
        for m in (mapped, heap):
            m.append(spans, mat)
            m.ref([h for h, _, _ in spans[::2]], 1)
        assert mapped.store.mapped
        _same_answers(mapped, heap, step)
    assert mapped.n_rows == heap.n_rows and mapped.hashes == heap.hashes
    assert mapped.mat[: mapped.n_rows].tobytes() == heap.mat[: heap.n_rows].tobytes()
    assert mapped.refs.tolist() == heap.refs.tolist()
    live = list(heap.hid)[::2]
    assert mapped.live_rows_on_disk(live) == heap.live_rows_on_disk(live)


@pytest.mark.usefixtures("small_passes")
def test_the_codes_center_is_numpys_mean_bit_for_bit(tmp_path: Path) -> None:
    m = VectorMatrix(DIM, tmp_path)
    mat = _rows(9001, 3) * np.float32(3.7) + np.float32(0.1)
    m.append(_spans(len(mat), "c"), mat)
    m.quantize_rows = 0
    m.search(mat[0], None, 5)
    expected = mat.mean(axis=0, dtype=np.float64).astype(np.float32)
    assert m._center is not None and m._center.tobytes() == expected.tobytes()


@pytest.mark.usefixtures("small_passes")
def test_commit_keeps_the_reserved_rows_of_new_hashes_only(tmp_path: Path) -> None:
    mapped, heap = _pair(tmp_path)
    first, mat = _spans(120, "k"), _rows(120, 4)
    for m in (mapped, heap):
        m.append(first[:10], mat)
    spans = [s for i, s in enumerate(first) if i % 5 != 3]  # gaps: untrusted rows
    tail = mapped.reserve(len(mat), DIM)
    tail[:] = mat
    mapped.commit(spans)
    heap.append(spans, mat)
    _same_answers(mapped, heap, 4)
    assert mapped.mat[: mapped.n_rows].tobytes() == heap.mat[: heap.n_rows].tobytes()


def _smaps_rss_kb(address: int) -> int:
    """Resident kB of the mapping holding ``address`` (from /proc/self/smaps)."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= address < hi
        elif inside and head == "Rss:":
            return int(line.split()[1])
    raise AssertionError("mapping not found")


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="Linux /proc only")
def test_loading_coding_and_lookups_leave_the_mapped_rows_unresident(tmp_path: Path) -> None:
    m = VectorMatrix(DIM, tmp_path)
    m.store.map_min_bytes = 0
    mat = _rows(20000, 5)  # 3.2 MB
    m.append(_spans(len(mat), "r"), mat)
    address = m.mat.ctypes.data
    assert _smaps_rss_kb(address) <= 64, "appending releases the rows it wrote"
    m.quantize_rows = 0  # codes and a float re-rank, as above 200k rows
    for q in mat[:20]:
        m.search(q, None, 10)
        m.cosines(q, list(m.hid)[:40])
        m.gather(list(m.hid)[::3])
        assert _smaps_rss_kb(address) <= 64, "rows read at random are read, not mapped"
    m.cosines(mat[0], list(m.hid))  # dense: every row, then released
    assert _smaps_rss_kb(address) <= 64


def _cache(path: Path) -> VectorCache:
    cache = VectorCache(path, FINGERPRINT)
    cache.load()
    return cache


def _fill(cache: VectorCache, n: int, seed: int) -> dict[str, np.ndarray]:
    mat = _rows(n, seed)
    items = {f"{seed:02d}{i:06d}": mat[i] for i in range(n)}
    cache.add(items)
    return items


def _cache_answers(cache: VectorCache, hashes: list[str]) -> list[object]:
    out: list[object] = []
    for q in _rows(3, 99):
        out.append(cache.search(q, None, 12))
        out.append(cache.cosines(q, hashes[::7]))
        out.append(cache.cosines(q, hashes))
    return out


def _files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_a_mapped_cache_writes_the_same_files_and_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same adds, loads, merges, compaction and adopt, once in memory, once mapped."""
    answers, disk = [], []
    for mapped in (False, True):
        if mapped:
            monkeypatch.setattr(rows_module, "MAP_MIN_BYTES", 0)
            monkeypatch.setattr(memory_module, "SCAN_ROWS", 37)
            monkeypatch.setattr(files_module, "READ_BYTES", 5000)
        root = tmp_path / ("mapped" if mapped else "heap")
        cache = _cache(root / "c")
        held = [*_fill(cache, 400, 1), *_fill(cache, 30, 2), *_fill(cache, 500, 3)]
        cache._m.quantize_rows = 300
        got = _cache_answers(cache, held)
        cache = _cache(root / "c")  # a fresh process's load
        assert cache._m.store.mapped is mapped
        cache._m.quantize_rows = 300
        got += _cache_answers(cache, held)
        cache.maintain(held[:-100])  # merges, then a compaction without the last 100
        cache._m.quantize_rows = 300
        got += _cache_answers(cache, held)
        rebuilt = _cache(root / "rebuild")
        _fill(rebuilt, 350, 4)
        cache.adopt(rebuilt, list(rebuilt._m.hid)[:300])
        got += _cache_answers(cache, list(cache._m.hid))
        answers.append(got)
        disk.append(_files(root / "c"))
    assert answers[0] == answers[1]
    assert disk[0] == disk[1]


@pytest.mark.usefixtures("small_passes")
def test_a_streamed_load_keeps_the_good_blocks_of_a_torn_or_corrupt_file(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    items = _fill(cache, 5 * BLOCK_ROWS + 17, 6)
    npy = next(tmp_path.glob("seg-*.npy"))
    data = bytearray(npy.read_bytes())
    data[len(data) - 3 * BLOCK_ROWS * DIM * 4] ^= 0xFF  # one byte in the third block
    npy.write_bytes(bytes(data[: len(data) - 100]))  # and the last block torn
    loaded = _cache(tmp_path)
    kept = set(loaded._m.hid)
    lost = [h for h in items if h not in kept]
    assert len(lost) == BLOCK_ROWS + 17
    assert loaded.dropped and "failed their block checksum" in loaded.dropped[-1]
    for h in list(kept)[::50]:
        row = loaded._m.mat[loaded._m.starts[loaded._m.hid[h]]]
        assert row.tobytes() == items[h].tobytes()


def test_no_scratch_dir_or_no_space_keeps_rows_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(rows_module, "MAP_MIN_BYTES", 0)
    missing = VectorMatrix(DIM, tmp_path / "absent")
    mat = _rows(200, 7)
    with caplog.at_level(logging.WARNING):
        missing.append(_spans(200, "m"), mat)
    assert not missing.store.mapped and not caplog.records  # no cache yet: nothing to say

    def no_space(fd: int, offset: int, length: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rows_module.os, "posix_fallocate", no_space)
    full = VectorMatrix(DIM, tmp_path)
    with caplog.at_level(logging.WARNING):
        full.append(_spans(200, "m"), mat)
    assert not full.store.mapped
    assert "kept in memory" in caplog.text
    _same_answers(full, missing, 7)
    assert os.listdir(tmp_path) == [], "the scratch file that failed left no name behind"


_AFTER_THE_SYNC_TOOL = """
import json, os, sys
from pathlib import Path
import numpy as np
from wikimem_watch.vectors import rows
rows.MAP_MIN_BYTES = 0
from wikimem_watch.vectors.cache import VectorCache
path = Path(sys.argv[1])
cache = VectorCache(path, {"model": "test-rows", "dim": 40})
cache.load()
assert cache._m.store.mapped
names = sorted(p.name for p in path.iterdir())
fds = []
for fd in os.listdir("/proc/self/fd"):
    try:
        fds.append(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:  # the listing's own
        pass
for npy in path.glob("*.npy"):  # rewritten in place, as some sync tools do
    with npy.open("r+b") as fh:
        fh.truncate(0)
q = np.ones(40, dtype=np.float32) / np.sqrt(40)
hashes = sorted(cache._m.hid)
found = [cache.search(q, None, 5), cache.cosines(q, hashes[:20])]
for npy in path.glob("*.npy"):
    npy.unlink()  # or deleted by a merge elsewhere
found.append(cache.cosines(q, hashes))
cache._m.quantize_rows = 0
found.append(cache.search(q, None, 5))
print(json.dumps({"found": found, "names": names, "fds": fds}))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="O_TMPFILE and /proc/self/fd")
def test_truncating_or_deleting_cache_files_under_a_loaded_cache_cannot_crash_it(
    tmp_path: Path,
) -> None:
    """The rows live in a file only this process has: a sync tool truncating a loaded .npy
    in place (which under a map of that file would kill the process with SIGBUS) or a
    merge deleting it changes no answer."""
    cache = _cache(tmp_path)
    _fill(cache, 300, 8)
    _fill(cache, 200, 9)
    hashes = sorted(cache._m.hid)
    q = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    expected = [cache.search(q, None, 5), cache.cosines(q, hashes[:20]), cache.cosines(q, hashes)]
    cache._m.quantize_rows = 0
    expected.append(cache.search(q, None, 5))
    before = sorted(p.name for p in tmp_path.iterdir())
    out = subprocess.run(
        [sys.executable, "-c", _AFTER_THE_SYNC_TOOL, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr  # -7 would be SIGBUS
    result = json.loads(out.stdout)
    assert result["names"] == before, "the scratch file has no name"
    ours = [f for f in result["fds"] if f.startswith(str(tmp_path))]
    assert ours and all(f.endswith("(deleted)") for f in ours), ours
    assert json.loads(json.dumps(expected)) == result["found"]


@pytest.mark.usefixtures("small_passes")
@pytest.mark.parametrize("rows", [0, 1, BLOCK_ROWS, 3 * BLOCK_ROWS + 5])
def test_a_streamed_write_writes_the_bytes_and_sums_np_save_would(
    tmp_path: Path, rows: int
) -> None:
    matrix = _rows(rows, 10) if rows else np.zeros((0, DIM), dtype=np.float32)
    spans = packed((f"w{i}", 1) for i in range(rows))
    npy, keys = tmp_path / "m.npy", tmp_path / "m.keys.jsonl"
    written = write_group(keys, npy, FINGERPRINT, spans, matrix)
    expected = npy_bytes(matrix)
    assert npy.read_bytes() == expected
    header = json.loads(keys.read_text(encoding="utf-8").splitlines()[0])
    assert header["sha256"] == hashlib.sha256(expected).hexdigest()
    raw, step = matrix.tobytes(), BLOCK_ROWS * DIM * 4
    sums = [hashlib.sha256(raw[i : i + step]).hexdigest()[:16] for i in range(0, len(raw), step)]
    assert header["block_sha256"] == sums
    assert written == len(expected) + keys.stat().st_size


@pytest.mark.usefixtures("small_passes")
def test_segment_names_are_the_content_digest_as_before(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    items = _fill(cache, 2 * BLOCK_ROWS + 3, 11)
    matrix = np.stack(list(items.values()))
    digest = hashlib.sha256(json.dumps([FINGERPRINT, list(items)]).encode("utf-8"))
    digest.update(npy_bytes(matrix))
    assert (tmp_path / f"seg-{digest.hexdigest()[:16]}.npy").read_bytes() == npy_bytes(matrix)
