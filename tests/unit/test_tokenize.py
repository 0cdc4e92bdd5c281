from __future__ import annotations

from pathlib import Path

import pytest

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


@pytest.mark.parametrize(
    ("written", "typed"),
    [
        ("Łódź", "Lodz"),
        ("København", "Kobenhavn"),
        ("Đakovo", "Dakovo"),
        ("kısa ılık", "KISA ILIK"),
        ("Hauptstraße", "Hauptstrasse"),
        ("Bahnhofstrasse", "Bahnhofstraße"),
        ("Æble", "aeble"),
    ],
)
def test_letters_no_decomposition_reaches_fold_as_people_type_them(
    written: str, typed: str
) -> None:
    assert tokenize(written) == tokenize(typed) != []


@pytest.mark.parametrize(
    ("pasted", "typed"),
    [
        ("soft\u00adware", "software"),  # a soft hyphen
        ("land\u200blord", "landlord"),  # a zero-width space
        ("ho\u2060tel", "hotel"),  # a word joiner
        ("火\u200b锅", "火锅"),
        ("\ufeffcoffee", "coffee"),
    ],
)
def test_invisible_characters_do_not_cut_a_word(pasted: str, typed: str) -> None:
    assert tokenize(pasted) == tokenize(typed)


def test_a_curly_apostrophe_is_the_straight_one() -> None:
    assert tokenize("O’Brien") == tokenize("O'Brien") == ["o'brien"]
    assert tokenize("I won’t go, I’m tired") == tokenize("I won't go, I'm tired") == ["go", "tire"]


def test_a_french_or_italian_elision_leaves_the_word_a_person_searches_for() -> None:
    assert tokenize("l’école") == tokenize("L'école") == tokenize("école") == ["ecol"]
    assert tokenize("qu'il dell'arte") == tokenize("il arte")
    assert tokenize("O'Brien aujourd'hui") == ["o'brien", "aujourd'hui"]  # no elision there


def test_with_jieba_a_word_inside_a_compound_is_found(tmp_path: Path) -> None:
    """jieba keeps compounds whole ("北京大学图书馆"); the search mode adds their words, so
    "大学" and "图书馆" find the note, as bigrams do."""
    pytest.importorskip("jieba")
    from wikimem_watch.config import load_config
    from wikimem_watch.core.facts import make_tokenizer

    words = make_tokenizer(load_config(tmp_path, {"jieba": True}))
    note = set(words("我在北京大学图书馆看书，晚上吃了重庆火锅"))
    for query in ["大学", "图书馆", "火锅", "北京大学图书馆"]:
        assert set(words(query)) & note, query
