"""``HashEmbedder``: a deterministic hashed n-gram bag, a test double with no semantics.

This module owns the embedder the tests, the plumbing benchmarks and offline demos use:
same text → same vector in every process, no model and no network. It shares the
fingerprint and ``dim``/``max_chars`` helpers of ``embedders.py``. numpy is imported lazily.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from wikimem_watch.vectors.embedders import _fingerprint, _Sized, l2_normalize

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
    FloatVector = npt.NDArray[np.float32]

__all__ = ["HashEmbedder"]


class HashEmbedder(_Sized):
    """Deterministic hashed bag of character 2- and 3-grams: a TEST DOUBLE, not a model.

    Same text → same vector in every process (zlib.crc32, never Python's salted ``hash``).
    Texts sharing many n-grams get a high cosine, which is all the tests need. It has no
    notion of meaning; use it for tests, benchmarks of plumbing and offline demos only.
    """

    def __init__(self, dim: int = 64, max_chars: int = 1000) -> None:
        if dim < 1:
            raise ValueError(f"dim must be >= 1, got {dim!r}")
        self._dim = dim
        self._max_chars = max_chars

    @property
    def name(self) -> str:
        return f"hash-{self._dim}"

    @property
    def fingerprint(self) -> dict[str, object]:
        return _fingerprint("hash", "hash-ngram23-v1", self._dim, "", "", self._max_chars)

    def _vector(self, text: str, out: FloatVector) -> None:
        padded = " " + " ".join(text.lower().split()) + " "
        for n in (2, 3):
            for i in range(len(padded) - n + 1):
                out[zlib.crc32(padded[i : i + n].encode("utf-8")) % self._dim] += 1.0

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        import numpy as np

        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in zip(out, texts, strict=True):
            self._vector(text[: self._max_chars], row)
        return l2_normalize(out)

    def embed_query(self, text: str) -> FloatVector:
        return self.embed_documents([text]).reshape(-1)
