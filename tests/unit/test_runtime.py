"""Per-machine socket and lock paths, and the one-daemon-per-vault lock."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from wikimem_watch.config import Config
from wikimem_watch.daemon.runtime import (
    AF_UNIX_MAX_BYTES,
    AlreadyRunning,
    DaemonLock,
    LockInfo,
    default_socket_path,
    ensure_cache_dir,
    host_tag,
    lock_path,
    read_live_lock,
)


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    return run


def info(path: Path) -> LockInfo:
    return LockInfo(os.getpid(), "/tmp/x.sock", host_tag(), str(path), 1.0)


def test_the_default_socket_is_per_host_inside_the_cache_dir(tmp_path: Path) -> None:
    path = default_socket_path(Config(vault=tmp_path))
    assert path == tmp_path / ".wikimem" / f"daemon-{host_tag()}.sock"


def test_a_socket_path_too_long_for_af_unix_moves_to_the_runtime_dir(
    tmp_path: Path, runtime: Path
) -> None:
    deep = tmp_path / ("d" * (AF_UNIX_MAX_BYTES + 1))
    path = default_socket_path(Config(vault=deep))
    assert path.parent == runtime / "wikimem-watch" and path.suffix == ".sock"
    assert len(os.fsencode(path)) <= AF_UNIX_MAX_BYTES
    assert default_socket_path(Config(vault=deep)) == path  # clients derive the same one


@pytest.mark.parametrize("planted", ["symlink", "file"])
def test_something_planted_as_the_default_socket_moves_the_socket_to_the_runtime_dir(
    tmp_path: Path, runtime: Path, planted: str
) -> None:
    """A synced vault's ``.wikimem/daemon-<host>.sock`` that no daemon made: a symlink led
    every client to the socket it names (another vault's daemon), and a file stopped the
    daemon from starting. The daemon and its clients derive another path, both alike."""
    vault = tmp_path / "v"
    (vault / ".wikimem").mkdir(parents=True)
    preferred = default_socket_path(Config(vault=vault))
    assert preferred == vault / ".wikimem" / f"daemon-{host_tag()}.sock"
    if planted == "symlink":
        preferred.symlink_to(tmp_path / "another-vaults-daemon.sock")
    else:
        preferred.write_text("synced from elsewhere\n", encoding="utf-8")
    moved = default_socket_path(Config(vault=vault))
    assert moved.parent == runtime / "wikimem-watch" and moved.suffix == ".sock"


def test_without_xdg_runtime_dir_a_private_temp_dir_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    lock = lock_path(Config(vault=tmp_path))
    assert lock.parent.name == f"wikimem-watch-{os.getuid()}"


def test_host_tag_is_safe_in_a_file_name() -> None:
    tag = host_tag()
    assert tag and "/" not in tag and " " not in tag and len(tag) <= 32


def test_a_held_lock_refuses_a_second_daemon_naming_the_first(
    tmp_path: Path, runtime: Path
) -> None:
    path = lock_path(Config(vault=tmp_path))
    first = DaemonLock.acquire(path, info(tmp_path))
    try:
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        live = read_live_lock(path)
        assert live is not None and live.pid == os.getpid() and live.socket == "/tmp/x.sock"
        with pytest.raises(AlreadyRunning, match=f"pid {os.getpid()}, socket /tmp/x.sock") as e:
            DaemonLock.acquire(path, info(tmp_path))
        assert e.value.message.endswith(f"stop it first: wikimem-watch stop --vault {tmp_path}")
    finally:
        first.release()
    assert not path.exists() and read_live_lock(path) is None


def test_a_stale_lock_file_is_replaced(tmp_path: Path, runtime: Path) -> None:
    path = lock_path(Config(vault=tmp_path))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"pid": 999999, "socket": "/gone.sock"}', encoding="utf-8")  # nobody holds it
    assert read_live_lock(path) is None
    lock = DaemonLock.acquire(path, info(tmp_path))
    try:
        live = read_live_lock(path)
        assert live is not None and live.pid == os.getpid()
    finally:
        lock.release()


def test_the_cache_dir_gets_a_gitignore_of_everything(tmp_path: Path) -> None:
    ensure_cache_dir(Config(vault=tmp_path))
    assert (tmp_path / ".wikimem" / ".gitignore").read_text() == "*\n"


def test_a_cache_dir_symlinked_out_of_the_vault_is_never_created_chmodded_or_used(
    tmp_path: Path, runtime: Path
) -> None:
    vault, elsewhere = tmp_path / "vault", tmp_path / "elsewhere"
    vault.mkdir()
    elsewhere.mkdir(mode=0o755)
    (vault / ".wikimem").symlink_to(elsewhere, target_is_directory=True)
    config = Config(vault=vault)
    with pytest.raises(OSError, match="outside the vault"):
        ensure_cache_dir(config)
    assert default_socket_path(config).parent == runtime / "wikimem-watch"
    assert list(elsewhere.iterdir()) == [] and stat.S_IMODE(elsewhere.stat().st_mode) == 0o755


@pytest.mark.parametrize("kind", ["local", "hash"])
def test_the_embedder_a_daemon_used_is_remembered_per_host(tmp_path: Path, kind: str) -> None:
    from wikimem_watch.daemon.runtime import (
        embedder_state_path,
        remember_embedder,
        remembered_embedder,
    )

    remember_embedder(Config(vault=tmp_path, cache_dir=tmp_path, embed=kind))
    assert embedder_state_path(tmp_path).name == f"embedder-{host_tag()}.json"
    assert remembered_embedder(tmp_path) == kind


@pytest.mark.parametrize(
    "content",
    [
        '{"embed": "http", "embed_url": "https://attacker.example/v1"}',  # never from the vault
        '{"embed": "none"}',
        "not json",
        "[1, 2]",
        '{"embed": "local"' + " " * 5000 + "}",  # oversized
    ],
)
def test_a_remembered_record_that_is_not_local_or_hash_is_no_record(
    tmp_path: Path, content: str
) -> None:
    from wikimem_watch.daemon.runtime import embedder_state_path, remembered_embedder

    embedder_state_path(tmp_path).write_text(content, encoding="utf-8")
    assert remembered_embedder(tmp_path) is None


def test_a_symlinked_record_is_not_followed(tmp_path: Path) -> None:
    from wikimem_watch.daemon.runtime import embedder_state_path, remembered_embedder

    real = tmp_path / "elsewhere.json"
    real.write_text('{"embed": "hash"}', encoding="utf-8")
    embedder_state_path(tmp_path).symlink_to(real)
    assert remembered_embedder(tmp_path) is None


def test_a_vault_whose_name_is_not_utf8_has_a_key_and_a_snapshot_path(tmp_path: Path) -> None:
    """Such a name (bytes as lone surrogates) made every command end in a traceback."""
    from wikimem_watch.config import load_config
    from wikimem_watch.daemon.runtime import vault_key

    vault = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"v\xff")))
    vault.mkdir()
    config = load_config(vault)
    assert len(vault_key(config)) == 16
    assert config.snapshot_path is not None and config.snapshot_path.name == "index.snapshot"


def test_a_peer_id_for_a_cache_dir_whose_name_is_not_utf8(tmp_path: Path) -> None:
    from wikimem_watch.vectors.peers import peer_id

    cache = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"c\xff")))
    assert len(peer_id(cache)) == 12


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp dir of its own (as /tmp is, shared by every local user), no XDG_RUNTIME_DIR."""
    import tempfile

    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o1777)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home-cache"))
    return shared


