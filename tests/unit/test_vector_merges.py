"""Merging the vector cache's files, torn and half-delivered groups, and sharing one synced
cache between two machines' daemons (policy.py, cache_merges.py, cache_groups.py, peers.py,
ADR-0005)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from wikimem_watch.vectors import sync as sync_module
from wikimem_watch.vectors.cache import VectorCache
from wikimem_watch.vectors.files import BLOCK_ROWS, KEYS_FILE, packed, write_group
from wikimem_watch.vectors.hash_embedder import HashEmbedder
from wikimem_watch.vectors.peers import Peers
from wikimem_watch.vectors.policy import MergePolicy, Step, next_step, tier
from wikimem_watch.vectors.sync import VectorSync

EMB = HashEmbedder(dim=16)


def key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def texts(n: int, salt: str = "") -> dict[str, str]:
    return {key(f"{salt}{i}"): f"note {salt}{i} about kites and tea" for i in range(n)}


def open_cache(path: Path, policy: MergePolicy | None = None) -> VectorCache:
    cache = VectorCache(path, EMB.fingerprint, policy=policy)
    cache.load()
    return cache


def vectors(entries: dict[str, str]) -> dict[str, np.ndarray]:
    return {h: EMB.embed_documents([t]) for h, t in entries.items()}


def copy_dir(src: Path, dst: Path) -> None:
    """What a sync tool does: every file of ``src`` lands in ``dst``."""
    dst.mkdir(parents=True, exist_ok=True)
    for path in src.iterdir():
        if path.is_file():
            shutil.copy2(path, dst / path.name)


# -- the policy -------------------------------------------------------------------------------


def test_tier_is_the_integer_log_of_the_rows() -> None:
    assert [tier(r, 8) for r in (0, 1, 7, 8, 63, 64, 511, 512)] == [0, 0, 0, 1, 1, 2, 2, 3]


def test_many_small_segments_merge_by_tier_never_into_the_base() -> None:
    policy = MergePolicy(fanout=8)
    groups = [("base", 100_000)] + [(f"s{i:02d}", 1) for i in range(40)]
    step = next_step(groups, dead_rows=0, policy=policy)
    assert step == Step("merge", tuple(f"s{i:02d}" for i in range(40)))
    seven = [("base", 100_000)] + [(f"s{i}", 1) for i in range(7)]
    assert next_step(seven, 0, policy) is None, "a count of files alone rewrites nothing"


def test_the_base_is_rewritten_on_dead_rows_or_on_segment_rows_only() -> None:
    policy = MergePolicy(fanout=8, max_segment_fraction=0.5, max_dead_fraction=0.25)
    groups = [("base", 1000), ("s1", 100)]
    assert next_step(groups, 250, policy) is None
    assert next_step(groups, 251, policy) == Step("base", ("base", "s1"))
    assert next_step([("base", 1000), ("s1", 300), ("s2", 201)], 0, policy) == Step(
        "base", ("base", "s1", "s2")
    )


def simulate(rows: int, edits: int, policy: MergePolicy) -> float:
    """Rows written per edit under the policy, half appends and half rewrites."""
    groups: dict[str, int] = {"base": rows}
    dead = written = 0
    for i in range(edits):
        groups[f"s{i:08d}"] = 1
        written += 1
        dead += i % 2
        while (step := next_step(list(groups.items()), dead, policy)) is not None:
            if step.kind == "base":
                groups, dead = {f"b{i:08d}": sum(groups.values()) - dead}, 0
                written += sum(groups.values())
            else:
                groups[f"m{i:08d}"] = sum(groups.pop(n) for n in step.names)
                written += groups[f"m{i:08d}"]
    return written / edits


@pytest.mark.parametrize("rows", [20_000, 100_000])
def test_the_policy_writes_a_bounded_number_of_rows_per_edit(rows: int) -> None:
    # two base rewrites at least are inside the run at either size
    assert simulate(rows, rows, MergePolicy()) <= 12


def test_the_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="fanout"):
        MergePolicy(fanout=1)
    with pytest.raises(ValueError, match="max_dead_fraction"):
        MergePolicy(max_dead_fraction=0.0)


# -- the real cache ----------------------------------------------------------------------------


@pytest.mark.timeout(60)  # 600 edits, each an fsynced write: ~1 s alone, more on a busy disk
def test_steady_edits_write_few_rows_worth_per_edit_and_keep_every_live_row(
    tmp_path: Path,
) -> None:
    entries = texts(2000)
    cache = open_cache(tmp_path)
    cache.add(vectors(entries))
    cache.compact(entries)
    sync = VectorSync(EMB, cache)
    sync.sync(entries)
    start = cache.bytes_written
    names = list(entries)
    for i in range(600):
        if i % 2:
            del entries[names.pop(i % len(names))]
        entries[key(f"edit {i}")] = f"edit {i} about the harbour"
        names.append(key(f"edit {i}"))
        assert sync.sync(entries) == 1
    rows_worth = (cache.bytes_written - start) / 600 / (4 * EMB.dim)
    assert rows_worth <= 20, f"{rows_worth:.1f} rows' worth of bytes per edit"
    assert cache.stats()["segments"] < 40
    reloaded = open_cache(tmp_path)
    assert reloaded.missing(entries) == [] and reloaded.dropped == []


def test_two_machines_merging_the_same_files_write_the_same_names(tmp_path: Path) -> None:
    policy = MergePolicy(fanout=4, max_segment_fraction=1.0)
    a = open_cache(tmp_path / "a", policy)
    entries = texts(50)
    a.add(vectors(entries))
    a.compact(entries)
    for i in range(4):  # four one-row segments: one tier-0 merge due
        a.add(vectors({key(f"x{i}"): f"x{i}"}))
    copy_dir(tmp_path / "a", tmp_path / "b")
    b = open_cache(tmp_path / "b", policy)
    live = {**entries, **{key(f"x{i}"): f"x{i}" for i in range(4)}}
    assert a.maintain(live) == b.maintain(live) == 1
    names_a = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names_a == sorted(p.name for p in (tmp_path / "b").iterdir())
    for name in names_a:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_both_machines_rewriting_the_base_at_once_lose_nothing(tmp_path: Path) -> None:
    entries = texts(40)
    a = open_cache(tmp_path / "a")
    a.add(vectors(entries))
    copy_dir(tmp_path / "a", tmp_path / "b")
    b = open_cache(tmp_path / "b")
    only_a, only_b = texts(3, "laptop"), texts(3, "desktop")
    a.add(vectors(only_a))
    b.add(vectors(only_b))
    a.compact({**entries, **only_a})  # each machine compacts what it knows, at once
    b.compact({**entries, **only_b})
    b_keys = (tmp_path / "b" / KEYS_FILE).read_bytes()
    copy_dir(tmp_path / "b", tmp_path / "a")  # the sync tool: b's vectors.keys.jsonl wins
    assert (tmp_path / "a" / KEYS_FILE).read_bytes() == b_keys
    merged = open_cache(tmp_path / "a")
    assert merged.missing({**entries, **only_a, **only_b}) == [] and merged.dropped == []


def test_rows_another_machine_just_sent_outlive_every_pass_of_a_maintain(tmp_path: Path) -> None:
    """Their notes may not have arrived yet: kept for RECENT_S, also once a base rewrite has
    taken them into this machine's own base (a second pass counted them dead and dropped
    them, and their notes were embedded again when they came)."""
    mine, theirs = texts(200, "mine"), texts(200, "theirs")
    a = open_cache(tmp_path / "a")
    a.add(vectors(mine))
    a.compact(mine)
    other = open_cache(tmp_path / "b")
    other.add(vectors(theirs))
    copy_dir(tmp_path / "b", tmp_path / "a")  # the sync tool delivers the other's group
    assert a.refresh() == 1
    edited = {**mine, key("edit"): "one edit"}
    a.add(vectors({key("edit"): "one edit"}))
    a.maintain(edited)  # the other's rows are not live here (yet): a base rewrite is due
    a.maintain(edited)  # and another pass
    assert a.missing(theirs) == []
    assert open_cache(tmp_path / "a").missing(theirs) == []  # on disk too


def test_a_cache_of_the_older_layout_loads_and_is_replaced_by_the_next_base(
    tmp_path: Path,
) -> None:
    entries = texts(10)
    rows = np.concatenate(list(vectors(entries).values()))
    spans = packed((h, 1) for h in entries)
    fingerprint = dict(EMB.fingerprint)
    old_npy = tmp_path / "vectors-000003.npy"
    write_group(tmp_path / KEYS_FILE, old_npy, fingerprint, spans, rows)
    cache = open_cache(tmp_path)
    assert cache.missing(entries) == [] and cache.stats()["base"] == old_npy.name
    cache.compact(entries)
    assert not old_npy.exists()
    header = json.loads((tmp_path / KEYS_FILE).read_text().splitlines()[0])
    assert header["vectors_file"].startswith("seg-") and header["model"] and header["dim"] == 16
    assert open_cache(tmp_path).missing(entries) == []


# -- torn and half-delivered groups ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["segment", "base"])
def test_a_half_delivered_group_costs_only_its_missing_blocks(tmp_path: Path, kind: str) -> None:
    entries = texts(600)
    source = open_cache(tmp_path / "other")
    if kind == "base":
        source.add(vectors(dict(list(entries.items())[:5])))
    source.add(vectors(entries))
    if kind == "base":
        source.compact(entries)
    big = max((tmp_path / "other").glob("seg-*.npy"), key=lambda p: p.stat().st_size)
    local = tmp_path / "local"
    copy_dir(tmp_path / "other", local)
    whole = big.read_bytes()
    (local / big.name).write_bytes(whole[: len(whole) // 2])  # the sync tool is halfway
    cache = open_cache(local)
    assert len(entries) - len(cache.missing(entries)) == BLOCK_ROWS  # 1 of 3 blocks complete
    assert "failed their block checksum" in cache.dropped[-1]
    (local / big.name).write_bytes(whole)  # the rest arrives while the daemon runs
    assert cache.refresh() == 1
    assert cache.missing(entries) == []


def test_refresh_picks_up_another_machines_segment_and_forgets_a_deleted_one(
    tmp_path: Path,
) -> None:
    mine = open_cache(tmp_path / "mine")
    mine.add(vectors(texts(3)))
    theirs = open_cache(tmp_path / "theirs")
    theirs.add(vectors(texts(2, "b")))
    assert mine.refresh() == 0 and mine.last_arrival is None
    copy_dir(tmp_path / "theirs", tmp_path / "mine")
    assert mine.refresh() == 1 and mine.last_arrival is not None
    assert mine.missing({**texts(3), **texts(2, "b")}) == []
    for path in (tmp_path / "theirs").glob("seg-*"):
        (tmp_path / "mine" / path.name).unlink()  # their merge deleted it; the rows stay
    mine.refresh()
    assert mine.stats()["disk_rows"] == 3 and mine.missing(texts(2, "b")) == []


# -- sharing the embedding work ----------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


class CountingHash(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=16)
        self.inputs = 0

    def embed_documents(self, texts: object) -> np.ndarray:  # type: ignore[override]
        self.inputs += len(texts)  # type: ignore[arg-type]
        return super().embed_documents(texts)  # type: ignore[arg-type]


def test_texts_another_active_daemon_owns_wait_for_its_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(sync_module, "time", clock)
    ours, other = tmp_path / "ours", tmp_path / "other"
    cache = open_cache(ours)
    cache.add(vectors(texts(1, "seed")))
    peer_file = ours / "peer-bbbbbbbbbbbb.json"
    peer_file.write_text('{"peer": "bbbbbbbbbbbb"}\n')
    an_hour_ago = time.time() - 3600
    os.utime(peer_file, (an_hour_ago, an_hour_ago))  # alive, but not started just now
    peers = Peers(ours, grace_s=3.0, own_id="aaaaaaaaaaaa")
    emb = CountingHash()
    sync = VectorSync(emb, cache, peers=peers)
    entries = {**texts(1, "seed"), **texts(40, "new")}

    assert sync.sync(entries, defer=True) == 40, "no other daemon active yet: embed it all"
    cache.last_arrival = clock.now  # another machine's segment arrived just now
    more = {**entries, **texts(40, "more")}
    embedded = sync.sync(more, defer=True)
    theirs = peers.owned_elsewhere(list(texts(40, "more")), ["bbbbbbbbbbbb"])
    assert 0 < len(theirs) < 40 and embedded == 40 - len(theirs)
    assert sync.deferred == len(theirs) and sync.pending == len(theirs)

    owner = open_cache(other)  # the owner embeds its share and the sync tool delivers it
    owner.add(vectors({h: t for h, t in more.items() if h in theirs}))
    copy_dir(other, ours)
    clock.now += 1.0
    assert sync.sync(more, defer=True) == 0 and sync.deferred == 0
    assert emb.inputs == 40 + 40 - len(theirs), "each text embedded once across both"

    latest = {**more, **texts(40, "late")}  # the owner is off this time
    sync.sync(latest, defer=True)
    waiting = sync.deferred
    assert waiting > 0
    clock.now += 3.5
    assert sync.sync(latest, defer=True) == waiting and cache.missing(latest) == []


def test_a_lone_daemon_never_waits(tmp_path: Path) -> None:
    cache = open_cache(tmp_path)
    peers = Peers(tmp_path, grace_s=3.0, own_id="aaaaaaaaaaaa")
    peers.announce()
    assert peers.others() == []
    cache.last_arrival = time.monotonic()  # something arrived, but from no live peer
    sync = VectorSync(CountingHash(), cache, peers=peers)
    assert sync.sync(texts(30), defer=True) == 30 and sync.deferred == 0


class Mirror:
    """A two-way sync tool: new and changed files go across, a deletion is deleted there."""

    def __init__(self, a: Path, b: Path) -> None:
        self.a, self.b = a, b
        self.seen: tuple[set[str], set[str]] = (set(), set())

    def step(self) -> None:
        names_a, names_b = ({p.name for p in d.iterdir() if p.is_file()} for d in (self.a, self.b))
        for src, dst, mine, theirs, seen_mine, seen_theirs in (
            (self.a, self.b, names_a, names_b, self.seen[0], self.seen[1]),
            (self.b, self.a, names_b, names_a, self.seen[1], self.seen[0]),
        ):
            for name in seen_mine - mine:  # deleted here since the last step
                with contextlib.suppress(FileNotFoundError):
                    (dst / name).unlink()
            for name in mine - theirs - seen_theirs:  # new here
                shutil.copy2(src / name, dst / name)
        self.seen = tuple(  # type: ignore[assignment]
            {p.name for p in d.iterdir() if p.is_file()} for d in (self.a, self.b)
        )


class OtherMachineHash(CountingHash):
    """The same model on another machine: the same vectors but for the last bits."""

    def embed_documents(self, texts: object) -> np.ndarray:  # type: ignore[override]
        return super().embed_documents(texts) + np.float32(1e-6)


@pytest.mark.timeout(60)  # many fsynced segment writes on two caches: 5-13 s on a busy disk
def test_two_active_daemons_never_rewrite_the_base_back_and_forth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both rewrote the base at once; each then found the other's base full of duplicate
    rows (dead) and rewrote its own again, at every edit: O(the vault) bytes per edit on
    both machines, each uploaded by the sync tool. One owner rewrites the base now."""
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
    caches = [open_cache(a), open_cache(b)]
    peers = [Peers(d, grace_s=3.0, own_id=c * 12) for d, c in ((a, "a"), (b, "b"))]
    embedders = [CountingHash(), OtherMachineHash()]
    syncs = [VectorSync(e, c, peers=p) for e, c, p in zip(embedders, caches, peers, strict=True)]
    rewrites: list[Path] = []
    real_compact = VectorCache.compact

    def compact(self: VectorCache, live: object) -> None:
        rewrites.append(self.cache_dir)
        real_compact(self, live)  # type: ignore[arg-type]

    monkeypatch.setattr(VectorCache, "compact", compact)
    entries = texts(200)
    syncs[0].sync(entries)
    mirror = Mirror(a, b)
    mirror.step()
    for p in peers:
        p.announce()
    mirror.step()
    syncs[1].sync(entries)
    rewrites.clear()
    vaults = [dict(entries), dict(entries)]
    rng = random.Random(0)
    most = 0
    in_flight: list[tuple[int, int, str, str]] = []  # notes on their way to the other machine
    for i in range(400):  # edits on either machine, notes and cache files synced irregularly
        here = rng.randrange(2)
        old = rng.choice(sorted(vaults[here]))
        del vaults[here][old]
        vaults[here][key(f"edit {i}")] = f"edit {i}"
        in_flight.append((i + rng.randrange(3), 1 - here, old, f"edit {i}"))
        for _, there, gone, text in [n for n in in_flight if n[0] <= i]:
            vaults[there].pop(gone, None)
            vaults[there][key(text)] = text
        in_flight = [n for n in in_flight if n[0] > i]
        for m in rng.sample([0, 1], 2):
            syncs[m].sync(vaults[m])
        if rng.random() < 0.3:
            mirror.step()
        most = max([most, *(int(c.stats()["disk_rows"]) for c in caches)])  # type: ignore[call-overload]
    for _, there, gone, text in in_flight:
        vaults[there].pop(gone, None)
        vaults[there][key(text)] = text
    for _ in range(2):
        for m in (0, 1):
            syncs[m].sync(vaults[m])
        mirror.step()
    assert len(set(rewrites)) == 1, "one daemon rewrites the base, never both"
    assert len(rewrites) <= 8, f"{len(rewrites)} base rewrites for 400 edits of 200 entries"
    assert most < 5 * len(vaults[0]), "and the files stay bounded"
    for d, vault in zip((a, b), vaults, strict=True):  # a start embeds nothing: nothing lost
        emb = CountingHash()
        VectorSync(emb, open_cache(d)).sync(vault)
        assert emb.inputs == 0
