from __future__ import annotations

from pathlib import Path

import pytest

from wikimem_watch.config import load_config
from wikimem_watch.errors import ConfigError


def test_defaults_then_file_then_env_then_flags(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".wikimem").mkdir()
    (tmp_path / ".wikimem" / "config.toml").write_text(
        'k1 = 1.5\nb = 0.5\nexclude = ["templates/*"]\nhalf_life_days = 30\n', encoding="utf-8"
    )
    monkeypatch.setenv("WIKIMEM_WATCH_B", "0.6")
    monkeypatch.setenv("WIKIMEM_WATCH_STOP_WORDS", "false")
    config = load_config(tmp_path, {"half_life_days": "10", "embed": None})
    assert config.k1 == 1.5  # file
    assert config.b == 0.6  # env beats file
    assert config.half_life_days == 10.0  # flag beats file
    assert config.stop_words is False
    assert config.exclude == ("templates/*",)
    assert config.embed == "none"  # a flag left out (None) changes nothing
    assert config.cache_path == tmp_path.resolve() / ".wikimem"


def test_wikimem_sock_sets_the_socket(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIKIMEM_SOCK", "/tmp/x.sock")
    assert load_config(tmp_path).socket == Path("/tmp/x.sock")


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        ({"k1": "fast"}, "k1='fast'"),
        ({"weight_bm25": "0"}, "never switched off"),
        ({"embed": "magic"}, "embed='magic'"),
        ({"half_life_days": "-1"}, "half_life_days"),
        ({"nonsense": "1"}, "unknown setting"),
    ],
)
def test_bad_values_name_the_field(tmp_path: Path, flags: dict[str, object], needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        load_config(tmp_path, flags)


def test_unknown_key_in_the_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".wikimem").mkdir()
    (tmp_path / ".wikimem" / "config.toml").write_text("colour = 'blue'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        load_config(tmp_path)


def test_missing_vault_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        load_config(tmp_path / "nope")


def test_following_external_symlinks_comes_from_a_flag_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_config(tmp_path).follow_external_symlinks is False
    assert load_config(tmp_path, {"follow_external_symlinks": True}).follow_external_symlinks
    monkeypatch.setenv("WIKIMEM_WATCH_FOLLOW_EXTERNAL_SYMLINKS", "1")
    assert load_config(tmp_path).follow_external_symlinks is True


def test_a_config_toml_in_the_vault_cannot_widen_what_is_read(tmp_path: Path) -> None:
    (tmp_path / ".wikimem").mkdir()
    (tmp_path / ".wikimem" / "config.toml").write_text(
        "follow_external_symlinks = true\n", encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="cannot be set in config.toml"):
        load_config(tmp_path)


def test_a_cache_dir_symlinked_out_of_the_vault_is_refused_and_its_toml_not_read(
    tmp_path: Path,
) -> None:
    from wikimem_watch.config import cache_dir_refusal

    vault, elsewhere = tmp_path / "vault", tmp_path / "elsewhere"
    vault.mkdir()
    elsewhere.mkdir()
    (elsewhere / "config.toml").write_text("k1 = 9.0\n", encoding="utf-8")
    (vault / ".wikimem").symlink_to(elsewhere, target_is_directory=True)
    config = load_config(vault)
    assert config.k1 == 1.2  # the outside config.toml was not read
    refusal = cache_dir_refusal(config)
    assert refusal is not None and "outside the vault" in refusal
    explicit = load_config(vault, {"cache_dir": str(elsewhere)})
    assert cache_dir_refusal(explicit) is None and explicit.k1 == 9.0
