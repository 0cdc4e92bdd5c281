"""Facts derived from one entry, shared by the engine and the index snapshot: the text BM25
indexes, the entry's time on the recency axis, its digest, and the configured tokenizer.

Pure functions; the snapshot (ADR-0015) stores their results and the settings that feed
them, so an engine restored from it equals one built by a fresh scan.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from datetime import date, datetime

from ..config import Config
from .models import Entry
from .tokenize import STOP_WORDS, Tokenizer

log = logging.getLogger(__name__)

_EPOCH = date(1970, 1, 1).toordinal()


def make_tokenizer(config: Config) -> Tokenizer:
    segmenter = None
    if config.jieba:
        try:
            import jieba  # optional [zh] extra

            jieba.setLogLevel(logging.WARNING)
            segmenter = jieba.lcut_for_search
        except ImportError:
            log.warning(
                "jieba is not installed (pip install 'wikimem-watch[zh]', in a clone "
                "pip install -e '.[zh]'); using bigrams"
            )
    return Tokenizer(
        stop_words=STOP_WORDS if config.stop_words else None,
        stem=config.stem,
        segmenter=segmenter,
    )


def indexed_text(entry: Entry, heading_weight: int, asked: str = "") -> str:
    """What BM25 indexes for an entry: its text and tags, the question ``asked`` at the end of
    the entry before it (see ``asked_before``), and for an item whose heading is a name (not
    a diary time) the heading ``heading_weight`` times and the note's title once.

    Repeating a field is BM25F with integer field weights: a term in the heading counts as
    that many occurrences, and the document length grows to match (ADR-0009).
    """
    parts = [entry.text, " ".join(entry.tags)]
    if asked:
        parts.append(asked)
    if entry.kind == "wiki" or entry.time is None:
        parts[:0] = [entry.heading] * heading_weight
        if entry.title and entry.title != entry.heading:
            parts.insert(0, entry.title)
    return "\n".join(parts)


# A sentence: up to and including its end mark(s). Closing quotes and brackets after a
# question mark still end a question ("…叫什么？」").
_SENTENCE = re.compile(r"[^。！？!?.\n]+(?:[。！？!?.]+[\"'”’）)」』]*)?")
_ASKS = ("?", "？")
_CLOSERS = "\"'”’）)」』"
_TAIL_CHARS = 600  # a question is the end of an entry, not its whole length


def trailing_question(text: str) -> str:
    """The question an entry ends with: its last sentences, while they end in "?" or "？".

    "…I love it. What films do you like?" → "What films do you like?"; "" when the entry
    ends with a statement. Reads at most the last 600 characters.
    """
    tail = text[-_TAIL_CHARS:]
    if "?" not in tail and "？" not in tail:
        return ""  # most entries: no sentence can end with a question mark
    asked: list[str] = []
    for sentence in reversed(_SENTENCE.findall(tail)):
        sentence = sentence.strip()
        if not sentence:
            continue
        if not sentence.rstrip(_CLOSERS).endswith(_ASKS):
            break
        asked.append(sentence)
    return " ".join(reversed(asked))


def ends_asking(entries: Sequence[Entry]) -> list[str]:
    """The question each diary entry ends with ("" for a statement and for wiki items)."""
    return [trailing_question(e.text) if e.kind == "diary" else "" for e in entries]


def asked_before(entries: Sequence[Entry], asking: Sequence[str] | None = None) -> list[str]:
    """For each entry of one file, the question the diary entry before it ended with.

    In a log of a conversation the answer follows the question, and a question's words
    describe its answer: "你喜欢哪种菜系呢？" is answered by the next entry, which may never say
    菜系. So a diary entry is also indexed under the question its predecessor in the same
    file ended with (ADR-0009). Entries are taken in day order (time, then line), as the
    engine links them; wiki items get nothing. ``asking``: ``ends_asking(entries)``, when the
    caller has it already.
    """
    asking = ends_asking(entries) if asking is None else asking
    asked = [""] * len(entries)
    order = sorted(
        (i for i, e in enumerate(entries) if e.kind == "diary"),
        key=lambda i: (entries[i].time or "", entries[i].line),
    )
    for before, after in zip(order, order[1:], strict=False):
        asked[after] = asking[before]
    return asked


def entry_digest(entry: Entry) -> int:
    raw = hashlib.blake2b(f"{entry.id}\0{entry.hash}".encode(), digest_size=16).digest()
    return int.from_bytes(raw, "big")


def entry_epoch_days(entry: Entry) -> float:
    """An entry's time in days since 1970 (local wall time), NaN when it has none."""
    if entry.ts:
        try:
            stamp = datetime.fromisoformat(entry.ts.replace("Z", "+00:00"))
            # The wall-clock time the entry was written, in the writer's own zone.
            return stamp.toordinal() - _EPOCH + (stamp.hour * 60 + stamp.minute) / 1440.0
        except ValueError:
            pass
    if entry.date:
        minutes = 720.0
        if entry.time:
            hh, mm = entry.time.split(":")
            minutes = int(hh) * 60 + int(mm)
        return date.fromisoformat(entry.date).toordinal() - _EPOCH + minutes / 1440.0
    return float("nan")
