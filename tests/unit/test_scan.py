"""The cold scan on both cores (core/scan.py) gives exactly what one process gives."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wikimem_watch.config import load_config
from wikimem_watch.core import scan, scan_wire
from wikimem_watch.core.engine import Engine
from wikimem_watch.core.prepare import FilePreparer
from wikimem_watch.core.vault import iter_notes

needs_helper = pytest.mark.skipif(
    not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
    reason="a forked helper needs Linux and two CPUs",
)


class Helpers:
    """What the fixture saw: helpers started, chunks in all, and chunks run here."""

    def __init__(self) -> None:
        self.started = 0
        self.chunks = 0
        self.run_here = 0

    @property
    def helped(self) -> bool:
        return self.run_here < self.chunks


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch) -> Iterator[Helpers]:
    """Chunks of 3 items and a helper for any number of items, whatever the machine's load,
    waited for as long as it takes (so it always does its share), watched."""
    monkeypatch.setattr(scan, "CHUNK_ITEMS", 3)
    monkeypatch.setattr(scan, "AHEAD", 4)
    monkeypatch.setattr(scan, "LEAD", 4)
    monkeypatch.setattr(scan, "PARALLEL_MIN_ITEMS", 0)
    monkeypatch.setattr(scan, "HELPER_NICE", 0)
    monkeypatch.setattr(scan, "WAIT_CHUNKS", 10_000.0)
    monkeypatch.setattr(scan, "_cpu_free", lambda: True)
    seen = Helpers()
    start, run = scan._Shared._start, scan._Shared._run

    def watched_start(self: scan._Shared[object, object]) -> None:
        start(self)
        seen.started += self.proc is not None
        seen.chunks += len(self.chunks)

    def watched_run(self: scan._Shared[object, object], n: int) -> list[object]:
        seen.run_here += 1  # counted in this process only: the helper's count is its own
        return run(self, n)

    monkeypatch.setattr(scan._Shared, "_start", watched_start)
    monkeypatch.setattr(scan._Shared, "_run", watched_run)
    yield seen


def square_and_pid(x: int) -> tuple[int, int]:
    time.sleep(0.001)  # enough work for the helper to take a share
    return x * x, os.getpid()


@needs_helper
def test_results_come_in_order_and_the_helper_did_some(helpers: Helpers) -> None:
    got = list(scan.map_in_order(range(300), square_and_pid))
    assert [v for v, _ in got] == [x * x for x in range(300)]
    assert helpers.started == 1
    assert {pid for _, pid in got} - {os.getpid()}, "the helper ran no chunk"


@needs_helper
def test_a_chunk_that_fails_in_the_helper_is_run_again_here(helpers: Helpers) -> None:
    me = os.getpid()

    def flaky(x: int) -> int:
        if os.getpid() != me and x % 5 == 0:
            raise RuntimeError("only in the helper")
        return x + 1

    assert list(scan.map_in_order(range(200), flaky)) == list(range(1, 201))


@needs_helper
def test_a_helper_that_dies_leaves_its_chunks_to_the_caller(helpers: Helpers) -> None:
    me = os.getpid()

    def deadly(x: int) -> int:
        if os.getpid() != me and x >= 20:
            os._exit(3)  # the helper is killed in the middle of the scan
        return -x

    assert list(scan.map_in_order(range(200), deadly)) == [-x for x in range(200)]


@needs_helper
def test_a_helper_too_slow_to_help_is_given_up(
    helpers: Helpers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan, "WAIT_CHUNKS", 1.0)
    me = os.getpid()

    def slow_there(x: int) -> int:
        time.sleep(0.001 if os.getpid() == me else 0.5)  # the helper gets no CPU time
        return x * 3

    assert list(scan.map_in_order(range(120), slow_there)) == [x * 3 for x in range(120)]
    assert helpers.started == 1
    assert helpers.run_here == helpers.chunks  # everything was done here in the end


@needs_helper
def test_an_error_reaches_the_caller_as_in_one_process(helpers: Helpers) -> None:
    def broken(x: int) -> int:
        if x == 150:
            raise ValueError("bad item")
        return x

    with pytest.raises(ValueError, match="bad item"):
        list(scan.map_in_order(range(200), broken))


@contextlib.contextmanager
def another_thread() -> Iterator[None]:
    """A second Python thread alive meanwhile, as in the daemon: no fork is safe."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def test_no_helper_below_the_threshold_nor_a_fork_beside_another_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert isinstance(scan.map_in_order(range(10), square_and_pid), map)
    monkeypatch.setattr(scan, "_cpu_free", lambda: True)
    monkeypatch.setattr(sys, "platform", "linux")
    assert scan.helper_kind(10) == "fork"
    with another_thread():
        assert scan.helper_kind(scan.EXEC_MIN_ITEMS - 1) is None
        assert scan.helper_kind(scan.EXEC_MIN_ITEMS) == "exec"
        items = range(scan.EXEC_MIN_ITEMS - 1)
        assert isinstance(scan.map_in_order(items, square_and_pid, min_items=0), map)
    monkeypatch.setattr(scan, "_cpu_free", lambda: False)
    assert scan.helper_kind(10**6) is None


