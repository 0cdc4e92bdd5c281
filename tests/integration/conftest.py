"""Fixtures for daemon tests: a small vault and real daemons that are always torn down."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from daemon_harness import DaemonProc, short_socket_path


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "diary").mkdir(parents=True)
    (root / "wiki").mkdir()
    (root / "diary" / "2026-07-20.md").write_text(
        "## 08:00\nMorning coffee with Ann at the harbour.\n", encoding="utf-8"
    )
    (root / "wiki" / "people.md").write_text(
        "# People\n\n## Ann\nAnn likes sailing and [[places]].\n", encoding="utf-8"
    )
    return root


@pytest.fixture
def start_daemon() -> Iterator[Callable[..., DaemonProc]]:
    started: list[DaemonProc] = []

    def start(vault: Path, *extra: str, sock: Path | None = None, ready: bool = True) -> DaemonProc:
        proc = DaemonProc(vault, sock or short_socket_path(), *extra)
        started.append(proc)
        if ready:
            proc.wait_ready()
        return proc

    try:
        yield start
    finally:
        for proc in started:
            proc.stop()


@pytest.fixture
def daemon(vault: Path, start_daemon: Callable[..., DaemonProc]) -> DaemonProc:
    return start_daemon(vault)
