"""The entry store (ADR-0018): an entry put in comes back field for field, whatever its
fields hold, through drops, slot reuse and compaction; and the packed columns under it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem_watch.core.columns import ListColumn, StrColumn
from wikimem_watch.core.models import Entry, Link
from wikimem_watch.core.parse import parse_note
from wikimem_watch.core.store import EntryStore

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30) | st.sampled_from(
    ["", "火锅", "\udcff lone surrogate", "a|b=c", "=", "|"]
)
OPT = st.none() | TEXT


@st.composite
def entries(draw: st.DrawFn, path: str = "diary/2026-01-02.md") -> Entry:
    diary = draw(st.booleans())
    meta = draw(st.lists(st.tuples(TEXT, TEXT), max_size=3))
    links = draw(
        st.lists(
            st.builds(
                Link,
                TEXT,
                OPT,
                OPT,
                st.booleans(),
                st.sampled_from(["wikimem", "obsidian"]),
            ),
            max_size=3,
        )
    )
    minute = draw(st.none() | st.integers(0, 1439))
    return Entry(
        id=path + draw(st.sampled_from(["", "#x", "#09:00~2"]) | TEXT.map(lambda t: "#" + t)),
        kind="diary" if diary else "wiki",
        path=path,
        heading=draw(TEXT),
        line=draw(st.integers(1, 10**6)),
        text=draw(TEXT),
        hash=draw(st.binary(min_size=16, max_size=16)).hex(),
        date="2026-01-02" if diary else None,
        time=None if minute is None or not diary else f"{minute // 60:02d}:{minute % 60:02d}",
        ts=draw(OPT),
        owner=draw(OPT),
        source=draw(OPT),
        meta=tuple(meta),
        tags=tuple(draw(st.lists(TEXT, max_size=3))),
        links=tuple(links),
        title=draw(OPT),
        aliases=tuple(draw(st.lists(TEXT, max_size=2))),
    )


@settings(max_examples=200, deadline=None)
@given(st.lists(entries(), min_size=1, max_size=6), st.data())
def test_every_entry_comes_back_field_for_field(batch: list[Entry], data: st.DataObject) -> None:
    store = EntryStore()
    slots = list(range(len(batch)))
    store.put(slots, batch)
    assert [store.entry(s) for s in slots] == batch
    # Drop some, put others into the freed slots, compact: the rest is untouched.
    gone = data.draw(st.lists(st.sampled_from(slots), unique=True))
    store.drop(gone)
    again = data.draw(st.lists(entries(), min_size=len(gone), max_size=len(gone)))
    store.put(gone, again)
    want = dict(zip(slots, batch, strict=True)) | dict(zip(gone, again, strict=True))
    store.compact(np.array(slots, dtype=np.int64), force=True)
    assert {s: store.entry(s) for s in slots} == want
    assert all(store.entry_id(s) == want[s].id for s in slots)


def test_parsed_entries_need_no_overrides() -> None:
    """ts, owner and source are read from meta, which the parser writes as k=v|k=v."""
    note = (
        "## 09:00\nhello <!-- wikimem: owner=user:x | source=conv_1 | ts=2026-01-02T09:00 -->\n"
        "## 10:00\nbad ts <!-- wikimem: ts=yesterday | odd.key=a=b -->\n"
    )
    parsed = parse_note("diary/2026-01-02.md", note).entries
    store = EntryStore()
    store.put([0, 1], parsed)
    assert [store.entry(s) for s in (0, 1)] == list(parsed)
    assert store.overrides["owner"] == store.overrides["source"] == store.overrides["meta"] == {}
    assert store.overrides["ts"] == {1: None}  # an invalid ts is None, though meta holds it


def test_an_entry_the_columns_cannot_hold_is_refused() -> None:
    entry = parse_note("wiki/a.md", "## A\nx\n").entries[0]
    store = EntryStore()
    for bad in (
        {"id": "elsewhere.md#A"},
        {"hash": "ABC"},
        {"kind": "diary", "date": "2026-1-2"},
        {"kind": "diary", "date": "2026-01-02", "time": "9:00"},
    ):
        with pytest.raises(ValueError):
            store.put([0], [Entry(**{**_fields(entry), **bad})])  # type: ignore[arg-type]


def _fields(entry: Entry) -> dict[str, object]:
    return {name: getattr(entry, name) for name in entry.__slots__}  # type: ignore[attr-defined]


def test_a_string_column_gathers_runs_and_reclaims_garbage() -> None:
    col = StrColumn()
    col.grow(4)
    col.put([0, 1, 2, 3], ["ab", None, "火", ""])
    assert [col.get(r) for r in range(4)] == ["ab", None, "火", ""]
    blob, sizes = col.gather(np.array([0, 1, 2, 3]))
    assert blob == "ab火".encode() and sizes.tolist() == [2, -1, 3, 0]
    col.put([0], ["x" * (1 << 21)])  # the old "ab" is garbage; then the big one
    col.put([0], ["cd"])
    assert col.wasteful()
    assert col.compact(np.array([0, 1, 2, 3]))
    assert col.garbage == 0 and col.nbytes == len("cd火".encode())
    assert [col.get(r) for r in range(4)] == ["cd", None, "火", ""]


def test_a_list_column_keeps_each_rows_items_through_compaction() -> None:
    lst = ListColumn(2, flags=True)
    lst.grow(3)
    lst.put([0, 1, 2], [[("a", None)], [], [("b", "c"), ("d", "e")]], [[1], [], [2, 3]])
    lst.drop([0])
    lst.put([0], [[("z", "y")]], [[0]])
    assert lst.compact(np.array([0, 1, 2]), force=True)
    assert [lst.get(r) for r in range(3)] == [[("z", "y")], [], [("b", "c"), ("d", "e")]]
    assert [lst.item_flags(r) for r in range(3)] == [[0], [], [2, 3]]
    assert lst.items == 3


def test_a_string_columns_values_are_read_in_one_piece_or_row_by_row() -> None:
    ascii_col = StrColumn.packed(b"abcde", np.array([2, -1, 3], dtype=np.int32))
    assert ascii_col.values(3) == ["ab", None, "cde"]
    mixed = StrColumn.packed("a火b".encode(), np.array([1, 3, 1], dtype=np.int32))
    assert mixed.values(3) == ["a", "火", "b"]


def test_a_string_column_streams_what_it_gathers_in_bounded_pieces() -> None:
    # A loaded base, then rows written to the tail, one rewritten: runs cross the two.
    col = StrColumn.packed("ab火cd".encode(), np.array([2, 3, 2], dtype=np.int32))
    col.grow(6)
    col.put([3, 4], ["efg", None])
    col.put([5], ["hi火"])
    col.put([1], ["jk"])
    for rows in ([0, 1, 2, 3, 4, 5], [5, 3, 0, 2], [4], []):
        order = np.array(rows, dtype=np.int64)
        blob, sizes = col.gather(order)
        for limit in (1, 2, 5, 1 << 20):
            pieces = list(col.pieces(order, limit))
            assert b"".join(pieces) == blob
            assert all(0 < len(p) <= limit for p in pieces)
        assert sizes.tolist() == col.size[order].tolist()
    rows = np.array([0, 1, 2, 3, 5], dtype=np.int64)
    assert col.gather(rows)[0] == "abjkcdefghi火".encode()
