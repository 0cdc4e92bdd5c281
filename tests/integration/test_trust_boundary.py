"""The trust boundary through the real daemon (ADR-0010): a config file planted in a synced
vault cannot send notes or a secret off the machine; the user's own config can allow it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_harness import DaemonProc, eventually, wikimem
from test_http_embedder import Stub, stub  # noqa: F401  (the fixture)

from wikimem_watch.config import load_config, user_config_path
from wikimem_watch.daemon.runtime import default_socket_path, host_tag

pytestmark = pytest.mark.timeout(60)


def plant(vault: Path, text: str) -> None:
    (vault / ".wikimem").mkdir(exist_ok=True)
    (vault / ".wikimem" / "config.toml").write_text(text, encoding="utf-8")


def test_a_planted_vault_config_posts_nothing_and_leaks_no_secret(
    vault: Path,
    start_daemon: Callable[..., DaemonProc],
    stub: Stub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOME_OTHER_SECRET", "s3cret-token")
    plant(
        vault,
        f'embed = "http"\nembed_url = "{stub.url}"\nembed_model = "stub-16"\n'
        'embed_api_key_env = "SOME_OTHER_SECRET"\n',
    )
    daemon = start_daemon(vault)
    status = daemon.result("status")
    assert status["vectors"] == {"state": "off"}, "no embedder exists, so nothing can be sent"
    warnings = "\n".join(status["config_warnings"])
    assert "'embed_url' ignored" in warnings and "'embed_api_key_env' ignored" in warnings
    assert daemon.result("query", {"q": "sailing"})["hits"], "BM25 serves as usual"
    assert stub.requests == [] and stub.auth == []


def test_the_vault_may_pick_an_endpoint_the_user_allowed(
    vault: Path,
    start_daemon: Callable[..., DaemonProc],
    stub: Stub,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("USER_EMBED_KEY", "user-token")
    monkeypatch.setenv("SOME_OTHER_SECRET", "s3cret-token")
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[endpoints.stub]\nurl = "{stub.url}"\nmodel = "stub-16"\n'
        'api_key_env = "USER_EMBED_KEY"\n',
        encoding="utf-8",
    )
    plant(vault, 'embed_endpoint = "stub"\nembed_api_key_env = "SOME_OTHER_SECRET"\n')
    daemon = start_daemon(vault)
    eventually(lambda: daemon.result("status")["vectors"].get("rows", 0) >= 2, "vectors embedded")
    assert set(stub.auth) == {"Bearer user-token"}, "only the user's key variable is read"
    assert any(
        "'embed_api_key_env' ignored" in w for w in daemon.result("status")["config_warnings"]
    )


def test_a_fifo_planted_as_the_vault_config_does_not_block_the_daemon(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    (vault / ".wikimem").mkdir()
    os.mkfifo(vault / ".wikimem" / "config.toml")
    daemon = start_daemon(vault)
    assert any("not a regular file" in w for w in daemon.result("status")["config_warnings"])


def test_python_modules_in_the_vault_never_run_when_started_inside_it(tmp_path: Path) -> None:
    """``python -m wikimem_watch`` run from inside a vault: its working directory would come
    first on sys.path, so a ``yaml.py`` there would run when a note's front matter is read."""
    import subprocess
    import sys

    vault = tmp_path / "vault"
    (vault / "wiki").mkdir(parents=True)
    (vault / "wiki" / "front.md").write_text(
        "---\ntags: [x]\n---\n## Quince\n\n```\n## fenced\n```\nquince jam\n", encoding="utf-8"
    )
    marker = tmp_path / "ran"
    for name in ("yaml.py", "markdown_it/__init__.py"):
        (vault / name).parent.mkdir(exist_ok=True)
        (vault / name).write_text(f"open({str(marker)!r}, 'a').write({name!r})\n")
    done = subprocess.run(
        [sys.executable, "-m", "wikimem_watch", "query", "--vault", ".", "--in-process"]
        + ["--json", "quince"],
        cwd=vault,
        capture_output=True,
        text=True,
        timeout=30,
        env={k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"},
    )
    assert done.returncode == 0, done.stderr
    assert '"wiki/front.md"' in done.stdout
    assert not marker.exists(), marker.read_text()


def test_a_socket_symlink_planted_in_the_vault_leads_no_command_to_another_vaults_daemon(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    """A synced ``.wikimem/daemon-<host>.sock`` that is a symlink to another vault's socket:
    every command for this vault talked to that daemon (its notes answered, ``stop``
    stopped it). Now no command goes through it, and the other daemon lives."""
    other = start_daemon(vault)  # the daemon of another vault, on a socket of its own
    synced = Path(tempfile.mkdtemp(prefix="wmw-"))  # short: the default socket fits AF_UNIX
    try:
        (synced / "wiki").mkdir()
        (synced / "wiki" / "boats.md").write_text("## Kayak\nA kayak trip.\n", encoding="utf-8")
        planted = synced / ".wikimem" / f"daemon-{host_tag()}.sock"
        planted.parent.mkdir()
        assert default_socket_path(load_config(synced)) == planted  # the path clients try
        planted.symlink_to(other.sock)
        assert default_socket_path(load_config(synced)) != planted
        out = wikimem("query", "sailing", "--vault", str(synced))
        assert "people.md" not in out.stdout and out.returncode == 1
        assert "kayak" in wikimem("query", "kayak", "--vault", str(synced)).stdout.lower()
        stop = wikimem("stop", "--vault", str(synced))
        assert stop.returncode == 2 and "no daemon is running for vault" in stop.stderr
        assert other.proc.poll() is None and other.result("status")["state"] == "ready"
    finally:
        shutil.rmtree(synced)
