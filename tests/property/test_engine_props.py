"""File-level: after any add/edit/delete/rename sequence, apply() equals a fresh scan (its
scores, its neighbours, its links both ways)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine
from wikimem_watch.retrieval.query import run_query
from wikimem_watch.retrieval.request import QueryRequest

NAMES = st.sampled_from(
    ["diary/2026-01-01.md", "diary/2026-01-02.md", "wiki/a.md", "wiki/b.md", "notes/c.md"]
)
WORDS = st.lists(
    st.sampled_from(
        ["cat", "火锅", "run", "moon", "年糕", "tea", "[[a]]", "[[b#Topic]]", "[[c]]", "[[gone]]"]
    ),
    min_size=1,
    max_size=6,
).map(" ".join)
# A title or an alias is a name a link can lead to: changing one re-routes links.
HEAD = st.sampled_from(["", "# gone\n\n", "# c\n\n", "---\naliases: [gone]\n---\n"])
BODY = st.tuples(
    HEAD,
    st.lists(st.tuples(st.sampled_from(["09:00", "10:30", "Later", "Topic"]), WORDS), max_size=4),
).map(lambda hs: hs[0] + "".join(f"## {h}\n{t}\n\n" for h, t in hs[1]))
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), NAMES, BODY),
        st.tuples(st.just("delete"), NAMES, st.just("")),
        st.tuples(st.just("rename"), NAMES, NAMES),
    ),
    max_size=25,
)


def scores(engine: Engine, q: str) -> dict[str, float]:
    result = run_query(
        engine,
        QueryRequest.from_dict({"q": q, "k": 100, "expand_links": False, "parse_time": False}),
    )
    return {str(h["id"]): float(h["score"]) for h in result["hits"]}  # type: ignore[union-attr]


def scanned(root: Path) -> Engine:
    engine = Engine(load_config(root, {"embed": "hash"}))
    engine.scan()
    return engine


def links_of(engine: Engine) -> tuple[list[object], dict[str, list[tuple[str, object]]]]:
    """The unresolved links, and each note's backlinks as (entry id, link)."""
    back = {rel: [(e.id, link) for e, link in engine.backlinks(rel)] for rel in engine.files}
    return engine.unresolved_links(), back


def previous_of(engine: Engine) -> dict[str, str | None]:
    """Each entry → the entry before it in its day file (the ranking's "previous" term)."""
    prev = engine.previous_slots()
    out: dict[str, str | None] = {}
    for entry_id in engine.entries:
        slot = engine.slot_of(entry_id)
        assert slot is not None
        out[entry_id] = engine.slot_id(int(prev[slot])) if prev[slot] >= 0 else None
    return out


@settings(max_examples=60, deadline=None)
@given(OPS)
def test_live_engine_equals_fresh_scan(ops: list[tuple[str, str, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        live = Engine(load_config(root, {"embed": "hash"}))  # tracks vector keys too
        live.scan()
        for op, name, arg in ops:
            path = root / name
            if op == "write":
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(arg, encoding="utf-8")
                live.apply([name])
            elif op == "delete" and path.exists():
                path.unlink()
                live.apply([name])
            elif op == "rename" and path.exists() and name != arg:
                (root / arg).parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, root / arg)
                live.apply([name, arg])
            if len(name) % 2:  # the link map read (and so kept) between some operations
                assert links_of(live) == links_of(scanned(root))
        fresh = scanned(root)
        assert live.digest() == fresh.digest()
        assert live.embedding_inputs().keys() == fresh.embedding_inputs().keys()
        assert previous_of(live) == previous_of(fresh)
        assert links_of(live) == links_of(fresh)
        for q in ("cat", "火锅 tea", "moon run 年糕"):
            got, want = scores(live, q), scores(fresh, q)
            assert got.keys() == want.keys()
            for key in want:
                assert abs(got[key] - want[key]) < 1e-9
