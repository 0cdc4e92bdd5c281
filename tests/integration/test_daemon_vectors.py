"""Embeddings through the real daemon, against a stub OpenAI-compatible server that counts."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from daemon_harness import DaemonProc, eventually, wikimem
from test_http_embedder import Stub, stub  # noqa: F401  (the fixture)


def embedded_texts(state: Stub) -> int:
    return sum(len(r["input"]) for r in state.requests)  # type: ignore[arg-type]


def settled(daemon: DaemonProc) -> bool:
    status = daemon.result("status")
    vectors = status["vectors"]
    return bool(status["pending"] == 0 and vectors["state"] == "ready" and vectors["pending"] == 0)


def has_note(daemon: DaemonProc, path: str) -> bool:
    rpc = daemon.rpc()
    try:
        return "result" in rpc.call("note", {"path": path})
    finally:
        rpc.close()


def serve_http(start: Callable[..., DaemonProc], vault: Path, state: Stub) -> DaemonProc:
    daemon = start(vault, "--embed", "http", "--embed-url", state.url, "--embed-model", "stub-16")
    eventually(lambda: settled(daemon), "vectors ready", deadline_s=30)
    return daemon


@pytest.mark.timeout(120)
def test_restart_rename_and_edit_cost_only_what_changed(
    vault: Path,
    start_daemon: Callable[..., DaemonProc],
    stub: Stub,  # noqa: F811
) -> None:
    daemon = serve_http(start_daemon, vault, stub)
    first = embedded_texts(stub)
    assert first == 2  # one diary entry, one wiki item
    assert daemon.result("status")["vectors"]["rows"] >= 2
    daemon.stop()

    daemon = serve_http(start_daemon, vault, stub)
    assert embedded_texts(stub) == first, "a restart over an unchanged vault embeds nothing"

    os.rename(vault / "wiki", vault / "topics")
    eventually(lambda: has_note(daemon, "topics/people.md"), "rename seen")
    eventually(lambda: settled(daemon), "vectors settle after rename")
    assert embedded_texts(stub) == first, "a folder rename embeds nothing"

    day = vault / "diary" / "2026-07-20.md"
    day.write_text(
        day.read_text(encoding="utf-8") + "\n## 09:00\nA new entry about kites.\n", encoding="utf-8"
    )
    eventually(lambda: daemon.result("status")["entries"]["diary"] == 2, "edit applied")
    eventually(lambda: settled(daemon), "vectors settle after edit")
    assert embedded_texts(stub) == first + 1, "one new entry, one embedding"

    # The 09:00 entry reads the tail of the 08:00 one (ADR-0008): editing 08:00 re-embeds both.
    before = embedded_texts(stub)
    day.write_text(
        day.read_text(encoding="utf-8").replace("Morning coffee", "Morning tea"), encoding="utf-8"
    )
    note = {"path": "diary/2026-07-20.md"}
    eventually(lambda: "Morning tea" in str(daemon.result("note", note)), "edit seen")
    eventually(lambda: settled(daemon), "vectors settle after the second edit")
    assert embedded_texts(stub) == before + 2, "the edited entry and the one reading it"

    result = daemon.result("query", {"q": "kites", "explain": True})
    assert result["embedding_used"] is True
    assert result["hits"][0]["explain"]["cosine"] is not None


@pytest.mark.timeout(120)
def test_an_embedder_added_after_a_snapshot_embeds_the_vault(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    daemon = start_daemon(vault)  # BM25 only: its snapshot holds no vector keys
    daemon.stop()  # a stop writes the snapshot
    daemon = start_daemon(vault, "--embed", "hash")
    assert daemon.result("status")["snapshot"]["loaded"] is True
    eventually(lambda: daemon.result("status")["vectors"]["rows"] == 2, "both entries embedded")
    daemon.stop()

    for name in os.listdir(vault / ".wikimem"):  # the vector cache deleted, as users may
        if name.startswith("vectors") or name.startswith("seg-"):
            os.unlink(vault / ".wikimem" / name)
    daemon = start_daemon(vault, "--embed", "hash")
    assert daemon.result("status")["snapshot"]["loaded"] is True
    eventually(lambda: daemon.result("status")["vectors"]["rows"] == 2, "embedded again")
    assert daemon.result("query", {"q": "sailing"})["embedding_used"] is True


@pytest.mark.timeout(60)
def test_unreachable_endpoint_degrades_to_bm25(
    vault: Path, start_daemon: Callable[..., DaemonProc]
) -> None:
    daemon = start_daemon(
        vault,
        "--embed",
        "http",
        "--embed-url",
        "http://127.0.0.1:9/v1",
        "--embed-model",
        "none-such",
    )
    result = daemon.result("query", {"q": "sailing"})
    assert result["hits"] and result["embedding_used"] is False
    eventually(lambda: daemon.result("status")["vectors"]["state"] == "error", "error reported")
    assert daemon.result("status")["vectors"]["last_error"]


@pytest.mark.timeout(60)
def test_embed_method_without_an_embedder_is_a_clear_error(daemon: DaemonProc) -> None:
    rpc = daemon.rpc()
    try:
        reply = rpc.call("embed", {})
    finally:
        rpc.close()
    assert reply["error"]["code"] == -32001 and "--embed" in reply["error"]["message"]
    out = wikimem("embed", "--socket", str(daemon.sock))
    assert out.returncode == 2 and "embeddings are off" in out.stderr
    assert "--embed local|http|hash" in out.stderr  # every embedder, as `embed` in-process says


@pytest.mark.timeout(120)
def test_a_model_change_is_a_mismatch_until_embed_rebuild(
    vault: Path,
    start_daemon: Callable[..., DaemonProc],
    stub: Stub,  # noqa: F811
) -> None:
    daemon = start_daemon(vault, "--embed", "hash")
    eventually(lambda: settled(daemon), "hash vectors ready")
    daemon.stop()

    daemon = start_daemon(
        vault, "--embed", "http", "--embed-url", stub.url, "--embed-model", "stub-16"
    )
    vectors = daemon.result("status")["vectors"]
    assert vectors["state"] == "mismatch"
    assert daemon.result("query", {"q": "sailing"})["embedding_used"] is False
    assert embedded_texts(stub) == 0, "a mismatch never re-embeds by itself"

    out = wikimem("embed", "--socket", str(daemon.sock), "--rebuild", timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ready" in out.stdout
    assert embedded_texts(stub) == 2
    assert daemon.result("query", {"q": "sailing"})["embedding_used"] is True


@pytest.mark.timeout(120)
def test_a_failed_rebuild_keeps_the_working_cache(
    vault: Path,
    start_daemon: Callable[..., DaemonProc],
    stub: Stub,  # noqa: F811
) -> None:
    daemon = serve_http(start_daemon, vault, stub)
    assert daemon.result("query", {"q": "sailing"})["embedding_used"] is True
    cache = vault / ".wikimem"
    before = sorted(p.name for p in cache.glob("*.keys.jsonl"))
    assert before
    stub.status = 503  # the endpoint goes down
    out = wikimem("embed", "--socket", str(daemon.sock), "--rebuild", timeout=60)
    assert out.returncode == 1 and "503" in out.stdout
    vectors = daemon.result("status")["vectors"]
    assert vectors["rows"] >= 2 and vectors["state"] == "error"
    assert sorted(p.name for p in cache.glob("*.keys.jsonl")) == before, "nothing deleted"
    assert daemon.result("query", {"q": "sailing"})["embedding_used"] is True
    daemon.stop()
    stub.status = 200
    daemon = serve_http(start_daemon, vault, stub)
    assert daemon.result("status")["vectors"]["rows"] >= 2
