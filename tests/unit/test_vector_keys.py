"""Vector keys as a column (core/vector_keys.py): lookups, lazy texts, and the snapshot."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from wikimem_watch.config import load_config
from wikimem_watch.core import engine as engine_module
from wikimem_watch.core import prepare as prepare_module
from wikimem_watch.core.engine import Engine
from wikimem_watch.core.parse import text_hash
from wikimem_watch.core.snapshot import scan_with_snapshot
from wikimem_watch.core.vector_keys import EmbeddingInputs, VectorKeys, hex_keys, key_of


def test_a_key_finds_every_slot_that_has_it_and_none_once_dropped() -> None:
    keys = VectorKeys()
    keys.set([0, 1, 5], ["same", "other", "same"])
    same = text_hash("same")
    assert keys.hex(0) == keys.hex(5) == same and keys.hex(1) == text_hash("other")
    assert sorted(keys.slots_of([same]).tolist()) == [0, 5]
    keys.drop([0])
    assert keys.slots_of([same]).tolist() == [5]
    keys.set([2000], ["same"])  # grows past the first capacity
    assert sorted(keys.slots_of([same, text_hash("other")]).tolist()) == [1, 5, 2000]
    assert keys.slots_of(["not hex", "ab", text_hash("nowhere")]).size == 0
    assert sorted(hex_keys(keys.live())) == sorted([text_hash("other"), same, same])


def test_embedding_inputs_make_a_text_only_when_asked() -> None:
    a, b, gone = (key_of(t).hex() for t in ("a", "b", "gone"))
    raw = np.frombuffer(b"".join(bytes.fromhex(k) for k in (a, b, a, gone)), dtype=np.uint8)
    asked: list[str] = []

    def text_of(key: str) -> str | None:
        asked.append(key)
        return key[:4] if key in (a, b) else None  # the engine: no live entry, no text

    listed: list[int] = []

    def keys() -> np.ndarray:
        listed.append(1)
        return raw.reshape(4, -1)

    inputs = EmbeddingInputs(keys, text_of)
    assert inputs[a] == a[:4] and asked == [a] and listed == []  # a text without the list
    assert list(inputs) == [a, b, gone] and len(inputs) == 3  # each key once, in slot order
    assert b in inputs and "z" not in inputs and asked == [a] and listed == [1]
    assert inputs.get(gone) is None and inputs.get("z") is None
    with pytest.raises(KeyError):
        inputs[gone]


def _vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / "diary").mkdir(parents=True)
    (root / "diary" / "2026-07-20.md").write_text("## 09:00\nkites\n\n## 09:05\nthe red one\n")
    (root / "wiki").mkdir()
    (root / "wiki" / "a.md").write_text("## Kites\nred and blue\n")
    return root


def test_an_edited_entry_has_no_text_under_its_old_key(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    engine = Engine(load_config(root, {"embed": "hash", "snapshot": False}))
    engine.scan()
    inputs = engine.embedding_inputs()
    old = next(key for key, text in inputs.items() if text.endswith("the red one"))
    (root / "diary" / "2026-07-20.md").write_text("## 09:00\nkites\n\n## 09:05\nthe blue one\n")
    engine.apply(["diary/2026-07-20.md"])
    assert old in inputs and inputs.get(old) is None  # edited since it was read: skipped
    assert any(t.endswith("the blue one") for t in engine.embedding_inputs().values())


def test_a_snapshot_keeps_the_vector_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _vault(tmp_path)
    flags = {"embed": "hash", "snapshot_dir": str(tmp_path / "snap")}
    scan_with_snapshot(Engine(load_config(root, {**flags, "embed": "none"})))
    # A snapshot saved without an embedder: the keys are made from the texts, once, and the
    # snapshot is written again with them.
    upgraded = Engine(load_config(root, flags))
    scan_with_snapshot(upgraded)
    assert upgraded.vector_keys_missing
    fresh = Engine(load_config(root, {**flags, "snapshot": False}))
    fresh.scan()
    assert dict(upgraded.embedding_inputs()) == dict(fresh.embedding_inputs())
    # Now the keys come from the snapshot: no embedded text is made at the start.
    made: list[int] = []
    real = engine_module.embedding_texts

    def counting(entries: list[object]) -> list[str]:
        made.append(len(entries))
        return real(entries)  # type: ignore[arg-type]

    monkeypatch.setattr(engine_module, "embedding_texts", counting)
    monkeypatch.setattr(prepare_module, "embedding_texts", counting)  # a file read again
    restored = Engine(load_config(root, flags))
    stats = scan_with_snapshot(restored)
    assert stats.changed == [] and not restored.vector_keys_missing and made == []
    assert dict(restored.embedding_inputs()) == dict(fresh.embedding_inputs())


def test_lookups_stay_right_through_edits_after_the_keys_were_sorted() -> None:
    """Against a plain dict, through sets, drops and slot reuse after the first lookup."""
    rng = np.random.default_rng(11)
    keys, model = VectorKeys(), {}
    texts = [f"text {n}" for n in range(40)]
    for step in range(3000):
        slot, text = int(rng.integers(0, 300)), texts[int(rng.integers(0, 40))]
        if rng.random() < 0.3:
            keys.drop([slot])
            model.pop(slot, None)
        else:
            keys.set([slot], [text])
            model[slot] = text_hash(text)
        if step % 7 == 0:
            probe = text_hash(texts[int(rng.integers(0, 40))])
            want = sorted(s for s, k in model.items() if k == probe)
            assert keys.slots_of([probe]).tolist() == want
