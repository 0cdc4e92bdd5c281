"""The vector cache and its sync: incremental, content-addressed, tolerant, atomic."""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.core.parse import parse_note
from wikimem_watch.vectors import cache_groups
from wikimem_watch.vectors import files as files_mod
from wikimem_watch.vectors import sync as sync_module
from wikimem_watch.vectors.cache import VectorCache
from wikimem_watch.vectors.embedders import EmbedError
from wikimem_watch.vectors.files import KEYS_FILE, atomic_write
from wikimem_watch.vectors.hash_embedder import HashEmbedder
from wikimem_watch.vectors.policy import MergePolicy
from wikimem_watch.vectors.service import VectorService
from wikimem_watch.vectors.sync import REBUILD_DIR, VectorSync
from wikimem_watch.vectors.texts import CONTEXT, CONTEXT_CHARS, embedding_text, embedding_texts

Matrix = npt.NDArray[np.float32]


class CountingEmbedder(HashEmbedder):
    """HashEmbedder that records every embed_documents call (and can fail or block)."""

    def __init__(self, fail_after: int | None = None, gate: threading.Event | None = None) -> None:
        super().__init__(dim=64, max_chars=200)
        self.calls: list[list[str]] = []
        self.fail_after = fail_after
        self.gate = gate
        self.entered = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(5)
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise EmbedError("endpoint down (test)")
        self.calls.append(list(texts))
        return super().embed_documents(texts)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def vault(n: int, salt: str = "") -> dict[str, str]:
    texts = [f"entry {i}{salt}: notes about topic {i % 7} and the cat number {i}" for i in range(n)]
    return {content_hash(t): t for t in texts}


def open_cache(
    path: Path, embedder: HashEmbedder, policy: MergePolicy | None = None
) -> VectorCache:
    cache = VectorCache(path, embedder.fingerprint, policy=policy)
    cache.load()
    return cache


def base_npy(path: Path) -> Path:
    """The matrix the fixed-name keys file (a copy of the base's keys) names."""
    return path / json.loads((path / KEYS_FILE).read_text().splitlines()[0])["vectors_file"]


def files(path: Path, pattern: str = "*") -> list[str]:
    return sorted(p.name for p in path.glob(pattern))


