"""The HTTP endpoint's token file (daemon/http.py): a secret only while it stays private."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from wikimem_watch.daemon.http import load_or_make_token
from wikimem_watch.errors import ConfigError


def test_a_token_is_made_private_and_then_kept(tmp_path: Path) -> None:
    path = tmp_path / "run" / "vault.http-token"
    token = load_or_make_token(path)
    assert len(token) >= 32 and path.stat().st_mode & 0o777 == 0o600
    assert load_or_make_token(path) == token


def test_a_token_readable_by_others_is_replaced_not_used(tmp_path: Path) -> None:
    path = tmp_path / "run" / "vault.http-token"
    token = load_or_make_token(path)
    path.chmod(0o644)  # loosened: anyone on the machine could have read it
    fresh = load_or_make_token(path)
    assert fresh != token and path.stat().st_mode & 0o777 == 0o600
    assert path.read_text(encoding="ascii").strip() == fresh


def test_a_symlink_planted_as_the_token_is_replaced_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    load_or_make_token(run / "other.http-token")
    target = tmp_path / "known-token"
    target.write_text("k" * 43 + "\n", encoding="ascii")
    target.chmod(0o600)
    path = run / "vault.http-token"
    os.symlink(target, path)
    token = load_or_make_token(path)
    assert token != "k" * 43 and not path.is_symlink()
    assert target.read_text(encoding="ascii") == "k" * 43 + "\n"


def test_a_folder_planted_as_the_token_is_a_config_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "run" / "vault.http-token"
    path.mkdir(parents=True)
    with pytest.raises(ConfigError, match="cannot write the HTTP token"):
        load_or_make_token(path)
    assert path.is_dir() and sorted(p.name for p in path.parent.iterdir()) == [path.name]
