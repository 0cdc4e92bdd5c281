from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path

import pytest

from wikimem_watch.config import Config, load_config, user_config_path
from wikimem_watch.errors import ConfigError
from wikimem_watch.settings import FIELD_TYPES, VaultLocation, locate


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


def test_unknown_key_in_the_vault_file_is_a_warning_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / ".wikimem").mkdir()
    (tmp_path / ".wikimem" / "config.toml").write_text("colour = 'blue'\n", encoding="utf-8")
    assert any("unknown setting 'colour'" in w for w in load_config(tmp_path).warnings)


def test_missing_vault_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a directory"):
        load_config(tmp_path / "nope")


def test_the_file_system_root_is_refused_as_a_vault() -> None:
    with pytest.raises(ConfigError, match="is the whole file system"):
        load_config("/")


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
    config = load_config(tmp_path)
    assert config.follow_external_symlinks is False
    assert any("follow_external_symlinks" in w for w in config.warnings)


def test_a_cache_dir_symlinked_out_of_the_vault_is_refused_and_its_toml_not_read(
    tmp_path: Path,
) -> None:
    from wikimem_watch.config import cache_dir_problem

    vault, elsewhere = tmp_path / "vault", tmp_path / "elsewhere"
    vault.mkdir()
    elsewhere.mkdir()
    (elsewhere / "config.toml").write_text("k1 = 9.0\n", encoding="utf-8")
    (vault / ".wikimem").symlink_to(elsewhere, target_is_directory=True)
    config = load_config(vault)
    assert config.k1 == 1.2  # the outside config.toml was not read
    refusal = cache_dir_problem(config)
    assert refusal is not None and "outside the vault" in refusal
    explicit = load_config(vault, {"cache_dir": str(elsewhere)})
    assert cache_dir_problem(explicit) is None and explicit.k1 == 9.0


# --------------------------------------------------------------- the trust boundary (ADR-0010)


def vault_file(root: Path, text: str) -> Path:
    (root / ".wikimem").mkdir(exist_ok=True)
    path = root / ".wikimem" / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def user_file(text: str) -> Path:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


PLANTED = """
embed = "http"
embed_url = "https://collector.example/v1"
embed_model = "big-paid-model"
embed_api_key_env = "SOME_OTHER_SECRET"
cache_dir = "/tmp/elsewhere"
socket = "/tmp/other.sock"
max_request_bytes = 1000000000
idle_timeout_s = 0
k1 = 1.5
"""


def test_a_planted_vault_config_cannot_send_data_off_the_machine(tmp_path: Path) -> None:
    vault_file(tmp_path, PLANTED)
    config = load_config(tmp_path)
    assert config.embed == "none" and config.embed_url is None and config.embed_model is None
    assert config.embed_api_key_env == "WIKIMEM_WATCH_EMBED_API_KEY"
    assert config.cache_dir is None and config.socket is None
    assert config.max_request_bytes == 1024 * 1024 and config.idle_timeout_s == 60.0
    assert config.k1 == 1.5, "ranking settings are the vault's to tune"
    text = "\n".join(config.warnings)
    for key in ("embed_url", "embed_model", "embed_api_key_env", "cache_dir", "socket"):
        assert f"{key!r} ignored" in text, key
    assert "embed = 'http' ignored" in text


def test_the_user_config_sets_what_the_vault_may_not(tmp_path: Path) -> None:
    user_file('embed = "hash"\ncache_dir = "/tmp/wm-cache"\nidle_timeout_s = 5\n')
    config = load_config(tmp_path)
    assert config.embed == "hash" and config.cache_dir == Path("/tmp/wm-cache")
    assert config.idle_timeout_s == 5.0 and config.warnings == ()


def test_the_vault_may_pick_an_endpoint_the_user_allowed_by_name_or_url(tmp_path: Path) -> None:
    user_file(
        '[endpoints.home]\nurl = "http://127.0.0.1:8080/v1"\nmodel = "e5"\n'
        'api_key_env = "HOME_KEY"\n'
    )
    vault_file(tmp_path, 'embed_endpoint = "home"\n')
    config = load_config(tmp_path)
    assert (config.embed, config.embed_url, config.embed_model) == (
        "http",
        "http://127.0.0.1:8080/v1",
        "e5",
    )
    assert config.embed_api_key_env == "HOME_KEY" and config.warnings == ()
    vault_file(tmp_path, 'embed_endpoint = "http://127.0.0.1:8080/v1/"\n')
    assert load_config(tmp_path).embed_url == "http://127.0.0.1:8080/v1"


def test_an_endpoint_the_user_did_not_allow_is_ignored_with_a_warning(tmp_path: Path) -> None:
    user_file('[endpoints.home]\nurl = "http://127.0.0.1:8080/v1"\n')
    vault_file(tmp_path, 'embed_endpoint = "https://collector.example/v1"\n')
    config = load_config(tmp_path)
    assert config.embed == "none" and config.embed_url is None
    assert any("not one of the user's [endpoints] (home)" in w for w in config.warnings)


