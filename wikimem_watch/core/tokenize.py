"""Text → index terms. Pure and deterministic; the same function serves documents and queries.

Latin words are NFKC-normalised, lower-cased and accent-folded; CJK ideograph, kana and
Hangul runs become overlapping character bigrams (a lone character stays a unigram), which
needs no dictionary and matches both "火锅" and "吃火锅". Stop words and stemming are
switchable so the benchmark can measure them (ADR-0002 records the defaults and why).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

import Stemmer

# Runs of letters/digits, or runs of one East-Asian script. Order matters: CJK first.
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
_KANA = r"\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HANGUL = r"\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
_TOKEN = re.compile(
    rf"(?P<cjk>[{_CJK}]+)|(?P<kana>[{_KANA}]+)|(?P<hangul>[{_HANGUL}]+)"
    rf"|(?P<word>[^\W_{_CJK}{_KANA}{_HANGUL}]+(?:'[^\W_{_CJK}{_KANA}{_HANGUL}]+)*)"
)

# A small English stop list: function words only. Content words such as "time", "day" or
# "new" stay searchable. Chosen by measurement on the LoCoMo dev set (ADR-0002).
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are aren't as at be because been
    before being below between both but by can could did didn't do does doesn't doing don't
    down during each few for from further had hadn't has hasn't have haven't having he he'd
    he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if
    in into is isn't it it's its itself just let's me more most my myself no nor not of off
    on once only or other ought our ours ourselves out over own same she she'd she'll she's
    should so some such than that that's the their theirs them themselves then there there's
    these they they'd they'll they're they've this those through to too under until up very
    was wasn't we we'd we'll we're we've were weren't what what's when when's where where's
    which while who who's whom why why's will with won't would you you'd you'll you're
    you've your yours yourself yourselves s t""".split()
)


def _fold(word: str) -> str:
    """Lower-case and strip accents: "Café" → "cafe". NFKC already unified width forms."""
    word = word.lower()
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFD", word)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", stripped)


_STEMMER = Stemmer.Stemmer("english")


def stem(word: str) -> str:
    """English Snowball stem of an ASCII word ("running" → "run"); other words unchanged."""
    return _STEMMER.stemWord(word) if word.isascii() else word


_WORD_CACHE_SIZE = 200_000


class Tokenizer:
    """Configured tokenizer: ``tokenize(text) -> list[str]``.

    ``stop_words`` drops English function words; ``stem`` applies Snowball English stemming;
    ``segmenter`` (e.g. jieba's ``lcut``) replaces CJK bigrams with dictionary words.
    """

    def __init__(
        self,
        *,
        stop_words: frozenset[str] | None = STOP_WORDS,
        stem: bool = True,
        segmenter: Callable[[str], list[str]] | None = None,
    ) -> None:
        self.stop_words = stop_words or frozenset()
        self.stem = stem
        self.segmenter = segmenter
        # word as written → its term ("" for a stop word): folding and stemming run once per
        # distinct word, which is most of the cost on a real vault's Zipfian vocabulary.
        self._terms: dict[str, str] = {}

    def __call__(self, text: str) -> list[str]:
        return self.tokenize(text)

    def _term(self, word: str) -> str:
        folded = _fold(word)
        term = "" if folded in self.stop_words else stem(folded) if self.stem else folded
        if len(self._terms) >= _WORD_CACHE_SIZE:
            self._terms.clear()
        self._terms[word] = term
        return term

    def tokenize(self, text: str) -> list[str]:
        out: list[str] = []
        terms = self._terms
        for cjk, kana, hangul, word in _TOKEN.findall(unicodedata.normalize("NFKC", text)):
            if word:
                term = terms.get(word)
                if term is None:
                    term = self._term(word)
                if term:
                    out.append(term)
            elif cjk and self.segmenter is not None:
                out.extend(w for w in self.segmenter(cjk) if w.strip())
            else:
                run = cjk or kana or hangul
                if len(run) == 1:
                    out.append(run)
                else:
                    out.extend([run[i : i + 2] for i in range(len(run) - 1)])
        return out


DEFAULT_TOKENIZER = Tokenizer()


def tokenize(text: str) -> list[str]:
    """Tokenize with the default settings (stop words on, stemming on)."""
    return DEFAULT_TOKENIZER.tokenize(text)


def estimate_tokens(text: str) -> int:
    """A model-agnostic token estimate for budgets: ~4 Latin chars or 1 CJK char per token."""
    cjk = sum(1 for c in text if "\u3000" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af")
    return cjk + (len(text) - cjk + 3) // 4