def test_round_trip_search_finds_the_same_hits_after_reload(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    entries = vault(20)
    cache = open_cache(tmp_path, emb)
    assert VectorSync(emb, cache).sync(entries) == 20
    query = emb.embed_query("entry 3: notes about topic 3 and the cat number 3")
    before = cache.search(query, None, 5)
    reloaded = open_cache(tmp_path, emb)
    assert reloaded.state == "ready" and reloaded.stats()["hashes"] == 20
    assert reloaded.search(query, None, 5) == before
    assert before[0][0] == content_hash("entry 3: notes about topic 3 and the cat number 3")


def test_restart_over_unchanged_data_makes_zero_embed_calls(tmp_path: Path) -> None:
    entries = vault(30)
    first = CountingEmbedder()
    VectorSync(first, open_cache(tmp_path, first)).sync(entries)
    second = CountingEmbedder()
    assert VectorSync(second, open_cache(tmp_path, second)).sync(entries) == 0
    assert second.calls == []


def test_rename_keeps_hashes_so_it_costs_zero_calls(tmp_path: Path) -> None:
    # The cache is keyed by content hash: a note moved to another folder keeps its keys.
    root = tmp_path / "vault"
    (root / "wiki").mkdir(parents=True)
    (root / "wiki" / "kites.md").write_text("## Red\nA red kite.\n\n## Blue\nA blue kite.\n")
    engine = Engine(load_config(root, {"embed": "hash", "snapshot": False}))
    engine.scan()
    emb = CountingEmbedder()
    assert VectorSync(emb, open_cache(tmp_path / "cache", emb)).sync(engine.embedding_inputs())
    assert emb.calls, "the first sync embedded the two items"
    before = dict(engine.embedding_inputs())
    (root / "notes").mkdir()
    (root / "wiki" / "kites.md").rename(root / "notes" / "moved.md")
    engine.apply(["wiki/kites.md", "notes/moved.md"])
    assert (
        list(engine.files) == ["notes/moved.md"] and len(engine.entries_of("notes/moved.md")) == 2
    )
    assert dict(engine.embedding_inputs()) == before
    emb.calls.clear()
    VectorSync(emb, open_cache(tmp_path / "cache", emb)).sync(engine.embedding_inputs())
    assert emb.calls == []


def test_one_changed_entry_is_one_call_and_one_small_segment(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    entries = vault(500)
    cache = open_cache(tmp_path, emb)
    VectorSync(emb, cache).sync(entries)
    cache.compact(entries)  # a compacted base, no segments
    base_bytes = base_npy(tmp_path).stat().st_size
    before = set(files(tmp_path, "seg-*"))
    assert len(before) == 2 and cache.stats()["segments"] == 0

    edited = dict(entries)
    old = next(iter(edited))
    del edited[old]
    edited[content_hash("an edited entry")] = "an edited entry"
    emb.calls.clear()
    sync = VectorSync(emb, open_cache(tmp_path, emb))
    assert sync.sync(edited) == 1
    assert emb.calls == [["an edited entry"]]
    segments = sorted(set(files(tmp_path, "seg-*")) - before)
    assert len(segments) == 2  # one .npy and its .keys.jsonl
    assert sync.cache.stats()["bytes_written"] == sum(
        (tmp_path / name).stat().st_size for name in segments
    )
    written = sum((tmp_path / name).stat().st_size for name in segments)
    assert written * 20 < base_bytes  # O(changed rows), not the whole matrix
    assert sync.cache.has(content_hash("an edited entry"))


def test_long_entry_gets_one_vector_per_chunk_and_the_best_chunk_counts(tmp_path: Path) -> None:
    emb = CountingEmbedder()  # max_chars=200
    taxes = (
        "Taxes: file the return before April, keep receipts, ask the accountant about deductions."
    )
    long_text = "Gardening notes: tomatoes need sun and water every day. " * 6 + "\n\n" + taxes
    entries = {content_hash(long_text): long_text, **vault(5)}
    cache = open_cache(tmp_path, emb)
    VectorSync(emb, cache).sync(entries)
    assert cache.stats()["rows"] == 5 + 3
    query = emb.embed_query("taxes return accountant deductions")
    hits = cache.search(query, None, 1)
    whole = float(HashEmbedder(64, 10_000).embed_query(long_text) @ query)
    chunks = emb.embed_documents([taxes]) @ query
    assert hits[0][0] == content_hash(long_text)
    assert hits[0][1] == pytest.approx(float(chunks[0]), abs=1e-6) and hits[0][1] > whole
    sparse = cache.cosines(query, [content_hash(long_text)])  # the few-candidates path
    assert sparse[content_hash(long_text)] == pytest.approx(hits[0][1], abs=1e-6)


def test_search_is_restricted_to_the_given_hashes_and_cosines_match(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    entries = vault(12)
    cache = open_cache(tmp_path, emb)
    VectorSync(emb, cache).sync(entries)
    allowed = list(entries)[5:8]
    query = emb.embed_query("the cat number 1")
    hits = cache.search(query, allowed + ["unknown-hash"], 10)
    assert {h for h, _ in hits} == set(allowed)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    cos = cache.cosines(query, [*allowed, "unknown-hash"])
    assert set(cos) == set(allowed)
    assert all(cos[h] == pytest.approx(s, abs=1e-6) for h, s in hits)
    assert cache.search(query, [], 5) == [] and cache.search(query, None, 0) == []


def test_corrupt_keys_line_costs_only_its_rows_not_the_segment(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    first, second = vault(5, "a"), vault(5, "b")
    cache = open_cache(tmp_path, emb, MergePolicy(max_segment_fraction=1.0))
    sync = VectorSync(emb, cache)
    sync.sync(first)
    seg_a = set(files(tmp_path, "seg-*.keys.jsonl"))
    sync.sync({**first, **second})
    (seg_b,) = set(files(tmp_path, "seg-*.keys.jsonl")) - seg_a
    path = tmp_path / seg_b
    lines = path.read_text().splitlines()
    row_hashes = [json.loads(line)["hash"] for line in lines[1:]]
    lines[3] = '{"hash": "broken'  # row 2: it, and row 1 it may have continued, are lost
    path.write_text("\n".join(lines) + "\n")

    reloaded = open_cache(tmp_path, emb)
    assert reloaded.state == "ready"
    assert sorted(reloaded.missing({**first, **second})) == sorted(row_hashes[1:3])
    assert any("bad key line" in d for d in reloaded.stats()["dropped"])  # type: ignore[attr-defined]
    emb.calls.clear()
    VectorSync(emb, reloaded).sync({**first, **second})
    assert sorted(emb.calls[0]) == sorted(second[h] for h in row_hashes[1:3])  # only those


def test_read_keys_drops_a_bad_line_with_the_chunks_it_may_belong_to(tmp_path: Path) -> None:
    header = {"vectors_file": "seg-0000000000000000.npy", "rows": 9, "dim": 4}
    keys = [
        {"hash": "a", "chunk": 0},
        {"hash": "b", "chunk": 0},
        {"hash": "b", "chunk": 1},
        "not a key",  # b's third chunk, or a text of its own: b and it are untrusted
        {"hash": "b", "chunk": 3},  # continues what is not there
        {"hash": "c", "chunk": 0},
        {"hash": "c", "chunk": 2},  # a gap: c is untrusted too
        {"hash": "d", "chunk": 0},
        {"hash": "d", "chunk": 1},
    ]
    path = tmp_path / "seg-0000000000000000.keys.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in [header, *keys]) + "\n")
    got_header, spans, bad = files_mod.read_keys(path, files_mod.MANIFEST_NPY)
    assert got_header == header
    assert spans == [("a", 0, 1), ("d", 7, 2)]
    assert bad == [1, 2, 3, 4, 5, 6]
    path.write_text("\n".join(json.dumps(line) for line in [header, *keys[:-1]]) + "\n")
    with pytest.raises(ValueError, match="9 rows, file has 8 keys"):
        files_mod.read_keys(path, files_mod.MANIFEST_NPY)


@pytest.mark.parametrize("damage", ["truncate_npy", "delete_npy", "drop_key_line", "bad_header"])
def test_torn_state_is_treated_as_missing_never_fatal(tmp_path: Path, damage: str) -> None:
    emb = CountingEmbedder()
    entries = vault(8)
    VectorSync(emb, open_cache(tmp_path, emb)).sync(entries)
    (keys,) = files(tmp_path, "seg-*.keys.jsonl")
    npy = tmp_path / keys.replace(".keys.jsonl", ".npy")
    if damage == "truncate_npy":
        npy.write_bytes(npy.read_bytes()[:200])
    elif damage == "delete_npy":
        npy.unlink()
    elif damage == "drop_key_line":  # row-count mismatch between keys and matrix
        lines = (tmp_path / keys).read_text().splitlines()
        (tmp_path / keys).write_text("\n".join(lines[:-1]) + "\n")
    else:
        (tmp_path / keys).write_text("not json\n")
    reloaded = open_cache(tmp_path, emb)
    assert reloaded.state == "ready"
    assert reloaded.missing(entries) == list(entries)
    assert len(reloaded.stats()["dropped"]) == 1  # type: ignore[arg-type]


def test_a_symlink_or_fifo_planted_in_the_cache_dir_is_never_followed_nor_waited_for(
    tmp_path: Path,
) -> None:
    """The cache dir travels with a synced vault: a keys file planted there as a symlink was
    followed (to /dev/zero: one endless header line, gigabytes in seconds; to another
    folder's cache: trusted), and one planted as a FIFO held the load for good."""
    emb = CountingEmbedder()
    entries = vault(4)
    elsewhere, cache_dir = tmp_path / "elsewhere", tmp_path / "cache"
    VectorSync(emb, open_cache(elsewhere, emb)).sync(entries)
    cache_dir.mkdir()
    for name in files(elsewhere):
        (cache_dir / name).symlink_to(elsewhere / name)
    os.mkfifo(cache_dir / f"seg-{'0' * 16}.keys.jsonl")  # sorted first: read first
    cache = open_cache(cache_dir, emb)
    assert cache.state == "ready" and cache.missing(entries) == list(entries)
    dropped = "\n".join(cache.stats()["dropped"])  # type: ignore[arg-type]
    assert "not a regular file" in dropped and "a symlink (not followed)" in dropped


def test_npy_whose_rows_disagree_with_its_header_is_dropped(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    entries = vault(4)
    cache = open_cache(tmp_path, emb)
    VectorSync(emb, cache).sync(entries)
    cache.compact(entries)
    npy = base_npy(tmp_path)
    fewer = np.zeros((3, 64), dtype=np.float32)
    np.save(npy, fewer)
    keys = npy.with_name(npy.name.replace(".npy", ".keys.jsonl"))
    header, *rows = keys.read_text().splitlines()
    fields = json.loads(header)
    fields["sha256"] = hashlib.sha256(npy.read_bytes()).hexdigest()  # checksum fine, rows not
    keys.write_text("\n".join([json.dumps(fields), *rows]) + "\n")
    reloaded = open_cache(tmp_path, emb)
    assert reloaded.state == "ready" and reloaded.stats()["hashes"] == 0
    assert "shape" in str(reloaded.stats()["dropped"])


def test_fingerprint_mismatch_turns_vectors_off_and_never_re_embeds(tmp_path: Path) -> None:
    old = CountingEmbedder()
    entries = vault(6)
    VectorSync(old, open_cache(tmp_path, old)).sync(entries)
    new = HashEmbedder(dim=32)
    counting_new = CountingEmbedder()
    counting_new._dim = 32  # same class, another dim: another fingerprint
    cache = open_cache(tmp_path, new)
    assert cache.state == "mismatch" and not cache.usable
    assert cache.search(new.embed_query("cat"), None, 3) == []
    sync = VectorSync(counting_new, cache)
    assert sync.sync(entries) == 0 and counting_new.calls == []
    with pytest.raises(EmbedError, match="rebuild"):
        cache.add({"h": np.ones((1, 32), dtype=np.float32)})
    assert len(files(tmp_path, "seg-*")) == 2  # the other model's files are left alone


def test_rebuild_replaces_mismatched_vectors(tmp_path: Path) -> None:
    VectorSync(HashEmbedder(dim=16), open_cache(tmp_path, HashEmbedder(dim=16))).sync(vault(4))
    emb = CountingEmbedder()
    cache = open_cache(tmp_path, emb)
    assert cache.state == "mismatch"
    assert VectorSync(emb, cache).sync(vault(4), rebuild=True) == 4
    assert cache.state == "ready" and open_cache(tmp_path, emb).stats()["hashes"] == 4
    assert not (tmp_path / REBUILD_DIR).exists()
    assert files(tmp_path, "seg-*") == sorted(
        [base_npy(tmp_path).name, base_npy(tmp_path).name.replace(".npy", ".keys.jsonl")]
    ), "the other model's files went with the swap"


def test_interrupted_rebuild_resumes_and_keeps_written_segments(tmp_path: Path) -> None:
    entries = vault(40)
    VectorSync(HashEmbedder(), open_cache(tmp_path, HashEmbedder())).sync(entries)
    flaky = CountingEmbedder(fail_after=2)
    sync = VectorSync(flaky, open_cache(tmp_path, flaky), batch_size=10, flush_rows=1)
    with pytest.raises(EmbedError):
        sync.sync(entries, rebuild=True)
    assert sync.cache.state == "mismatch" and sync.last_error == "endpoint down (test)"
    assert (tmp_path / REBUILD_DIR).is_dir()
    again = CountingEmbedder()
    staged = open_cache(tmp_path / REBUILD_DIR, again)
    assert staged.stats()["hashes"] == 20  # the two flushed batches survived
    resumed = VectorSync(again, open_cache(tmp_path, again), batch_size=10)
    assert resumed.sync(entries, rebuild=True) == 20
    assert sum(len(c) for c in again.calls) == 20
    assert not (tmp_path / REBUILD_DIR).exists()
    assert open_cache(tmp_path, again).stats()["hashes"] == 40


def test_a_queued_rebuild_counts_in_pending_what_it_will_embed(tmp_path: Path) -> None:
    """`embed --rebuild` answered with what the working cache lacked until its thread started:
    0 pending for a full cache (or a mismatched one) while the whole vault was to be embedded,
    and for a resumed rebuild not what its staging cache still lacked."""
    entries = vault(40)
    emb = CountingEmbedder()
    VectorSync(emb, open_cache(tmp_path, emb)).sync(entries)
    sync = VectorSync(emb, open_cache(tmp_path, emb))
    with sync._run_lock:  # the background thread has not started the rebuild yet
        sync.start_background(entries, rebuild=True)
        assert sync.pending == 40
    assert sync.wait_idle(5) and sync.pending == 0
    sync.stop()
    flaky = CountingEmbedder(fail_after=2)
    with pytest.raises(EmbedError):  # 20 of 40 staged, then the endpoint goes down
        VectorSync(flaky, open_cache(tmp_path, flaky), batch_size=10, flush_rows=1).sync(
            entries, rebuild=True
        )
    again = CountingEmbedder()
    resumed = VectorSync(again, open_cache(tmp_path, again))
    with resumed._run_lock:
        resumed.start_background(entries, rebuild=True)
        assert resumed.pending == 20
    assert resumed.wait_idle(5) and resumed.pending == 0
    assert sum(len(c) for c in again.calls) == 20
    resumed.stop()


def test_a_failed_rebuild_keeps_the_working_cache_serving(tmp_path: Path) -> None:
    entries = vault(40)
    emb = CountingEmbedder()
    VectorSync(emb, open_cache(tmp_path, emb)).sync(entries)
    before = sorted(p.name for p in tmp_path.iterdir() if p.is_file())
    flaky = CountingEmbedder(fail_after=1)
    cache = open_cache(tmp_path, flaky)
    sync = VectorSync(flaky, cache, batch_size=10, flush_rows=1)
    with pytest.raises(EmbedError):
        sync.sync(entries, rebuild=True)  # the endpoint goes down partway
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == before
    assert cache.usable and cache.stats()["hashes"] == 40, "still serving from memory"
    reloaded = open_cache(tmp_path, emb)
    assert reloaded.stats()["hashes"] == 40 and reloaded.dropped == [], "and from disk"
    assert reloaded.search(emb.embed_query("cat number 3"), None, 1)


def test_one_bad_byte_in_the_base_drops_only_its_block(tmp_path: Path) -> None:
    entries = vault(1000)
    emb = CountingEmbedder()
    cache = open_cache(tmp_path, emb)
    VectorSync(emb, cache, batch_size=500).sync(entries)
    cache.compact(entries)
    header = json.loads((tmp_path / KEYS_FILE).read_text().splitlines()[0])
    assert {"vectors_file", "model", "dim"} <= set(header), "wikimem's header fields stay"
    assert header["block_rows"] == 256 and len(header["block_sha256"]) == 4
    npy = tmp_path / header["vectors_file"]
    data = bytearray(npy.read_bytes())
    data[-10] ^= 0xFF  # one byte in the last block (rows 768..999)
    npy.write_bytes(bytes(data))
    reloaded = open_cache(tmp_path, emb)
    assert reloaded.stats()["hashes"] == 768
    assert "failed their block checksum" in reloaded.dropped[0]
    emb.calls.clear()
    VectorSync(emb, reloaded, batch_size=500).sync(entries)
    assert sum(len(c) for c in emb.calls) == 232, "only the torn block is re-embedded"


def test_a_torn_base_is_written_again_whole_not_re_embedded_at_every_start(
    tmp_path: Path,
) -> None:
    """The base rewrite after the re-embedding makes the torn base's very name and bytes;
    it was taken for a copy already on disk, the torn file stayed, and the segment holding
    the re-embedded rows was deleted: every start embedded the torn part again."""
    entries = vault(600)
    emb = CountingEmbedder()
    cache = open_cache(tmp_path, emb)
    VectorSync(emb, cache).sync(entries)
    cache.compact(entries)
    npy = base_npy(tmp_path)
    whole = npy.read_bytes()
    npy.write_bytes(whole[: len(whole) // 2])  # a crash or a sync tool left half of it
    embedded = []
    for _ in range(3):  # three starts over the same vault
        emb.calls.clear()
        VectorSync(emb, open_cache(tmp_path, emb)).sync(entries)
        embedded.append(sum(len(c) for c in emb.calls))
    assert embedded[0] == 600 - 256, "the torn blocks once"
    assert embedded[1:] == [0, 0], "and never again"
    assert npy.read_bytes() == whole


class NanEmbedder(CountingEmbedder):
    """Answers NaN for any text containing "poison", and for a query saying "nanquery";
    zeros (a broken model's answer) for "blank" and "zeroquery"."""

    def embed_documents(self, texts: Sequence[str]) -> Matrix:
        out = super().embed_documents(texts)
        for i, text in enumerate(texts):
            if "poison" in text:
                out[i] = np.nan
            elif "blank" in text:
                out[i] = 0.0
        return out

    def embed_query(self, text: str) -> Matrix:
        out = super().embed_query(text)
        if "nanquery" in text:
            out[:] = np.inf
        elif "zeroquery" in text:
            out[:] = 0.0
        return out


def test_non_finite_vectors_are_a_failed_embedding_never_stored(tmp_path: Path) -> None:
    entries = {**vault(6), content_hash("poison"): "poison ivy notes"}
    emb = NanEmbedder()
    service = VectorService(emb, tmp_path)
    service.open()
    service.sync.sync(entries)
    assert service.cache.missing(entries) == [content_hash("poison")]
    assert service.status()["failed"] == 1
    calls = len(emb.calls)
    service.sync.sync(entries)
    assert len(emb.calls) == calls, "a failed text is not retried on every sync"
    assert all(np.isfinite(s) for s in service.cosines("cat", list(entries), 10).values())
    assert service.cosines("nanquery", list(entries), 10) is None, "BM25 only, said once"
    assert np.isfinite(service.cache._m.mat).all(), "nothing non-finite is held"


def test_a_failed_text_edited_or_deleted_is_no_longer_counted_in_failed(tmp_path: Path) -> None:
    """``status.failed`` kept counting a text that failed after it was edited away."""
    entries = vault(3)
    emb = NanEmbedder()
    service = VectorService(emb, tmp_path)
    service.open()
    service.sync.sync({**entries, content_hash("poison"): "poison ivy notes"})
    assert service.status()["failed"] == 1
    edited = {**entries, content_hash("ivy"): "ivy notes"}  # the note is edited: a new key
    assert service.sync.sync(edited, fresh=[content_hash("ivy")], removed=1) == 1
    assert service.status()["failed"] == 0
    service.sync.sync({**entries, content_hash("poison"): "poison ivy notes"})
    assert service.status()["failed"] == 1, "the same text again fails again"
    service.sync.sync(entries)  # deleted, seen by a sync that lists every key
    assert service.status()["failed"] == 0


def test_all_zero_vectors_are_a_failed_embedding_never_stored(tmp_path: Path) -> None:
    entries = {**vault(6), content_hash("blank"): "blank page notes"}
    service = VectorService(NanEmbedder(), tmp_path)
    service.open()
    service.sync.sync(entries)
    assert service.cache.missing(entries) == [content_hash("blank")]
    assert service.status()["failed"] == 1
    assert service.cosines("zeroquery", list(entries), 10) is None, "a zero query: BM25 only"


def test_a_cache_row_that_is_not_finite_on_disk_is_treated_as_missing(tmp_path: Path) -> None:
    entries = vault(4)
    emb = CountingEmbedder()
    cache = open_cache(tmp_path, emb)
    VectorSync(emb, cache).sync(entries)
    cache.compact(entries)
    npy = base_npy(tmp_path)
    keys = npy.with_name(npy.name.replace(".npy", ".keys.jsonl"))
    header, *rows = keys.read_text().splitlines()
    fields = json.loads(header)
    matrix = np.load(npy)
    matrix[0, 0] = np.nan  # a self-consistent file (checksums rewritten) with a NaN row
    atomic_write(npy, b"")
    np.save(npy, matrix)
    fields["sha256"] = hashlib.sha256(npy.read_bytes()).hexdigest()
    keys.write_text("\n".join([json.dumps(fields), *rows]) + "\n")
    assert open_cache(tmp_path, emb).stats()["hashes"] == 3


def test_compaction_keeps_exactly_the_live_rows(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    entries = vault(30)
    cache = open_cache(tmp_path, emb)
    sync = VectorSync(emb, cache, batch_size=5, flush_rows=5)
    sync.sync(entries)
    assert cache.stats()["disk_rows"] == 30
    live = list(entries)[::2]
    cache.compact(live)
    base = base_npy(tmp_path)
    assert files(tmp_path, "seg-*") == sorted([base.name, base.name.replace(".npy", ".keys.jsonl")])
    reloaded = open_cache(tmp_path, emb)
    assert reloaded.missing(entries) == list(entries)[1::2]
    assert reloaded.stats()["rows"] == reloaded.stats()["disk_rows"] == 15
    assert reloaded.stats()["base"] == base.name
    query = emb.embed_query(entries[live[3]])
    assert reloaded.search(query, None, 1)[0][0] == live[3]
    reloaded.compact(live[:2])
    assert len(files(tmp_path, "seg-*")) == 2 and base_npy(tmp_path) != base


def test_sync_merges_by_itself_when_segments_pile_up(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    policy = MergePolicy(fanout=3, max_segment_fraction=1.0, max_dead_fraction=1.0)
    cache = open_cache(tmp_path, emb, policy)
    sync = VectorSync(emb, cache)
    entries = vault(40)
    sync.sync(entries)  # the base: 40 rows
    for i in range(12):
        entries[content_hash(f"edit {i}")] = f"edit {i}"
        sync.sync(entries)
    groups = cache.stats()["segments"]
    assert isinstance(groups, int) and 1 <= groups <= 2 * (3 - 1)  # tiers of < 3 groups
    assert open_cache(tmp_path, emb).missing(entries) == []


def test_two_machines_write_distinct_segment_names_and_both_load(tmp_path: Path) -> None:
    a, b = CountingEmbedder(), CountingEmbedder()
    VectorSync(a, open_cache(tmp_path, a)).sync(vault(3, "on laptop"))
    VectorSync(b, open_cache(tmp_path / "elsewhere", b)).sync(vault(3, "on desktop"))
    for p in (tmp_path / "elsewhere").glob("seg-*"):
        os.replace(p, tmp_path / p.name)  # the sync tool delivers the other machine's files
    assert len(files(tmp_path, "seg-*.npy")) == 2
    both = open_cache(tmp_path, a)
    assert both.missing({**vault(3, "on laptop"), **vault(3, "on desktop")}) == []


def test_writes_are_atomic_and_leave_no_temp_files(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    entries = vault(10)
    cache = open_cache(tmp_path / "cache", emb)
    VectorSync(emb, cache).sync(entries)
    cache.compact(entries)
    names = files(tmp_path / "cache", "*") + files(tmp_path / "cache", ".*")
    assert not [n for n in names if n.endswith(".tmp")]
    assert (tmp_path / "cache" / ".gitignore").read_text() == "*\n"


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f.json"
    atomic_write(target, b"old")

    def crash(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_background_sync_does_not_block_queries(tmp_path: Path) -> None:
    gate = threading.Event()
    emb = CountingEmbedder(gate=gate)
    entries = vault(10)
    cache = open_cache(tmp_path, HashEmbedder(dim=64, max_chars=200))
    cache.add({h: HashEmbedder(64, 200).embed_documents([t]) for h, t in list(entries.items())[:5]})
    sync = VectorSync(emb, cache)
    sync.start_background(entries)
    assert emb.entered.wait(5)
    assert sync.pending == 5 and cache.state == "embedding"
    hits = cache.search(HashEmbedder().embed_query("cat"), None, 3)  # while embedding is stuck
    assert len(hits) == 3
    gate.set()
    assert sync.wait_idle(5)
    assert sync.pending == 0 and cache.state == "ready" and cache.missing(entries) == []
    sync.stop()


def test_background_sync_failure_is_reported_not_raised(tmp_path: Path) -> None:
    emb = CountingEmbedder(fail_after=0)
    cache = open_cache(tmp_path, emb)
    sync = VectorSync(emb, cache)
    sync.start_background(vault(3))
    assert sync.wait_idle(5)
    assert cache.state == "error" and sync.last_error == "endpoint down (test)"
    assert cache.stats()["last_error"] == "endpoint down (test)"
    sync.stop()


def test_an_embedding_error_leaves_status_once_embedding_works_again(tmp_path: Path) -> None:
    """The cache's copy of the error stayed in ``status`` beside a "ready" state."""
    emb = CountingEmbedder(fail_after=0)
    cache = open_cache(tmp_path, emb)
    sync = VectorSync(emb, cache)
    with pytest.raises(EmbedError):
        sync.sync(vault(3))
    assert cache.stats()["last_error"] == "endpoint down (test)"
    emb.fail_after = None  # the endpoint is back
    assert sync.sync(vault(3)) == 3
    assert cache.state == "ready" and sync.last_error is None
    assert cache.stats()["last_error"] is None


def test_an_embedding_error_leaves_status_when_nothing_is_left_to_embed(tmp_path: Path) -> None:
    """The entry that failed was deleted: the next sync embedded nothing and kept the state
    "error" and the endpoint's message in ``status`` for as long as the daemon ran."""
    emb = CountingEmbedder()
    cache = open_cache(tmp_path, emb)
    sync = VectorSync(emb, cache)
    kept = vault(3)
    assert sync.sync(kept) == 3
    emb.fail_after = len(emb.calls)  # the endpoint goes down, then an entry is added
    with pytest.raises(EmbedError):
        sync.sync({**kept, **vault(1, salt="new")})
    assert cache.state == "error"
    assert sync.sync(kept) == 0  # the new entry is deleted: nothing is missing any more
    assert cache.state == "ready" and sync.last_error is None and sync.pending == 0
    assert cache.stats()["last_error"] is None


def test_background_sync_tries_again_after_an_embedding_error_without_a_new_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endpoint down when the daemon started left the vault without vectors, and "error"
    in ``status``, until the next edit queued another sync."""
    monkeypatch.setattr(sync_module, "RETRY_S", 0.05)
    monkeypatch.setattr(sync_module, "RETRY_MAX_S", 0.05)  # however often it failed meanwhile
    emb = CountingEmbedder(fail_after=0)
    cache = open_cache(tmp_path, emb)
    sync = VectorSync(emb, cache)
    entries = vault(3)
    sync.start_background(entries)
    assert sync.wait_idle(5)
    assert sync.last_error == "endpoint down (test)" and sync.pending == 3
    emb.fail_after = None  # the endpoint is back; nothing in the vault changes
    deadline = time.monotonic() + 5
    while cache.missing(entries) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sync.wait_idle(5)
    assert cache.missing(entries) == [] and sync.pending == 0
    assert cache.state == "ready" and cache.stats()["last_error"] is None
    sync.stop()


def test_a_rebuild_stopped_by_an_error_is_not_dropped_by_an_edit_queued_after_it(
    tmp_path: Path,
) -> None:
    """An edit before the retry was due ran as a plain sync: the rebuild was forgotten, and a
    mismatched cache stayed off until `embed --rebuild` was issued again."""
    entries = vault(4)
    VectorSync(HashEmbedder(dim=16), open_cache(tmp_path, HashEmbedder(dim=16))).sync(entries)
    emb = CountingEmbedder(fail_after=0)
    cache = open_cache(tmp_path, emb)
    sync = VectorSync(emb, cache)
    sync.start_background(entries, rebuild=True)
    assert sync.wait_idle(5)
    assert cache.state == "mismatch" and sync.last_error == "endpoint down (test)"
    emb.fail_after = None  # the endpoint is back, and a note is added before the retry
    edited = {**entries, **vault(1, salt="new")}
    sync.start_background(edited, fresh=list(vault(1, salt="new")))
    assert sync.wait_idle(5)
    assert cache.state == "ready" and cache.missing(edited) == []
    assert not (tmp_path / REBUILD_DIR).exists()
    sync.stop()


def test_progress_callback_reports_done_and_total(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    seen: list[tuple[int, int]] = []
    sync = VectorSync(
        emb, open_cache(tmp_path, emb), batch_size=4, on_progress=lambda d, t: seen.append((d, t))
    )
    sync.sync(vault(10))
    assert seen == [(4, 10), (8, 10), (10, 10)]


def test_embedding_text_is_context_then_heading_then_text() -> None:
    assert embedding_text("09:30", "coffee") == "09:30\ncoffee"
    assert embedding_text("", "coffee") == "coffee"
    assert embedding_text("09:30", "coffee", "tea first?") == "tea first?\n09:30\ncoffee"


def test_a_diary_entry_is_embedded_with_the_tail_of_the_entry_before_it() -> None:
    long_words = " ".join(f"word{i}" for i in range(100))
    note = parse_note(
        "diary/2026-07-20.md",
        f"## 09:00\nShall we fly kites today?\n\n## 09:05\nYes, the red one.\n\n"
        f"## 09:10\n{long_words}\n\n## 09:15\nDone.\n",
    )
    first, second, third, fourth = embedding_texts(note.entries)
    assert first == "09:00\nShall we fly kites today?"
    assert second == "Shall we fly kites today?\n09:05\nYes, the red one."
    assert third.startswith("Yes, the red one.\n09:10\nword0 ")
    context = fourth.split("\n")[0]
    assert long_words.endswith(context) and 0 < len(context) <= CONTEXT_CHARS
    assert context.startswith("word"), "the tail starts at a word, not inside one"
    assert fourth.endswith("\n09:15\nDone.")


def test_wiki_items_are_embedded_alone() -> None:
    note = parse_note("wiki/people.md", "## Alice\nLikes kites.\n\n## Bob\nLikes tea.\n")
    assert embedding_texts(note.entries) == ["Alice\nLikes kites.", "Bob\nLikes tea."]


def test_the_context_rule_is_part_of_the_cache_fingerprint(tmp_path: Path) -> None:
    # Vectors made under another rule for what goes into a vector are another model's.
    embedder = HashEmbedder(dim=16)
    for rule in (CONTEXT, CONTEXT + "-other"):
        written = VectorCache(tmp_path / rule, {**embedder.fingerprint, "context": rule})
        written.load()
        VectorSync(embedder, written).sync(vault(3))
    same, other = (
        VectorService(embedder, tmp_path / CONTEXT),
        VectorService(embedder, tmp_path / (CONTEXT + "-other")),
    )
    same.open()
    other.open()
    assert same.cache.fingerprint["context"] == CONTEXT
    assert same.cache.state == "ready" and same.cache.usable
    assert other.cache.state == "mismatch" and not other.cache.usable


def test_missing_cache_dir_loads_empty_and_is_created_on_first_write(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    cache = open_cache(tmp_path / "a" / "b", emb)
    assert cache.state == "ready" and not cache.usable
    assert not (tmp_path / "a").exists()
    VectorSync(emb, cache).sync(vault(2))
    assert (tmp_path / "a" / "b" / ".gitignore").exists()


def test_query_of_another_dim_is_a_clear_error(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    cache = open_cache(tmp_path, emb)
    VectorSync(emb, cache).sync(vault(2))
    with pytest.raises(EmbedError, match="dim 8"):
        cache.search(np.ones(8, dtype=np.float32), None, 1)


def test_vector_service_answers_cosines_for_candidates_and_nearest(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    service = VectorService(emb, tmp_path)
    service.open()
    entries = vault(10)
    assert service.cosines("cat", list(entries), 3) is None  # nothing embedded yet
    service.update(entries)
    assert service.sync.wait_idle(5)
    hashes = list(entries)
    found = service.cosines("entry 7: notes about topic 0 and the cat number 7", hashes[:2], 1)
    assert found is not None and set(found) == {*hashes[:2], hashes[7]}
    assert service.status()["pending"] == 0 and service.status()["hashes"] == 10
    service.close()


def test_vector_service_degrades_to_none_when_the_query_cannot_be_embedded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    emb = CountingEmbedder()
    service = VectorService(emb, tmp_path)
    service.open()
    service.sync.sync(vault(3))
    emb.fail_after = 0
    emb.embed_query = lambda text: emb.embed_documents([text])[0]  # type: ignore[method-assign]
    assert service.cosines("a", [], 1) is None and service.cosines("b", [], 1) is None
    assert sum("BM25 only" in r.message for r in caplog.records) == 1


def test_sync_reads_an_unloaded_cache_before_embedding(tmp_path: Path) -> None:
    emb = CountingEmbedder()
    VectorSync(emb, open_cache(tmp_path, emb)).sync(vault(4))
    emb.calls.clear()
    unloaded = VectorCache(tmp_path, emb.fingerprint)
    assert VectorSync(emb, unloaded).sync(vault(4)) == 0 and emb.calls == []


def test_another_models_group_is_read_once_not_at_every_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A synced machine with another embedder leaves its files in the shared cache dir:
    looked at once, then skipped until they change (it cost a full read under the lock at
    every refresh, and filled `dropped` with the same line)."""
    ours, theirs = HashEmbedder(dim=32), HashEmbedder(dim=16)
    cache = open_cache(tmp_path / "ours", ours)
    VectorSync(ours, cache).sync(vault(2, salt="ours"))
    VectorSync(theirs, open_cache(tmp_path / "theirs", theirs)).sync(vault(4))
    for path in (tmp_path / "theirs").glob("seg-*"):  # a sync tool delivers them
        (tmp_path / "ours" / path.name).write_bytes(path.read_bytes())
    reads: list[str] = []
    real = cache_groups.read_keys

    def counted(path: Path, *args: object) -> object:
        reads.append(path.name)
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(cache_groups, "read_keys", counted)
    for _ in range(3):
        cache.refresh()
    assert len(reads) == 1 and len(cache.stats()["dropped"]) == 1
    assert cache.state == "ready" and cache.usable


def test_a_half_segment_a_sync_tool_just_delivered_waits_for_its_other_half(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its mtime is the other machine's (hours old); its grace counts from when it landed."""
    from wikimem_watch.vectors import files

    half = tmp_path / "seg-0123456789abcdef.keys.jsonl"
    half.write_text('{"vectors_file": "seg-0123456789abcdef.npy"}\n', encoding="utf-8")
    old = time.time() - 2 * files.ORPHAN_GRACE_S
    os.utime(half, (old, old))
    files.remove_stale(tmp_path, keep="")
    assert half.exists()
    monkeypatch.setattr(files, "ORPHAN_GRACE_S", -1.0)  # past any grace: it goes
    files.remove_stale(tmp_path, keep="")
    assert not half.exists()


def test_vectors_added_while_the_disk_was_full_are_written_once_it_has_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """They served from memory, but nothing wrote them later and the error stayed in
    ``status``: every start embedded them again."""
    emb = CountingEmbedder()
    cache = open_cache(tmp_path, emb)
    sync = VectorSync(emb, cache)
    real = cache_groups.write_group

    def full(*args: object, **kwargs: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_groups, "write_group", full)
    entries = vault(20)
    sync.sync(entries)
    assert cache.usable and "No space left" in str(cache.stats()["last_error"])
    monkeypatch.setattr(cache_groups, "write_group", real)  # room again
    more = {**entries, content_hash("one more"): "one more"}
    sync.sync(more)
    assert cache.stats()["last_error"] is None
    assert cache.stats()["disk_rows"] == 21
    emb.calls.clear()
    VectorSync(emb, open_cache(tmp_path, emb)).sync(more)
    assert emb.calls == [], "nothing embedded again at the next start"
