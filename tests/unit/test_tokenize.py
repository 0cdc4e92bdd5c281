from __future__ import annotations

from wikimem_watch.core.tokenize import Tokenizer, estimate_tokens, tokenize


def test_latin_words_are_lowercased_accent_folded_and_stemmed() -> None:
    assert tokenize("Café RUNNING Parties") == ["cafe", "run", "parti"]


def test_fullwidth_forms_are_normalised() -> None:
    assert tokenize("ＡＢＣ １２３") == ["abc", "123"]


def test_cjk_runs_become_bigrams_and_a_lone_character_a_unigram() -> None:
    assert tokenize("吃火锅") == ["吃火", "火锅"]
    assert tokenize("猫") == ["猫"]


def test_kana_and_hangul_are_bigrammed() -> None:
    assert tokenize("カタカナ") == ["カタ", "タカ", "カナ"]
    assert tokenize("한국어") == ["한국", "국어"]


def test_stop_words_are_dropped_by_default_and_kept_when_off() -> None:
    assert tokenize("what did the cat eat") == ["cat", "eat"]
    raw = Tokenizer(stop_words=None, stem=False)
    assert raw("what did the cats eat") == ["what", "did", "the", "cats", "eat"]


def test_mixed_script_text() -> None:
    assert tokenize("和Mia去杭州 trip") == ["和", "mia", "去杭", "杭州", "trip"]


def test_estimate_tokens_counts_cjk_per_character() -> None:
    assert estimate_tokens("火锅火锅") == 4
    assert estimate_tokens("abcdefgh") == 2
