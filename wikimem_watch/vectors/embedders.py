"""Text embedders: the ``Embedder`` protocol, ``EmbedError`` and what every implementation shares.

This module owns what an embedder is: it turns text into L2-normalised float32 vectors and
nothing else (no caching: that is ``cache.py``; no retrieval). Implementations, one module
each, build on the helpers here:

- ``http_embedder.py``: ``HttpEmbedder``, any OpenAI-compatible ``/embeddings`` endpoint.
- ``local_embedder.py``: ``LocalEmbedder``, multilingual-e5-small in-process (``[local]``).
- ``hash_embedder.py``: ``HashEmbedder``, a deterministic test double with no semantics.

``service.py`` picks one from the configuration (``make_embedder``); ``chunks.py`` cuts long
texts for them. Every embedder exposes a ``fingerprint``: everything that changes the
vectors (``_fingerprint`` here). The vector cache stores it and refuses vectors whose
fingerprint differs. numpy is imported lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from wikimem_watch.errors import WatchError
from wikimem_watch.vectors.chunks import CHUNKER

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
    FloatVector = npt.NDArray[np.float32]

__all__ = ["EmbedError", "Embedder", "l2_normalize"]


class EmbedError(WatchError):
    """An embedder cannot produce vectors: endpoint down, bad answer, missing extra."""

    code = -32010


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of one fixed dimension."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int:
        """Vector dimension; 0 while unknown (an HTTP model not yet called)."""
        ...

    @property
    def max_chars(self) -> int:
        """Longest text sent as one input; longer entries are chunked by the caller."""
        ...

    @property
    def fingerprint(self) -> dict[str, object]:
        """Everything that changes the vectors (kind, model, dim, prefixes, chunking)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix: ...

    def embed_query(self, text: str) -> FloatVector: ...


def _fingerprint(
    kind: str, model: str, dim: int | None, query_prefix: str, document_prefix: str, max_chars: int
) -> dict[str, object]:
    """The fingerprint every embedder shares; ``dim`` None or 0 (not yet known) is left out."""
    fp: dict[str, object] = {"kind": kind, "model": model}
    if dim:
        fp["dim"] = dim
    fp.update(
        query_prefix=query_prefix,
        document_prefix=document_prefix,
        normalize="l2",
        max_chars=max_chars,
        chunker=CHUNKER,
    )
    return fp


def l2_normalize(matrix: FloatMatrix) -> FloatMatrix:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    import numpy as np

    m = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    out: FloatMatrix = (m / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)
    return out


class _Sized:
    """``dim`` and ``max_chars`` of an embedder that knows both from the start."""

    _dim: int
    _max_chars: int

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def max_chars(self) -> int:
        return self._max_chars