def squat(shared: Path, elsewhere: Path) -> Path:
    """Another user's ``<tmp>/wikimem-watch-<uid>``: owned by them as root can make it, else
    a symlink to a directory of theirs (either is not this user's directory)."""
    name = shared / f"wikimem-watch-{os.getuid()}"
    elsewhere.mkdir(mode=0o777)
    if os.getuid() == 0:
        name.mkdir(mode=0o777)
        os.chown(name, 4242, 4242)
        return name
    name.symlink_to(elsewhere, target_is_directory=True)
    return elsewhere


def test_a_temp_runtime_dir_another_user_made_first_is_not_used(
    tmp_path: Path, shared_tmp: Path
) -> None:
    squat(shared_tmp, tmp_path / "theirs")
    config = Config(vault=tmp_path / "vault")
    lock = lock_path(config)
    assert lock.parent == tmp_path / "home-cache" / "wikimem-watch" / f"run-{host_tag()}"
    held = DaemonLock.acquire(lock, info(tmp_path))  # the daemon starts
    try:
        assert stat.S_IMODE(lock.parent.stat().st_mode) == 0o700
    finally:
        held.release()


def test_a_lock_planted_in_another_users_runtime_dir_never_names_the_socket(
    tmp_path: Path, shared_tmp: Path
) -> None:
    """A client read the lock there and sent its requests (write texts too) to the socket
    it named, which the other user listened on."""
    from wikimem_watch.shells.client import find_socket

    theirs = squat(shared_tmp, tmp_path / "theirs")
    config = Config(vault=tmp_path / "vault")
    planted = theirs / lock_path(config).name
    planted.write_text('{"pid": 1, "socket": "/tmp/theirs.sock"}', encoding="utf-8")
    fd = os.open(planted, os.O_RDONLY)
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)  # "live"
        assert find_socket(config) == default_socket_path(config)
    finally:
        os.close(fd)


@pytest.mark.skipif(os.getuid() != 0, reason="making a file another user owns needs root")
def test_a_lock_file_another_user_owns_is_never_trusted(tmp_path: Path, runtime: Path) -> None:
    config = Config(vault=tmp_path)
    path = lock_path(config)
    path.parent.mkdir(mode=0o700)
    path.write_text('{"pid": 1, "socket": "/tmp/theirs.sock"}', encoding="utf-8")
    os.chown(path, 4242, 4242)
    fd = os.open(path, os.O_RDONLY)
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)
        assert read_live_lock(path) is None
    finally:
        os.close(fd)
