"""What is embedded for an entry: its heading and text, after the tail of the diary entry
before it (ADR-0008). Pure; the cache fingerprint carries ``CONTEXT`` so a change of rule is
a mismatch, never a silent mix."""

from __future__ import annotations

from collections.abc import Sequence

from wikimem_watch.core.models import Entry

__all__ = ["CONTEXT", "CONTEXT_CHARS", "embedding_text", "embedding_texts"]

CONTEXT_CHARS = 200  # how much of the entry before it a diary entry's vector reads (ADR-0008)
CONTEXT = f"diary-previous-entry-tail-{CONTEXT_CHARS}"  # in the cache fingerprint


def embedding_text(heading: str, text: str, context: str = "") -> str:
    """What to embed for an entry: its context line(s), then its heading and text."""
    body = f"{heading}\n{text}" if heading else text
    return f"{context}\n{body}" if context else body


def embedding_texts(entries: Sequence[Entry]) -> list[str]:
    """What to embed for each entry of one note, given in file order (ADR-0008).

    A diary entry is read with the last ``CONTEXT_CHARS`` of the entry just before it in
    the same day file: entries are short and lean on what came before ("Yes, and it rained
    the whole week"). Wiki items stand alone: the item above is another topic.
    """
    out: list[str] = []
    prev: Entry | None = None
    for entry in entries:
        context = ""
        if prev is not None and entry.kind == "diary" and prev.kind == "diary":
            context = _tail(prev.text, CONTEXT_CHARS)
        out.append(embedding_text(entry.heading, entry.text, context))
        prev = entry
    return out


def _tail(text: str, max_chars: int) -> str:
    """The last ``max_chars`` of ``text``, starting at a word when one starts nearby."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    cut = text[-max_chars:]
    space = cut.find(" ")
    return cut[space + 1 :] if 0 <= space < 40 else cut
