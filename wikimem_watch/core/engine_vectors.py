"""The engine's vector side: each entry's vector key, and handing the changes to the sync.

A mixin of :class:`~wikimem_watch.core.engine.Engine`, which owns the state. With an embedder
configured the engine keys each entry by the content hash of the text embedded for it (a
column saved in the index snapshot, ``vector_keys.py``; ADR-0020), remembers the keys set and
dropped since the last sync, and hands those to the vector service after each applied batch,
so a sync looks at what changed, not at the whole vault (ADR-0020, addendum).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..vectors.texts import embedding_texts
from .store import EntryStore
from .vector_keys import EmbeddingInputs, VectorKeys, hex_keys, key_of

if TYPE_CHECKING:
    from ..vectors.service import VectorService
    from .engine import FileRecord

# Vector keys set since the last sync, remembered so the sync looks at those only; past
# this many (a sync that has not run for a long while) it looks at every key instead.
FRESH_KEYS_KEPT = 65536


class EngineVectors:
    """The vector side of the engine (state declared here for the type checker)."""

    lock: threading.RLock
    store: EntryStore
    files: dict[str, FileRecord]
    vector_keys: VectorKeys
    vectors: VectorService | None
    _fresh_vector_keys: set[str] | None
    _removed_vector_keys: int

    def sync_vectors(self, *, rebuild: bool = False) -> None:
        """Queue the entries for background embedding (only keys the cache lacks cost a call).

        The daemon calls this once per applied batch, not per file. With it go the keys set
        and the count of keys dropped since the last call, so the sync looks at those only
        and an edit costs the same at 10k and 1M entries (ADR-0020); every key is looked at
        after a start, a rebuild, or more than ``FRESH_KEYS_KEPT`` keys.
        """
        if self.vectors is None:
            return
        with self.lock:
            fresh, self._fresh_vector_keys = self._fresh_vector_keys, set()
            removed, self._removed_vector_keys = self._removed_vector_keys, 0
        if rebuild:
            fresh = None
        self.vectors.update(
            self.embedding_inputs(lazy=fresh is not None),
            fresh=fresh,
            removed=removed,
            rebuild=rebuild,
        )

    def embedding_inputs(self, *, lazy: bool = False) -> EmbeddingInputs:
        """Every live entry's vector key (content hash of its embedded text) → that text,
        made when asked (``vector_keys.EmbeddingInputs``). The keys are a copy of the moment;
        ``lazy``: of the moment they are first listed, which takes the engine's lock then, so
        only a sync that lists them holding no other lock may have it (``VectorSync.sync``).

        Empty unless an embedder is configured (``tracks_vectors``).
        """
        if lazy:
            return EmbeddingInputs(self._live_vector_keys, self.embedded_text)
        keys = self._live_vector_keys()
        return EmbeddingInputs(lambda: keys, self.embedded_text)

    def _live_vector_keys(self) -> npt.NDArray[np.uint8]:
        with self.lock:
            return self.vector_keys.live()

    def embedded_text(self, key: str) -> str | None:
        """The text embedded for the live entries with vector key ``key``; None when no
        live entry has it (edited or removed since the key was read)."""
        with self.lock:
            for slot in self.vector_keys.slots_of([key]).tolist():
                path = self.store.path[slot]
                record = self.files.get(path) if path is not None else None
                if record is None:
                    continue
                slots = list(record.slots)
                text = embedding_texts([self.store.entry(s) for s in slots])[slots.index(slot)]
                if key_of(text).hex() == key:
                    return text
            return None

    def _track_vectors(self, slots: list[int], texts: list[str]) -> None:
        self.vector_keys.set(slots, texts)  # keyed by the embedded text, never a path
        fresh = self._fresh_vector_keys
        if fresh is not None:
            fresh.update(hex_keys(self.vector_keys.raw[slots]))
            if len(fresh) > FRESH_KEYS_KEPT:
                self._fresh_vector_keys = None  # the next sync looks at every key
