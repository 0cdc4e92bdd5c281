"""Two real daemons on two copies of a vault, kept in step by a copy loop that syncs the
whole folder, cache included (bench/sync_sim.py), against one counting stub embedder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from sync_sim import run_machines


@pytest.mark.timeout(120)
def test_two_synced_machines_embed_each_edit_once(tmp_path: Path) -> None:
    result = run_machines(2, 6, grace_s=2.0, pause_s=0.2, work=tmp_path)
    assert result["embedded_per_edit"] <= 7 / 6, result  # not 2 per edit: once, or nearly
    assert result["embedded_after_edits_stopped"] == 0, result
    assert result["embedded_on_restart"] == 0, result
    assert result["files_copied"] > 0, "the copy loop really synced the two copies"
