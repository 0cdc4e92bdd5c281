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
from functools import cache
from itertools import chain
from sys import intern

import Stemmer

# Runs of letters/digits, or runs of one East-Asian script. Order matters: CJK first.
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
_KANA = r"\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"
_HANGUL = r"\uac00-\ud7af\u1100-\u11ff\u3130-\u318f"
_TOKEN = (
    rf"(?P<cjk>[{_CJK}]+)|(?P<kana>[{_KANA}]+)|(?P<hangul>[{_HANGUL}]+)"
    rf"|(?P<word>[^\W_{_CJK}{_KANA}{_HANGUL}]+(?:'[^\W_{_CJK}{_KANA}{_HANGUL}]+)*)"
)


@cache
def compiled(pattern: str) -> re.Pattern[str]:
    """A pattern compiled on first use: ``_TOKEN`` and ``_CJK_RUN`` took ~11 ms at import
    (their classes span ~45k code points) and serve only pieces not seen before that are
    not one ASCII word; a start from the index snapshot tokenizes nothing."""
    return re.compile(pattern)


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


# Letters with a stroke or of their own that no decomposition takes to a plain letter, as
# people type them on a keyboard without them: "Łódź" is found by "lodz", "kısa" by "kisa".
_PLAIN_LETTERS = str.maketrans(
    {"ł": "l", "ø": "o", "đ": "d", "ð": "d", "ı": "i", "ħ": "h", "ŧ": "t", "ŀ": "l",
     "æ": "ae", "œ": "oe", "þ": "th"}
)  # fmt: skip
# Characters that are no part of the text people read: a soft hyphen, zero-width spaces and
# joiners, bidi marks, the word joiner, a byte-order mark. NFKC keeps them, and inside a
# word ("soft\xadware", pasted from a web page) they cut it in two.
_INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
# Apostrophes as keyboards type them ("don’t", "O’Brien"; U+02BC in Ukrainian): one form.
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u02bc": "'"})
# French and Italian elided articles and pronouns ("l'école", "qu'il", "dell'arte"): the word
# after them is the word a person searches for ("école" finds "l'école"). Not "o'" (O'Brien).
_ELISIONS = frozenset("c d j l m n qu s t all dall dell nell sull un".split())


def _fold(word: str) -> str:
    """Lower-case and strip accents: "Café" → "cafe", "Straße" → "strasse", "Łódź" → "lodz".
    NFKC already unified width forms."""
    word = word.lower()
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFD", word.casefold())
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", stripped).translate(_PLAIN_LETTERS)


# Fullwidth punctuation common in Chinese text, as NFKC writes it: each is its own full
# compatibility decomposition's one ASCII character.
_FULLWIDTH = tuple(
    (chr(c), unicodedata.normalize("NFKC", chr(c))) for c in map(ord, "，？！：；（）")
)