@needs_helper
def test_beside_another_thread_work_that_does_not_pickle_is_done_here(
    helpers: Helpers, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scan, "EXEC_MIN_ITEMS", 0)
    with another_thread():
        assert list(scan.map_in_order(range(100), lambda x: x - 1)) == list(range(-1, 99))
    assert helpers.started == 0 and helpers.chunks == 34 and helpers.run_here == 34


# ---------------------------------------------------------------------- the engine


def _vault(root: Path) -> Path:
    """A few hundred notes of every kind the scan meets, and some it must skip."""
    (root / "diary").mkdir(parents=True)
    (root / "wiki").mkdir()
    for day in range(1, 121):
        sections = "".join(
            f"## {h:02d}:{day % 60:02d}\n\nWalked {day} km #run with [[wiki/w{h % 7}]] "
            f"和小周吃火锅{'很好吃' * (day % 3)} café\n\n"
            f"<!-- wikimem: owner=user:a | ts=2026-03-{day % 28 + 1:02d}T{h:02d}:00:00 -->\n\n"
            for h in range(7, 7 + day % 5)
        )
        (root / "diary" / f"2026-{day // 31 + 1:02d}-{day % 28 + 1:02d}.md").write_text(
            f"# Day {day}\n\n{sections}", encoding="utf-8"
        )
    for n in range(40):
        (root / "wiki" / f"w{n}.md").write_text(
            f"---\ntitle: Topic {n}\ntags: [t{n % 3}, x]\naliases: [A{n}]\n---\n\nPreamble {n}.\n\n"
            f"## Item {n}\n\n```\n## not a heading\n```\n\nText {n} ~~~ `#code` #real\n\n"
            f"## Item {n}\n\nSame heading twice.\n",
            encoding="utf-8",
        )
    (root / "diary" / "not-a-date.md").write_text("## 10:00\n\nnote\n", encoding="utf-8")
    (root / "wiki" / "latin1.md").write_bytes(b"## Caf\xe9\n\nbad bytes\n")
    (root / "wiki" / "binary.md").write_bytes(b"## a\x00b\n")
    (root / "wiki" / "link.md").symlink_to(root / "wiki" / "w1.md")
    (root / "wiki" / "crlf.md").write_bytes(b"# T\r\n\r\n## A\r\ntext\r\n")
    _age(root)
    return root


def _age(root: Path) -> None:
    """Every file a minute old: no scan finds one "racy" (written within 2 s of reading it,
    ``prepare.RACY_NS``), so two scans of the vault seconds apart on a loaded machine keep
    the same file records."""
    then = time.time() - 60
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, (then, then))