def test_a_vault_pick_the_user_did_not_allow_never_shadows_the_users_own_pick(
    tmp_path: Path,
) -> None:
    user_file(
        'embed_endpoint = "home"\n[endpoints.home]\nurl = "http://127.0.0.1:8080/v1"\n'
        '[endpoints.lab]\nurl = "http://127.0.0.1:8081/v1"\n'
    )
    vault_file(tmp_path, 'embed_endpoint = "https://collector.example/v1"\n')
    config = load_config(tmp_path)  # a warning, never a start failure
    assert config.embed_url == "http://127.0.0.1:8080/v1"
    assert any("not one of the user's [endpoints] (home, lab)" in w for w in config.warnings)
    vault_file(tmp_path, 'embed_endpoint = "lab"\n')  # one the user allowed: the vault picks
    assert load_config(tmp_path).embed_url == "http://127.0.0.1:8081/v1"


def test_a_user_config_that_is_not_a_regular_file_is_named_not_skipped(tmp_path: Path) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)  # reading it would block; skipping it hid the user's settings silently
    try:
        with pytest.raises(ConfigError, match="not a regular file"):
            load_config(tmp_path)
    finally:
        path.unlink()


def test_the_user_naming_an_unknown_endpoint_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not one of the user's"):
        load_config(tmp_path, {"embed_endpoint": "nowhere"})


def test_vault_http_uses_only_the_users_own_url(tmp_path: Path) -> None:
    user_file('embed_url = "http://127.0.0.1:9000/v1"\nembed_model = "m"\n')
    vault_file(tmp_path, 'embed = "http"\n')
    config = load_config(tmp_path)
    assert config.embed == "http" and config.embed_url == "http://127.0.0.1:9000/v1"


@pytest.mark.parametrize(
    "text",
    ["k1 = [nope", "k1 = nan", 'debounce_ms = 100000000\nhalf_life_days = "x"', "\udcff"],
)
def test_a_bad_vault_file_is_a_warning_never_a_failure_to_start(tmp_path: Path, text: str) -> None:
    path = tmp_path / ".wikimem" / "config.toml"
    path.parent.mkdir()
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    config = load_config(tmp_path)
    assert config.warnings and config.k1 == 1.2 and config.debounce_ms == 25


def test_nan_in_the_users_own_file_is_a_clear_error(tmp_path: Path) -> None:
    user_file("half_life_days = nan\n")
    with pytest.raises(ConfigError, match="half_life_days=nan must be a finite number"):
        load_config(tmp_path)


def test_a_fifo_or_symlink_planted_as_the_vault_config_is_not_read(tmp_path: Path) -> None:
    (tmp_path / ".wikimem").mkdir()
    os.mkfifo(tmp_path / ".wikimem" / "config.toml")  # opening it blocking would hang
    assert "not a regular file" in load_config(tmp_path).warnings[0]
    (tmp_path / ".wikimem" / "config.toml").unlink()
    secret = tmp_path / "outside.toml"
    secret.write_text("k1 = 2.0\n", encoding="utf-8")
    (tmp_path / ".wikimem" / "config.toml").symlink_to(secret)
    config = load_config(tmp_path)
    assert config.k1 == 1.2 and "symlink" in config.warnings[0]


def test_environment_and_flags_are_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIKIMEM_WATCH_EMBED_API_KEY_ENV", "MY_KEY")
    config = load_config(tmp_path, {"embed_url": "http://127.0.0.1:1/v1", "embed": "http"})
    assert config.embed_api_key_env == "MY_KEY" and config.embed_url == "http://127.0.0.1:1/v1"


def test_an_unknown_wikimem_watch_variable_warns_once_naming_the_closest_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from wikimem_watch import settings

    monkeypatch.setattr(settings, "_warned_env", set())
    monkeypatch.setenv("WIKIMEM_WATCH_EMBEDD", "local")
    monkeypatch.setenv("WIKIMEM_WATCH_EMBED_API_KEY", "sk-not-a-setting-but-known")
    load_config(tmp_path)
    load_config(tmp_path)
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "unknown variable WIKIMEM_WATCH_EMBEDD (did you mean WIKIMEM_WATCH_EMBED?)" in err


def test_a_remembered_embedder_is_used_only_when_no_source_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".wikimem").mkdir()
    seen: list[Path] = []

    def remembered(cache: Path) -> str | None:
        seen.append(cache)
        return "hash"

    config = load_config(tmp_path, remembered=remembered)
    assert (config.embed, config.embed_remembered) == ("hash", True)
    assert seen == [tmp_path / ".wikimem"]
    flag = load_config(tmp_path, {"embed": "none"}, remembered=remembered)
    assert (flag.embed, flag.embed_remembered) == ("none", False)
    monkeypatch.setenv("WIKIMEM_WATCH_EMBED", "none")
    assert load_config(tmp_path, remembered=remembered).embed == "none"


# ------------------------------------------- settings.locate: a client's view, no Config


def test_the_settings_know_every_config_field_by_its_annotation() -> None:
    assert FIELD_TYPES == {f.name: f.type for f in fields(Config)}


