"""Each entry's vector key, as a column: what the engine keeps of the vector side.

An entry's vectors are cached under the content hash of the text embedded for it (ADR-0008:
the entry, read with the tail of the one before it), never under its path. The engine needs
that key per slot (the query path asks the cache for a candidate's cosine) and the slots of a
key (the nearest keys the cache finds join the candidates), and the sync needs every live
key and, for the few the cache lacks, their texts.

Kept as Python dicts (slot → key, key → slots, key → text) that cost ~70 MB and ~1.6 s of a
start from the index snapshot at 100k entries, ~700 MB and ~18 s at 1M, and a copy of every
text per applied batch. Here the key is 16 raw bytes in a numpy column, saved in the index
snapshot; a key's slots are found by binary search over the keys' first 8 bytes, sorted once,
plus a small table of the keys set since (sorted again when it grows past a sixteenth of
the keys, so an edit never waits for a sort of them all); and a text is made again from the
entries when the sync asks for it (``EmbeddingInputs``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["KEY_BYTES", "EmbeddingInputs", "VectorKeys", "hex_keys", "key_of"]

KEY_BYTES = 16  # blake2b-128 of the embedded text, as ``parse.text_hash`` (its hex)


def key_of(text: str) -> bytes:
    """The raw vector key of an embedded text (``parse.text_hash`` is its hex)."""
    return hashlib.blake2b(text.encode(), digest_size=KEY_BYTES).digest()


class VectorKeys:
    """Slot → raw key (all zeros: no key), and key → slots by binary search."""

    def __init__(self) -> None:
        self.raw = np.zeros((0, KEY_BYTES), dtype=np.uint8)
        self.has = np.zeros(0, dtype=bool)
        self._order: npt.NDArray[np.int64] | None = None  # slots with a key, by prefix
        self._prefix: npt.NDArray[np.uint64] | None = None  # their prefixes, ascending
        # Keys set since the sort → their slots. A slot dropped or keyed again since keeps
        # its old place in either: a lookup checks the slot's current key.
        self._recent: dict[bytes, set[int]] = {}

    def _grow(self, rows: int) -> None:
        have = self.has.size
        if rows <= have:
            return
        rows = max(rows, have + have // 2, 1024)
        raw = np.zeros((rows, KEY_BYTES), dtype=np.uint8)
        raw[:have] = self.raw
        has = np.zeros(rows, dtype=bool)
        has[:have] = self.has
        self.raw, self.has = raw, has

    def set(self, slots: Sequence[int], texts: Sequence[str]) -> None:
        """Key the entries at ``slots`` by the texts embedded for them."""
        if not slots:
            return
        self._grow(max(slots) + 1)
        rows = np.asarray(slots, dtype=np.int64)
        keys = [key_of(t) for t in texts]
        self.raw[rows] = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, KEY_BYTES)
        self.has[rows] = True
        if self._order is None:
            return  # sorted, with these, on the next lookup
        for slot, key in zip(slots, keys, strict=True):
            self._recent.setdefault(key, set()).add(slot)
        if len(self._recent) > max(4096, self._order.size // 16):
            self._order = None

    def load(self, slots: npt.NDArray[np.int64], raw: npt.NDArray[np.uint8]) -> None:
        """Take keys read from the index snapshot (``raw[i]`` is the key of ``slots[i]``)."""
        self._grow(int(slots.max()) + 1 if slots.size else 0)
        self.raw[slots] = raw
        self.has[slots] = True
        self._order = None
        self._recent.clear()

    def drop(self, slots: Sequence[int]) -> None:
        if not slots:
            return
        rows = np.asarray(slots, dtype=np.int64)
        rows = rows[rows < self.has.size]
        self.has[rows] = False
        self.raw[rows] = 0

    def hex(self, slot: int) -> str:
        """The key of ``slot`` as the vector cache names it."""
        return bytes(self.raw[slot]).hex()

    def live(self) -> npt.NDArray[np.uint8]:
        """Every keyed slot's key, raw, in slot order (a copy; duplicates included)."""
        return self.raw[self.has]

    def slots_of(self, keys: Iterable[str]) -> npt.NDArray[np.int64]:
        """Slots whose key is one of ``keys`` (hex; a malformed one matches nothing)."""
        wanted = []
        for key in keys:
            try:
                raw = bytes.fromhex(key)
            except ValueError:
                continue
            if len(raw) == KEY_BYTES:
                wanted.append(raw)
        if not wanted:
            return np.zeros(0, dtype=np.int64)
        order, prefix = self._sorted()
        firsts = np.frombuffer(b"".join(raw[:8] for raw in wanted), dtype=np.uint64)
        los = np.searchsorted(prefix, firsts, side="left").tolist()
        his = np.searchsorted(prefix, firsts, side="right").tolist()
        found: set[int] = set()
        for raw, lo, hi in zip(wanted, los, his, strict=True):
            found.update(int(s) for s in order[lo:hi] if self._keyed(int(s), raw))
            found.update(s for s in self._recent.get(raw, ()) if self._keyed(s, raw))
        return np.array(sorted(found), dtype=np.int64)

    def _keyed(self, slot: int, raw: bytes) -> bool:
        return bool(self.has[slot]) and self.raw[slot].tobytes() == raw

    def _sorted(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
        if self._order is None or self._prefix is None:
            slots = np.flatnonzero(self.has).astype(np.int64)
            prefix = np.ascontiguousarray(self.raw[slots, :8]).view(np.uint64).ravel()
            by = np.argsort(prefix, kind="stable")
            self._order, self._prefix = slots[by], prefix[by]
            self._recent.clear()
        return self._order, self._prefix


def hex_keys(raw: npt.NDArray[np.uint8]) -> list[str]:
    """Raw keys (rows of ``KEY_BYTES``) as the vector cache names them, in one C loop."""
    blob = np.ascontiguousarray(raw).tobytes().hex().encode("utf-32-le")
    return np.frombuffer(blob, dtype=f"<U{2 * KEY_BYTES}").tolist()  # type: ignore[no-any-return]


class EmbeddingInputs(Mapping[str, str]):
    """Every live entry's vector key → the text embedded for it, a text made when asked.

    Nothing is read until asked. The keys are those of the moment they are first listed
    (``raw`` copies the raw column under the engine's lock; they are written out as text
    once, by the sync's thread): a sync that only embeds the keys a batch added never lists
    them (ADR-0020). ``text_of`` makes a key's text from the engine as it is when asked: a key
    no live entry has (edited or removed since) has no text (a ``KeyError``), and the sync
    skips it; the next batch brings the new key.
    """

    def __init__(
        self,
        raw: Callable[[], npt.NDArray[np.uint8]],
        text_of: Callable[[str], str | None],
    ) -> None:
        self._raw = raw
        self._keys: list[str] | None = None  # each key once, in slot order
        self._set: frozenset[str] | None = None
        self._text_of = text_of

    def _ordered(self) -> list[str]:
        if self._keys is None:
            self._keys = list(dict.fromkeys(hex_keys(self._raw())))
        return self._keys

    def __getitem__(self, key: str) -> str:
        text = self._text_of(key)  # O(log n): never lists the keys
        if text is None:
            raise KeyError(key)
        return text

    def __contains__(self, key: object) -> bool:
        if self._set is None:
            self._set = frozenset(self._ordered())
        return key in self._set

    def __iter__(self) -> Iterator[str]:
        return iter(self._ordered())

    def __len__(self) -> int:
        return len(self._ordered())