def slow_here(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """Each file takes ``seconds`` longer to prepare in this process (a helper started as a
    new interpreter imports the real preparer): time for the helper to take a share."""
    prepare = FilePreparer.__call__

    def slow(self: FilePreparer, rel: str, *args: object, **kw: object) -> object:
        time.sleep(seconds)
        return prepare(self, rel, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(FilePreparer, "__call__", slow)


def _state(engine: Engine) -> tuple[object, ...]:
    """Everything a scan builds, the index's layout (slots, term ids, postings) included."""
    index = engine.index
    slots = index.live_slots().tolist()
    return (
        dict(engine.entries),
        engine.files,
        engine.skipped,
        engine.days,
        engine.names,
        engine.digest(),
        engine.generation,
        engine._links_to,
        [engine.slot_entry(s) for s in slots],
        engine.previous_slots()[slots].tolist(),
        [(tid, term, *(a.tolist() for a in index.postings(tid))) for tid, term in index.terms()],
        index.avg_doc_len,
        len(index),
    )


@needs_helper
def test_a_cold_scan_with_the_helper_equals_one_in_one_process(
    tmp_path: Path, helpers: Helpers, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault = _vault(tmp_path / "vault")
    config = load_config(vault)
    slow_here(monkeypatch, 0.001)
    both = Engine(config)
    both.scan()
    assert helpers.started == 1 and helpers.helped, "the helper took no share of the scan"
    monkeypatch.setattr(scan, "PARALLEL_MIN_ITEMS", 10**9)
    alone = Engine(config)
    alone.scan()
    assert helpers.started == 1
    assert len(alone.entries) > 300 and alone.skipped and alone._links_to
    assert _state(both) == _state(alone)
    # and they stay equal through later edits (applied in this process, as the daemon does)
    (vault / "wiki" / "w3.md").write_text("## New\n\nnew words 新词\n", encoding="utf-8")
    (vault / "diary" / "2026-01-02.md").unlink()
    _age(vault)
    for engine in (both, alone):
        engine.apply(["wiki/w3.md", "diary/2026-01-02.md"])
    assert _state(both) == _state(alone)


@needs_helper
def test_a_new_interpreter_that_cannot_read_its_work_leaves_it_to_the_caller(
    helpers: Helpers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``square_and_pid`` pickles by reference to this test module, which a new interpreter
    cannot import: it says so and ends, and the caller does every chunk itself."""
    monkeypatch.setattr(scan, "EXEC_MIN_ITEMS", 0)
    with another_thread():
        got = list(scan.map_in_order(range(300), square_and_pid))
    assert [v for v, _ in got] == [x * x for x in range(300)]
    assert {pid for _, pid in got} == {os.getpid()}
    assert helpers.started == 1 and helpers.run_here == helpers.chunks


@needs_helper
def test_beside_another_thread_a_cold_scan_shares_files_with_a_new_interpreter(
    tmp_path: Path, helpers: Helpers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's case: a fork is unsafe there, so the helper is a new interpreter that
    rebuilds the preparer from the config it is sent; the engine it helps build is the same
    as one built in one process."""
    vault = _vault(tmp_path / "vault")
    config = load_config(vault)
    slow_here(monkeypatch, 0.005)
    monkeypatch.setattr(scan, "EXEC_MIN_ITEMS", 0)
    started: list[object] = []
    start_exec = scan._Shared._start_exec

    def watched(self: scan._Shared[object, object]) -> None:
        start_exec(self)
        started.append(self.proc)

    monkeypatch.setattr(scan._Shared, "_start_exec", watched)
    with another_thread():
        both = Engine(config)
        both.scan()
    assert len(started) == 1 and isinstance(started[0], subprocess.Popen)
    assert started[0].returncode is not None  # it ended with the scan
    assert helpers.helped, "the helper took no share of the scan"
    monkeypatch.setattr(scan, "PARALLEL_MIN_ITEMS", 10**9)
    alone = Engine(config)
    alone.scan()
    assert len(started) == 1
    assert _state(both) == _state(alone)


@needs_helper
def test_a_new_interpreter_imports_nothing_from_where_the_caller_runs(
    tmp_path: Path, helpers: Helpers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon started inside a vault synced from elsewhere: Python modules there (ours
    shadowed, or the standard library's) are never run by the helper (ADR-0010)."""
    vault = _vault(tmp_path / "vault")
    marker = tmp_path / "ran"
    for name in ("wikimem_watch/__init__.py", "pickle.py", "gc.py"):
        (vault / name).parent.mkdir(exist_ok=True)
        (vault / name).write_text(f"open({str(marker)!r}, 'a').write({name!r})\n")
    monkeypatch.chdir(vault)
    monkeypatch.setattr(scan, "EXEC_MIN_ITEMS", 0)
    slow_here(monkeypatch, 0.005)
    with another_thread():
        Engine(load_config(vault)).scan()
    assert helpers.started == 1 and helpers.helped
    assert not marker.exists()


def test_a_stop_ends_an_apply_between_batches_and_the_next_one_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikimem_watch.core import engine as engine_module

    vault = _vault(tmp_path / "vault")
    monkeypatch.setattr(engine_module, "_BULK_ENTRIES", 40)
    engine = Engine(load_config(vault, {"snapshot": False}))
    asked: list[int] = []

    def stop() -> bool:
        asked.append(len(engine.files))
        return len(asked) == 2

    on_disk = sorted(iter_notes(vault, engine.note_filter, {}))
    stats = engine.apply(on_disk, stop)
    assert len(asked) == 2 and 0 < len(engine.files) + len(engine.skipped) < len(on_disk)
    assert len(stats.changed) == len(engine.files)
    engine.scan()  # the files left out are read now; the rest are unchanged
    monkeypatch.setattr(scan, "PARALLEL_MIN_ITEMS", 10**9)
    fresh = Engine(load_config(vault, {"snapshot": False}))
    fresh.scan()
    assert dict(engine.entries) == dict(fresh.entries) and engine.digest() == fresh.digest()


@needs_helper
def test_only_a_cold_scan_forks(example_vault: Path, helpers: Helpers) -> None:
    engine = Engine(load_config(example_vault))
    engine.scan()
    assert helpers.started == 1
    engine.scan()  # a rescan compares with what is indexed: always in this process
    assert helpers.started == 1


@needs_helper
def test_the_result_pipe_has_room_for_several_chunks() -> None:
    import fcntl

    read_end, write_end = os.pipe()
    try:
        scan_wire.widen(read_end)
        allowed = int(Path("/proc/sys/fs/pipe-max-size").read_text())
        assert fcntl.fcntl(read_end, fcntl.F_GETPIPE_SZ) >= min(allowed, 1 << 20)
    finally:
        os.close(read_end)
        os.close(write_end)


def _hits(engine: Engine, q: str) -> object:
    from wikimem_watch.retrieval.query import run_query
    from wikimem_watch.retrieval.request import QueryRequest

    result = run_query(engine, QueryRequest.from_dict({"q": q, "k": 50, "now": "2026-11-29"}))
    return result["hits"]


def test_a_query_between_the_batches_of_a_cold_scan_sees_the_files_swapped_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold scan indexes in bulk (ADR-0019, addendum); the engine lock is free between
    batches, and a query there answers as an engine holding just those files would (it
    settles the bulk build, which then goes on batch by batch). The scan ends equal to one
    nobody queried, and stays so through later edits."""
    from wikimem_watch.core import engine as engine_module

    monkeypatch.setattr(scan, "PARALLEL_MIN_ITEMS", 10**9)
    monkeypatch.setattr(engine_module, "_BULK_ENTRIES", 40)
    vault = _vault(tmp_path / "vault")
    config = load_config(vault)
    queries = ["walked run", "火锅 好吃", "topic item preamble", "café"]
    swap = Engine._swap
    seen: list[bool] = []

    def swap_then_query(self: Engine, batch: list[object], stats: object) -> None:
        swap(self, batch, stats)  # type: ignore[arg-type]
        if self is queried and len(seen) in (2, 5):
            seen.append(self.index._bulk is not None)
            same = Engine(config)
            same.apply(list(self.files))  # those files, in that order: the same slots
            for q in queries:
                assert _hits(self, q) == _hits(same, q)
            assert self.index._bulk is None  # the query settled it
        else:
            seen.append(False)

    monkeypatch.setattr(Engine, "_swap", swap_then_query)
    queried = Engine(config)
    queried.scan()
    assert seen[2] and len(seen) > 6
    monkeypatch.setattr(Engine, "_swap", swap)
    alone = Engine(config)
    alone.scan()
    assert _state(queried) == _state(alone)
    for q in queries:
        assert _hits(queried, q) == _hits(alone, q)
    (vault / "wiki" / "w3.md").write_text("## New\n\nnew words 新词 run\n", encoding="utf-8")
    (vault / "diary" / "2026-01-02.md").unlink()
    _age(vault)
    for engine in (queried, alone):
        engine.apply(["wiki/w3.md", "diary/2026-01-02.md"])
    assert _state(queried) == _state(alone)
    for q in [*queries, "新词"]:
        assert _hits(queried, q) == _hits(alone, q)


def test_a_cold_scan_in_bulk_equals_one_indexed_batch_by_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikimem_watch.core.bm25 import Bm25Index

    monkeypatch.setattr(scan, "PARALLEL_MIN_ITEMS", 10**9)
    vault = _vault(tmp_path / "vault")
    config = load_config(vault)
    in_bulk = Engine(config)
    in_bulk.scan()
    monkeypatch.setattr(Bm25Index, "start_bulk", lambda self: None)
    by_batch = Engine(config)
    by_batch.scan()
    assert _state(in_bulk) == _state(by_batch)
    assert len(by_batch.entries) > 300
    # the digests of a batch's files, taken together, are each file's own
    for rel, record in in_bulk.files.items():
        assert record.digest == in_bulk._file_digest(rel, record.slots) != 0
    (vault / "wiki" / "w5.md").write_text("## Walked\n\nWalked 3 km 新词\n", encoding="utf-8")
    (vault / "wiki" / "w6.md").unlink()
    _age(vault)
    for engine in (in_bulk, by_batch):
        engine.apply(["wiki/w5.md", "wiki/w6.md"])
        engine.index.flush(force=True)
    assert _state(in_bulk) == _state(by_batch)
    for q in ["walked", "新词", "topic item"]:
        assert _hits(in_bulk, q) == _hits(by_batch, q)
