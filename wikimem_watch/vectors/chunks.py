"""Text chunking for the embedders: a long text cut into pieces an embedder takes whole.

This module owns ``chunk_text`` and ``CHUNKER``, the name of its rule. Every embedder's
fingerprint (``embedders.py``) carries ``CHUNKER``, so a change to what ``chunk_text``
returns, with ``CHUNKER`` bumped, makes older cached vectors a mismatch, never a silent mix.
Pure: no numpy, no embedder; the sync (``sync.py``) chunks each text before embedding it.
"""

from __future__ import annotations

import re

__all__ = ["CHUNKER", "MAX_CHUNKS", "chunk_text"]

CHUNKER = "paragraph-sentence-v1"  # bump when chunk_text changes what it returns
MAX_CHUNKS = 64  # a huge section-less note costs at most this many vectors
_SENTENCE_END = re.compile(r"(?<=[.!?;。！？；…])\s+|(?<=[。！？；…])")


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
