"""After a snapshot is written, any edits, then a start from it: the engine equals a fresh
scan (ADR-0015), and only the files those edits touched were read again."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.property.test_engine_props import previous_of, scores
from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.core.snapshot import scan_with_snapshot

NAMES = st.sampled_from(
    ["diary/2026-01-01.md", "diary/2026-01-02.md", "wiki/a.md", "wiki/b.md", "notes/c.md"]
)
WORDS = st.lists(
    st.sampled_from(["cat", "火锅", "run", "[[wiki/a]]", "[[b#Topic]]", "#tag", "tea"]),
    min_size=1,
    max_size=6,
).map(" ".join)
BODY = st.one_of(
    st.lists(
        st.tuples(st.sampled_from(["09:00", "10:30", "Later", "Topic"]), WORDS), max_size=4
    ).map(lambda secs: "".join(f"## {h}\n{t}\n\n" for h, t in secs)),
    st.just("\x00binary"),
    st.just("---\naliases: [Bee]\n---\n# Title\nprose only\n"),
)
FILES = st.dictionaries(NAMES, BODY, max_size=5)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), NAMES, BODY),
        st.tuples(st.just("delete"), NAMES, st.just("")),
        st.tuples(st.just("rename"), NAMES, NAMES),
        st.tuples(st.just("touch"), NAMES, st.just("")),
    ),
    max_size=12,
)
OLD = time.time() - 100_000


def _put(root: Path, rel: str, body: str, mtime: float) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    os.utime(path, (mtime, mtime))


@settings(max_examples=40, deadline=None)
@given(FILES, OPS)
def test_start_from_snapshot_after_edits_equals_fresh_scan(
    files: dict[str, str], ops: list[tuple[str, str, str]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        root.mkdir()
        flags = {"embed": "hash", "snapshot_dir": str(Path(tmp) / "snap")}
        for rel, body in files.items():
            _put(root, rel, body, OLD)
        scan_with_snapshot(Engine(load_config(root, flags)))
        touched: set[str] = set()
        for n, (op, name, arg) in enumerate(ops):
            path, when = root / name, OLD + 100 + n  # every change: a new, non-racy mtime
            if op == "write":
                _put(root, name, arg, when)
            elif op == "touch" and path.exists():
                os.utime(path, (when, when))  # same bytes, new stat: hashed, not re-parsed
            elif op == "delete" and path.exists():
                path.unlink()
            elif op == "rename" and path.exists() and name != arg:
                (root / arg).parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, root / arg)
                touched.add(arg)
            touched.add(name)
        restored = Engine(load_config(root, flags))
        stats = scan_with_snapshot(restored)
        binary = {p for p, body in files.items() if "\x00" in body}
        assert set(stats.changed) <= touched  # the rest came from the snapshot
        assert set(stats.skipped) <= touched | binary
        fresh = Engine(load_config(root, {"embed": "hash", "snapshot": False}))
        fresh.scan()
        assert restored.digest() == fresh.digest()
        assert restored.skipped == fresh.skipped
        assert restored.warnings() == fresh.warnings()
        assert restored.names == fresh.names
        assert sorted(map(str, restored.unresolved_links())) == sorted(
            map(str, fresh.unresolved_links())
        )  # the same links; listing order follows insertion
        assert restored.embedding_inputs() == fresh.embedding_inputs()
        assert previous_of(restored) == previous_of(fresh)
        for q in ("cat", "火锅 tea", "run prose bee"):
            got, want = scores(restored, q), scores(fresh, q)
            assert got.keys() == want.keys()
            for key in want:
                # Cosines are float32: the same vector scored through a differently laid
                # out matrix (a whole-matrix product or a gather) differs in the 8th digit.
                assert abs(got[key] - want[key]) < 1e-6


@settings(max_examples=20, deadline=None)
@given(FILES, st.lists(st.tuples(NAMES, BODY), max_size=8))
def test_a_restored_engine_stays_equal_to_fresh_scans_under_live_edits(
    files: dict[str, str], edits: list[tuple[str, str]]
) -> None:
    """Removing restored documents reads their terms from the loaded postings, and a
    compaction drops them: still equal to a fresh scan."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        root.mkdir()
        flags = {"snapshot_dir": str(Path(tmp) / "snap")}
        for rel, body in files.items():
            _put(root, rel, body, OLD)
        scan_with_snapshot(Engine(load_config(root, flags)))
        live = Engine(load_config(root, flags))
        assert scan_with_snapshot(live).changed == []
        for n, (rel, body) in enumerate(edits):
            _put(root, rel, body, OLD + 100 + n)
            live.apply([rel])
        live.index.flush(force=True)
        fresh = Engine(load_config(root, {"snapshot": False}))
        fresh.scan()
        assert live.digest() == fresh.digest()
        assert previous_of(live) == previous_of(fresh)
        for q in ("cat", "火锅 tea", "run prose bee"):
            got, want = scores(live, q), scores(fresh, q)
            assert got.keys() == want.keys()
            for key in want:
                assert abs(got[key] - want[key]) < 1e-9
