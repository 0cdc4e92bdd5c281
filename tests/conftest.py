from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from watchdog.events import FileSystemEvent, FileSystemEventHandler

from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine

# A copy of vault_example/ for the whole session, without its .wikimem: a user's run leaves
# a cache there (an embedder record that in-process runs reuse, vectors, a socket), and the
# tests must read the example as a fresh clone has it.
EXAMPLE = Path(tempfile.mkdtemp(prefix="wmw-example-")) / "vault_example"
shutil.copytree(
    Path(__file__).resolve().parent.parent / "vault_example",
    EXAMPLE,
    ignore=shutil.ignore_patterns(".wikimem"),
)
atexit.register(shutil.rmtree, EXAMPLE.parent, True)

# The user's runtime and cache folders are this session's own (short, so sockets fit): daemons
# started by the tests leave their HTTP tokens, locks and index snapshots there, not in the
# developer's /tmp/wikimem-watch-<uid> and ~/.cache. Set before any test, inherited by every
# daemon a test starts; a test about these folders sets its own.
_USER_DIRS = Path(tempfile.mkdtemp(prefix="wmw-xdg-"))
for _name, _sub in (("XDG_RUNTIME_DIR", "run"), ("XDG_CACHE_HOME", "cache")):
    (_USER_DIRS / _sub).mkdir(mode=0o700)
    os.environ[_name] = str(_USER_DIRS / _sub)
atexit.register(shutil.rmtree, _USER_DIRS, True)


@pytest.fixture(autouse=True)
def _no_user_config(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests never read the real user's config.toml, nor write snapshots to ~/.cache."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("xdg-config")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


@pytest.fixture
def example_vault(tmp_path: Path) -> Path:
    """A private copy of vault_example/, safe to edit."""
    dst = tmp_path / "vault"
    shutil.copytree(
        EXAMPLE, dst, ignore=shutil.ignore_patterns(".wikimem")
    )  # a live cache or socket
    return dst


@pytest.fixture
def example_engine() -> Engine:
    """The example vault, scanned in-process (read-only use)."""
    engine = Engine(load_config(EXAMPLE))
    engine.scan()
    return engine


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def engine_for(root: Path, files: dict[str, str]) -> Engine:
    """A vault of ``files`` (path → text) under ``root``, scanned in-process."""
    for rel, text in files.items():
        write(root, rel, text)
    engine = Engine(load_config(root))
    engine.scan()
    return engine


def held(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str
) -> tuple[threading.Event, threading.Event]:
    """Patch ``owner.name`` so that a call waits, before it runs, until ``release`` is set;
    ``entered`` is set when a call arrives. Returns ``(entered, release)``."""
    entered, release = threading.Event(), threading.Event()
    real: Callable[..., Any] = getattr(owner, name)

    def waiting(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, waiting)
    return entered, release


def hits(result: dict[str, object]) -> list[dict[str, object]]:
    """The hits of a query result, checked to be a list."""
    value = result["hits"]
    assert isinstance(value, list)
    return value


@contextlib.contextmanager
def scripted_daemon(serve: Callable[[socket.socket], None]) -> Iterator[Path]:
    """A socket in the temp dir whose "daemon" is ``serve``, given its one connection on a
    thread of its own (closed when ``serve`` returns)."""
    path = Path(tempfile.gettempdir()) / f"wmw-{uuid.uuid4().hex[:10]}.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)

    def accept_one() -> None:
        conn, _ = server.accept()
        with conn:
            serve(conn)

    taker = threading.Thread(target=accept_one)
    taker.start()
    try:
        yield path
    finally:
        taker.join(10)
        server.close()
        path.unlink(missing_ok=True)


def hanging_up_daemon(vault: Path | None = None) -> contextlib.AbstractContextManager[Path]:
    """A socket whose "daemon" reads one request line and closes without a reply, as one
    that crashed or was stopped after taking a write may do. With ``vault``, it first
    answers a ``hello`` as that vault's daemon (a client that named the socket checks it)."""

    def take_and_hang_up(conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        request = json.loads(reader.readline())
        if vault is not None and request.get("method") == "hello":
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": {"vault": str(vault)}}
            conn.sendall(json.dumps(reply).encode() + b"\n")
            reader.readline()

    return scripted_daemon(take_and_hang_up)


class FakeObserver:
    """A scripted observer: tests push events straight into the scheduled handler."""

    def __init__(self) -> None:
        self.handler: FileSystemEventHandler | None = None
        self.path = ""
        self.started = False
        self.stopped = False

    def schedule(
        self,
        event_handler: FileSystemEventHandler,
        path: str,
        *,
        recursive: bool = False,
        event_filter: list[type[FileSystemEvent]] | None = None,
    ) -> object:
        self.handler, self.path = event_handler, path
        return object()

    def start(self) -> None:
        self.started = True

    def stop(self) -> None:
        self.stopped = True

    def join(self, timeout: float | None = None) -> None:
        pass

    def emit(self, event: FileSystemEvent) -> None:
        assert self.handler is not None
        self.handler.dispatch(event)
