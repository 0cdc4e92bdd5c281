"""The tokenizer's fast path (one piece regex and a piece cache) equals its rules applied
match by match over the whole text, for any text and every configuration."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import wikimem_watch.core.tokenize as tokenize_module
from wikimem_watch.core.tokenize import STOP_WORDS, Tokenizer, estimate_tokens

# Characters on and around every boundary the rules draw: word characters and "_", inner and
# outer apostrophes, each East-Asian script with its non-letters (・ ゛ ゠ are in the kana
# block but are not word characters), jamo, accents, width forms, digits, marks, spaces.
ALPHABET = list(
    "aZ09_'’ʼ -.,!?#\n\t\u00ad\u200b" "éÉçñß" "ＡＢ１" "ﬁ" "\u0301" "火锅吃猫年糕" "𠀀"
    "カタナ・゛゠ｶ" "ぁん" "한국어" "가" "ㄱ" "абв" "αβ" "١٢" "\ue000" "™" "½" "\u3000"
    "，？！：；（）＇"
)  # fmt: skip
TEXTS = st.text(alphabet=ALPHABET, max_size=80)
WORDS = st.lists(
    st.sampled_from(["the", "Running", "don't", "foo_bar", "'quoted'", "l'été", "火锅", "カタ"]),
    max_size=12,
).map(" ".join)
CONFIGS = st.sampled_from(
    [
        {},
        {"stop_words": None, "stem": False},
        {"segmenter": lambda run: [run[:1], " ", run[1:]]},
    ]
)


def rules(tokenizer: Tokenizer, text: str) -> list[str]:
    """The reference: the tokenizer's per-match rules over the whole text in its plain form
    (no invisible characters, NFKC, one apostrophe)."""
    visible = tokenize_module._INVISIBLE.sub("", text)
    plain = unicodedata.normalize("NFKC", visible).translate(tokenize_module._APOSTROPHES)
    return tokenizer._terms(plain)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(TEXTS, WORDS), min_size=1, max_size=4), CONFIGS)
def test_fast_tokenizer_equals_the_rules_over_the_whole_text(
    texts: list[str], config: dict[str, object]
) -> None:
    tokenizer = Tokenizer(**config)  # type: ignore[arg-type]
    for text in [*texts, *texts]:  # the second time through, pieces come from the cache
        assert tokenizer.tokenize(text) == rules(tokenizer, text)


@settings(max_examples=500, deadline=None)
@given(TEXTS)
def test_the_fullwidth_shortcut_is_nfkc(text: str) -> None:
    assert tokenize_module._nfkc(text) == unicodedata.normalize("NFKC", text)


def test_a_full_piece_cache_is_cleared_and_tokens_stay_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokenize_module, "_PIECE_CACHE_SIZE", 3)
    tokenizer = Tokenizer(stop_words=STOP_WORDS)
    text = "alpha beta gamma delta epsilon the 火锅"
    assert tokenizer.tokenize(text) == rules(tokenizer, text)
    assert 0 < len(tokenizer._pieces) <= 3


@given(TEXTS)
def test_the_budget_estimate_counts_each_wide_character_and_a_token_per_four_others(
    text: str,
) -> None:
    wide = sum(1 for c in text if "\u3000" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af")
    assert estimate_tokens(text) == wide + (len(text) - wide + 3) // 4
