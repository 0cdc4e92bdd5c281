"""Random file operations on a live daemon's vault always end equal to a fresh scan."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from daemon_harness import DaemonProc, Rpc, short_socket_path, wikimem
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from wikimem_watch.config import load_config
from wikimem_watch.core.engine import Engine

WORDS = ["harbour", "lantern", "quince", "mistral", "茶馆", "雨伞", "orchard", "ember"]
DIRS = ["", "wiki", "notes", "notes/deep", "diary"]
QUIET_DEADLINE_S = 30.0


def body(words: list[str], diary: bool) -> str:
    if diary:
        return "".join(f"## {9 + i:02}:00\n{w} entry {i}\n\n" for i, w in enumerate(words))
    return "# Note\n\n" + "".join(f"## {w}\n{w} text about {w}\n\n" for w in words)


class VaultOperations(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="wmw-vault-"))
        for d in DIRS:
            (self.root / d).mkdir(parents=True, exist_ok=True)
        (self.root / "wiki" / "seed.md").write_text(body(["harbour"], False), "utf-8")
        self.daemon = DaemonProc(self.root, short_socket_path())
        self.daemon.wait_ready()
        self.counter = 0

    def notes(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*.md") if ".wikimem" not in p.parts)

    def subdirs(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*") if p.is_dir() and not p.name.startswith("."))

    def fresh_name(self, directory: Path, diary: bool) -> Path:
        self.counter += 1
        name = f"2026-07-{self.counter % 28 + 1:02}.md" if diary else f"n{self.counter}.md"
        return directory / name

    @rule(d=st.sampled_from(DIRS), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
    def create(self, d: str, words: list[str]) -> None:
        path = self.fresh_name(self.root / d, d == "diary")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body(words, d == "diary"), "utf-8")

    @rule(i=st.integers(0, 50), word=st.sampled_from(WORDS))
    def append(self, i: int, word: str) -> None:
        notes = self.notes()
        if notes:
            with notes[i % len(notes)].open("a", encoding="utf-8") as fh:
                fh.write(f"\n## 23:{i % 60:02}\n{word} appended\n")

    @rule(i=st.integers(0, 50), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2))
    def atomic_save(self, i: int, words: list[str]) -> None:
        notes = self.notes()
        if notes:
            target = notes[i % len(notes)]
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_text(body(words, False), "utf-8")
            os.replace(tmp, target)

    @rule(i=st.integers(0, 50))
    def delete(self, i: int) -> None:
        notes = self.notes()
        if notes:
            notes[i % len(notes)].unlink()

    @rule(i=st.integers(0, 50), d=st.sampled_from(DIRS))
    def rename(self, i: int, d: str) -> None:
        notes = self.notes()
        if notes and (self.root / d).is_dir():
            notes[i % len(notes)].rename(self.fresh_name(self.root / d, d == "diary"))

    @rule(i=st.integers(0, 50))
    def move_dir(self, i: int) -> None:
        dirs = self.subdirs()
        if dirs:
            src = dirs[i % len(dirs)]
            self.counter += 1
            src.rename(self.root / f"moved{self.counter}")

    @rule(i=st.integers(0, 50))
    def delete_dir(self, i: int) -> None:
        dirs = [d for d in self.subdirs() if d.name != "diary"]
        if dirs:
            shutil.rmtree(dirs[i % len(dirs)])

    def teardown(self) -> None:
        try:
            self.converge()
            result = wikimem("check", "--vault", str(self.root), "--socket", str(self.daemon.sock))
            assert result.returncode == 0, result.stdout + result.stderr
        finally:
            self.daemon.stop()
            shutil.rmtree(self.root, ignore_errors=True)

    def converge(self) -> None:
        """Wait until the daemon's index equals a fresh scan (polling, with a deadline)."""
        fresh = Engine(load_config(self.root))
        fresh.scan()
        deadline = time.monotonic() + QUIET_DEADLINE_S
        remote: dict[str, object] = {}
        while time.monotonic() < deadline:
            rpc = Rpc(self.daemon.sock)
            try:
                remote = rpc.result("file_digests")
            finally:
                rpc.close()
            if remote["digest"] == fresh.digest():
                return
            time.sleep(0.05)
        raise AssertionError(
            f"daemon never matched a fresh scan: {remote} vs {fresh.file_digests()}"
        )


@pytest.mark.timeout(240)
def test_any_file_operations_end_equal_to_a_fresh_scan() -> None:
    run_state_machine_as_test(
        VaultOperations,
        settings=settings(
            max_examples=10,
            stateful_step_count=15,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
