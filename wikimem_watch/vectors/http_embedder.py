"""``HttpEmbedder``: any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

This module owns speaking to an embedding server: on the standard library only (urllib,
imported at the first request so the client path stays cheap), with batching, the e5
prefixes, retries with backoff and typed errors (``EmbedError``). The API key is read from
an environment variable at each request, never stored. numpy is imported lazily.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from wikimem_watch.vectors.embedders import EmbedError, _fingerprint, l2_normalize

if TYPE_CHECKING:
    import http.client
    import urllib.error
    import urllib.request

    import numpy as np
    import numpy.typing as npt

    FloatMatrix = npt.NDArray[np.float32]
    FloatVector = npt.NDArray[np.float32]

__all__ = ["DEFAULT_API_KEY_ENV", "HttpEmbedder"]

log = logging.getLogger(__name__)

DEFAULT_API_KEY_ENV = "WIKIMEM_WATCH_EMBED_API_KEY"
_READ_CHUNK = 64 * 1024


def _max_body_bytes(n_inputs: int) -> int:
    """The longest answer read for a batch: 1 MiB plus 256 KiB per input, far above a
    4096-dim vector in JSON (~90 KiB)."""
    return (1 << 20) + n_inputs * (256 << 10)


_E5_MODEL = re.compile(r"(^|[/_-])(multilingual-)?e5-(small|base|large)", re.IGNORECASE)


class HttpEmbedder:
    """An OpenAI-compatible ``/embeddings`` endpoint, spoken with urllib.

    The API key is read from the environment variable ``api_key_env`` at each request and
    sent as a Bearer token (absent → no header, fine for local servers). Prefixes ``None``
    means: "query: " / "passage: " for e5 models (their model card requires it), else "".
    Connection errors, 429 and 5xx are retried ``retries`` times with exponential backoff.
    A query is asked once, within ``query_timeout_s``: a user waits for it, and a query
    whose vector is late ranks with BM25 alone (``VectorService``).
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
        query_timeout_s: float = 3.0,
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
        self.query_timeout_s = query_timeout_s
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
            self._post(inputs[i : i + self.batch_size], self.timeout_s, self.retries)
            for i in range(0, len(inputs), self.batch_size)
        ]
        return l2_normalize(np.concatenate(parts, axis=0))

    def embed_query(self, text: str) -> FloatVector:
        query = [self.query_prefix + text[: self._max_chars]]
        return l2_normalize(self._post(query, self.query_timeout_s, 0)).reshape(-1)

    def _post(self, inputs: list[str], timeout_s: float, retries: int) -> FloatMatrix:
        import urllib.error  # here: urllib.request loads http.client, ssl and email (~10 ms)
        import urllib.request

        body = json.dumps({"model": self.model, "input": inputs}).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        opener = _no_redirects()
        for attempt in range(retries + 1):
            deadline = time.monotonic() + timeout_s
            try:
                with opener.open(request, timeout=timeout_s) as response:
                    raw = self._read_body(response, deadline, _max_body_bytes(len(inputs)))
                return self._parse(raw, len(inputs))
            except urllib.error.HTTPError as exc:
                error = _http_error(self.url, exc)
                retryable = exc.code == 429 or exc.code >= 500
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                reason = getattr(exc, "reason", exc)
                error = EmbedError(f"embedding endpoint {self.url} is unreachable: {reason}")
                retryable = True
            if not retryable or attempt == retries:
                raise error
            log.warning("%s; retry %d/%d", error.message, attempt + 1, retries)
            time.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _read_body(self, response: http.client.HTTPResponse, deadline: float, limit: int) -> bytes:
        """The answer's body, read within ``deadline`` in all (the socket timeout alone
        restarts with every byte: a server that trickles would hold a query forever) and
        refused past ``limit`` bytes (a runaway body would sit in the daemon's memory)."""
        parts: list[bytes] = []
        size = 0
        while chunk := response.read1(_READ_CHUNK):  # what has come, not a full chunk
            size += len(chunk)
            if size > limit:
                raise EmbedError(
                    f"embedding endpoint {self.url} sent more than {limit} bytes "
                    "for one batch: not read"
                )
            if time.monotonic() > deadline:
                raise TimeoutError("timed out reading the answer")
            parts.append(chunk)
        return b"".join(parts)

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


def _no_redirects() -> urllib.request.OpenerDirector:
    """An opener that follows no redirect: urllib would send the API key along to wherever
    a redirect points (another host included), so a redirect is an error naming it."""
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None  # urllib then raises the 3xx as an HTTPError

    return urllib.request.build_opener(NoRedirect)


def _http_error(url: str, exc: urllib.error.HTTPError) -> EmbedError:
    """The error for an HTTP status other than 200, naming the target of a redirect."""
    if 300 <= exc.code < 400:
        location = exc.headers.get("Location")
        return EmbedError(
            f"embedding endpoint {url} answered HTTP {exc.code}, a redirect to {location!r}: "
            "not followed (it would carry the API key); configure the final URL instead"
        )
    detail = exc.read(300).decode("utf-8", "replace").strip()
    return EmbedError(f"embedding endpoint {url} answered HTTP {exc.code}: {detail}")