def _nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", text)``, cheaper for the usual reason a text is not
    normalised: fullwidth punctuation ("，", "？"; ~40% of the bench corpus's texts).

    Replacing a character by its full compatibility decomposition (here one ASCII character,
    of combining class 0) leaves the text's NFKD, so its NFKC, unchanged; when what is left
    is already normalised, it is therefore the NFKC of ``text``. At 10k entries of the bench
    vault, a few ``str.replace`` scans took 2 ms where normalising took 26 ms."""
    out = text
    for wide, narrow in _FULLWIDTH:
        out = out.replace(wide, narrow)
    if out is not text and unicodedata.is_normalized("NFKC", out):
        return out
    return unicodedata.normalize("NFKC", text)


def _plain(text: str) -> str:
    """Non-ASCII text in the one form both a note and a query are cut from: no invisible
    characters (first, so an accent they stood before still composes), NFKC, one apostrophe."""
    if _INVISIBLE.search(text):
        text = _INVISIBLE.sub("", text)
    if not unicodedata.is_normalized("NFKC", text):
        text = _nfkc(text)
    if "\u2019" in text or "\u02bc" in text:
        text = text.translate(_APOSTROPHES)
    return text


_STEMMER = Stemmer.Stemmer("english")


def stem(word: str) -> str:
    """English Snowball stem of an ASCII word ("running" → "run"); other words unchanged."""
    return _STEMMER.stemWord(word) if word.isascii() else word


# Cached pieces. Words repeat (a vault's vocabulary is Zipfian); runs of East-Asian script
# longer than a word or two rarely do (a 100k-entry vault has ~100k distinct CJK runs of up to
# 24 characters, seen 1.3 times each, whose bigrams would take ~130 MB), so those are split
# again each time.
_PIECE_CACHE_SIZE = 200_000
_PIECE_CACHE_CHARS = 32  # a piece of Latin script
_PIECE_CACHE_CHARS_EAST = 4  # a piece with any other character

# The first pass: maximal runs of word characters and East-Asian script, joined by inner
# apostrophes. Every match of ``_TOKEN`` lies inside one piece (``_TOKEN`` has no look-behind,
# its word class is within ``\w``, and a piece ends only where no ``_TOKEN`` match could
# go on), so ``_TOKEN`` applied piece by piece yields what it yields over the whole text.
# One class without groups scans about twice as fast as ``_TOKEN``'s four.
# Possessive quantifiers: a piece is maximal anyway (nothing after it can fail), so the matcher
# need not keep the positions it could back up to (~15% faster, the same matches).
EAST_SCRIPTS = _CJK + _KANA + _HANGUL  # a character class's body (bm25_query too)
_PIECE = re.compile(
    rf"[\w{EAST_SCRIPTS}]++(?:'[\w{EAST_SCRIPTS}]++)*+"
)  # every tokenize: compiled at import
_CJK_RUN = rf"[{_CJK}]+"


class Tokenizer:
    """Configured tokenizer: ``tokenize(text) -> list[str]``.

    ``stop_words`` drops English function words; ``stem`` applies Snowball English stemming;
    ``segmenter`` (e.g. jieba's ``lcut_for_search``: a compound and its words) replaces CJK
    bigrams with dictionary words.

    Text is cut into pieces with one fast regex, and each distinct short piece is turned
    into its terms once (folding, stop words, stemming, bigrams) and remembered: on a real
    vault's Zipfian vocabulary most pieces are a dictionary hit.
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
        self._pieces: dict[str, tuple[str, ...]] = {}  # piece as written → its terms

    def __call__(self, text: str) -> list[str]:
        return self.tokenize(text)

    def tokenize(self, text: str) -> list[str]:
        if not text.isascii():
            text = _plain(text)
        pieces = _PIECE.findall(text)
        terms = list(map(self._pieces.get, pieces))
        i = -1
        for _ in range(terms.count(None)):  # pieces not seen before, found by C-level searches
            i = terms.index(None, i + 1)
            terms[i] = self._piece(pieces[i])
        return list(chain.from_iterable(terms))  # type: ignore[arg-type]  # no None is left

    def _piece(self, piece: str) -> tuple[str, ...]:
        """The terms of one piece not seen before (or too long to be remembered)."""
        ascii = piece.isascii()
        if ascii and "_" not in piece:
            terms: tuple[str, ...] = (t,) if (t := self._word(piece)) else ()
        elif self.segmenter is None and compiled(_CJK_RUN).fullmatch(piece):
            terms = _bigrams(piece)
        else:
            terms = tuple(self._terms(piece))
        if len(piece) <= (_PIECE_CACHE_CHARS if ascii else _PIECE_CACHE_CHARS_EAST):
            if len(self._pieces) >= _PIECE_CACHE_SIZE:
                self._pieces.clear()
            self._pieces[piece] = terms
        return terms

    def _word(self, word: str) -> str:
        """One word's term: folded, then "" for a stop word, else stemmed when configured."""
        folded = _fold(word)
        if "'" in folded:
            elided, _, rest = folded.partition("'")
            if elided in _ELISIONS:
                folded = rest
        if folded in self.stop_words:
            return ""
        return stem(folded) if self.stem else folded

    def _terms(self, text: str) -> list[str]:
        """The tokenizer's rules, match by match (``_TOKEN``) over NFKC-normalised text."""
        out: list[str] = []
        for cjk, kana, hangul, word in compiled(_TOKEN).findall(text):
            if word:
                if term := self._word(word):
                    out.append(term)
            elif cjk and self.segmenter is not None:
                out.extend(w for w in self.segmenter(cjk) if w.strip())
            else:
                out.extend(_bigrams(cjk or kana or hangul))
        return out


def _bigrams(run: str) -> tuple[str, ...]:
    """Overlapping character bigrams of a run of one East-Asian script (a lone character is
    a unigram).

    Interned: a long run is split again each time it is seen (it is not cached), and the
    index keeps the first copy of each term, so every later copy of a common bigram would
    be a new string that lives as long as its batch (~2 MB of a 100k-entry cold build's
    peak, ADR-0018)."""
    if len(run) == 1:
        return (run,)
    return tuple([intern(run[i : i + 2]) for i in range(len(run) - 1)])


DEFAULT_TOKENIZER = Tokenizer()


def tokenize(text: str) -> list[str]:
    """Tokenize with the default settings (stop words on, stemming on)."""
    return DEFAULT_TOKENIZER.tokenize(text)


_WIDE = "[\u3000-\u9fff\uac00-\ud7af]"  # a token each, for estimate_tokens


def estimate_tokens(text: str) -> int:
    """A model-agnostic token estimate for budgets: ~4 Latin chars or 1 CJK char per token."""
    cjk = len(text) - len(compiled(_WIDE).sub("", text))
    return cjk + (len(text) - cjk + 3) // 4