def _sources(monkeypatch: pytest.MonkeyPatch, user: str, env: dict[str, str]) -> None:
    """The user's config file (when ``user`` is not empty) and the environment."""
    if user:
        user_file(user)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize(
    ("user", "env", "flags"),
    [
        ("", {}, {}),
        ("", {}, {"cache_dir": Path("~/c"), "socket": Path("/tmp/s.sock"), "embed": "hash"}),
        ('cache_dir = "/tmp/user-cache"\nsocket = "/tmp/user.sock"\n', {}, {}),
        ("", {"WIKIMEM_SOCK": "~/env.sock", "WIKIMEM_WATCH_CACHE_DIR": "/tmp/env-c"}, {}),
        ('socket = "/tmp/user.sock"\n', {"WIKIMEM_WATCH_SOCKET": ""}, {}),
    ],
)
def test_locate_finds_the_vault_cache_and_socket_load_config_resolves(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    user: str,
    env: dict[str, str],
    flags: dict[str, object],
) -> None:
    _sources(monkeypatch, user, env)
    vault_file(tmp_path, PLANTED)  # the vault may set neither, and tries to
    config = load_config(tmp_path, flags)
    assert locate(tmp_path, flags) == VaultLocation(config.vault, config.cache_dir, config.socket)


@pytest.mark.parametrize(
    ("user", "env", "flags"),
    [
        ("", {"WIKIMEM_WATCH_K1": "many"}, {}),
        ("k1 = [\n", {}, {}),
        ("nonsense = 1\n", {}, {}),
        ('embed_endpoint = "work"\n', {}, {}),
        ("", {"WIKIMEM_WATCH_EMBED_ENDPOINT": "work"}, {}),
        ("", {}, {"k1": "-1"}),
    ],
)
def test_locate_refuses_what_load_config_refuses_with_the_same_message(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    user: str,
    env: dict[str, str],
    flags: dict[str, object],
) -> None:
    _sources(monkeypatch, user, env)
    with pytest.raises(ConfigError) as by_config:
        load_config(tmp_path, flags)
    with pytest.raises(ConfigError) as by_locate:
        locate(tmp_path, flags)
    assert by_locate.value.message == by_config.value.message
    with pytest.raises(ConfigError, match="not a directory"):
        locate(tmp_path / "missing")


def test_the_users_flags_and_env_outrank_an_endpoint_the_vault_picked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vault's pick is the vault's layer: ``--embed none`` (or the env) switches it off,
    and an ``--embed-model`` or key variable given above it is kept."""
    user_file('[endpoints.home]\nurl = "http://127.0.0.1:8080/v1"\nmodel = "e5"\n')
    vault_file(tmp_path, 'embed_endpoint = "home"\n')
    assert load_config(tmp_path, {"embed": "none"}).embed == "none"
    monkeypatch.setenv("WIKIMEM_WATCH_EMBED", "hash")
    assert load_config(tmp_path).embed == "hash"
    monkeypatch.delenv("WIKIMEM_WATCH_EMBED")
    config = load_config(tmp_path, {"embed_model": "mine", "embed_api_key_env": "MY_KEY"})
    assert (config.embed, config.embed_url) == ("http", "http://127.0.0.1:8080/v1")
    assert (config.embed_model, config.embed_api_key_env) == ("mine", "MY_KEY")


def test_a_vault_config_folder_that_cannot_be_searched_is_a_warning_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``chmod 000 .wikimem`` (not testable as root: the error is simulated where it comes)."""
    vault_file(tmp_path, "k1 = 1.5\n")
    real_open = os.open

    def denied(path: object, *args: object, **kwargs: object) -> int:
        if str(path).endswith("config.toml"):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    def no_search(self: Path) -> bool:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", denied)
    monkeypatch.setattr(Path, "is_symlink", no_search)
    config = load_config(tmp_path)
    assert config.k1 != 1.5
    assert any("config.toml: ignored: Permission denied" in w for w in config.warnings)


def test_a_user_config_folder_that_cannot_be_searched_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_search(self: Path) -> bool:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "is_file", no_search)
    with pytest.raises(ConfigError, match="Permission denied"):
        load_config(tmp_path)


def test_paths_are_made_absolute_and_values_of_the_wrong_type_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative --socket is recorded in the lock file for clients started in other
    folders: it must name the same file from anywhere."""
    monkeypatch.chdir(tmp_path)
    config = load_config(tmp_path, {"socket": "rel.sock", "cache_dir": "cache"})
    assert config.socket == tmp_path / "rel.sock" and config.cache_dir == tmp_path / "cache"
    user_file("include = [1, 2]\n")
    with pytest.raises(ConfigError, match="include"):
        load_config(tmp_path)
    user_file("socket = 5\n")
    with pytest.raises(ConfigError, match="socket"):
        load_config(tmp_path)


def test_an_embedding_url_that_is_not_http_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="embed_url='notaurl'"):
        load_config(tmp_path, {"embed_url": "notaurl"})
    monkeypatch.setenv("WIKIMEM_WATCH_EMBED_URL", "ftp://x")
    with pytest.raises(ConfigError, match="http:// or https://"):
        load_config(tmp_path)
