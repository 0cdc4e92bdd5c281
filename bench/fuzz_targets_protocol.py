"""Fuzz targets for the socket's protocol decoder and request path (``bench/fuzz.py`` merges
these into ``--target protocol``; ``tests/property/test_protocol_fuzz.py`` runs them briefly).

A target takes bytes and raises ``AssertionError`` when an invariant breaks:

- ``decode_request`` raises nothing but :class:`ProtocolError` with a JSON-RPC code;
- ``handle_line`` over a real in-process engine answers every line that is not a
  notification with exactly one strict-JSON line (no NaN), an error or a result, and never
  raises; an internal error (``-32603``) is itself a failure, since no input may cause one.

Run standalone: ``python bench/fuzz_targets_protocol.py --seconds 30`` (random mutations
of valid requests, plus hostile shapes: deep nesting, NaN, huge numbers, bad UTF-8).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from wikimem_watch.config import Config  # noqa: E402
from wikimem_watch.core.engine import Engine  # noqa: E402
from wikimem_watch.daemon.protocol import INTERNAL_ERROR, ProtocolError, decode_request  # noqa: E402
from wikimem_watch.daemon.server import handle_line  # noqa: E402
from wikimem_watch.retrieval.query import VectorSignal  # noqa: E402

SEEDS = [
    b'{"jsonrpc":"2.0","id":1,"method":"query","params":{"q":"coffee yesterday","k":3}}',
    b'{"jsonrpc":"2.0","id":2,"method":"query","params":{"q":"x","weights":{"recency":0.1},'
    b'"half_life_days":7,"time_range":["2026-07-01","2026-07-31"],"explain":true}}',
    b'{"jsonrpc":"2.0","id":"a","method":"day","params":{"date":"2026-07-21"}}',
    b'{"jsonrpc":"2.0","id":3,"method":"days","params":{"start":"2026-07-01"}}',
    b'{"jsonrpc":"2.0","id":4,"method":"note","params":{"path":"people.md"}}',
    b'{"jsonrpc":"2.0","id":5,"method":"links","params":{"path":"diary/2026-07-21.md"}}',
    b'{"jsonrpc":"2.0","id":6,"method":"status"}',
    b'{"jsonrpc":"2.0","method":"hello"}',
]
HOSTILE = [
    b"[" * 5000,
    b'{"a":' * 5000,
    b'{"jsonrpc":"2.0","id":1,"method":"query","params":{"q":"x","half_life_days":NaN}}',
    b'{"jsonrpc":"2.0","id":1,"method":"query","params":{"q":"x","weights":{"bm25":1e999}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"query","params":{"q":"x","k":' + b"9" * 5000 + b"}}",
    b'{"jsonrpc":"2.0","id":1,"method":"query","params":{"q":"\\ud800"}}',
    b"\xff\xfe\x00garbage",
]


class _Service:
    """A daemon stand-in over a real engine (the methods under test are the real ones)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def status(self) -> dict[str, object]:
        return {"state": "ready"}

    def reindex(self) -> dict[str, object]:
        return {"changed": 0}

    def request_stop(self) -> None:
        return None

    def vector_signal(self) -> VectorSignal | None:
        return None

    def embed(self, rebuild: bool) -> dict[str, object]:
        return {"state": "off"}


def make_service(root: Path) -> _Service:
    (root / "diary").mkdir(exist_ok=True)
    (root / "diary" / "2026-07-21.md").write_text(
        "## 08:00\ncoffee with [[people]]\n\n## 09:00\nwalk\n", encoding="utf-8"
    )
    (root / "people.md").write_text("# People\n\n## Ann\nlikes coffee\n", encoding="utf-8")
    engine = Engine(Config(vault=root))
    engine.scan()
    return _Service(engine)


def target_decode(data: bytes) -> None:
    try:
        decode_request(data)
    except ProtocolError as exc:
        assert -32700 <= exc.code <= -32600, exc.code


def target_handle_line(service: _Service) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        reply, _ = handle_line(service, data)  # type: ignore[arg-type]
        if reply is None:
            return  # a notification
        assert reply.endswith(b"\n") and reply.count(b"\n") == 1, reply[:200]
        obj = json.loads(reply, parse_constant=_no_constants)
        assert obj["jsonrpc"] == "2.0" and ("result" in obj) != ("error" in obj), obj
        if "error" in obj:
            assert obj["error"]["code"] != INTERNAL_ERROR, obj["error"]

    return run


def _no_constants(name: str) -> object:
    raise AssertionError(f"reply carries {name}, which is not JSON")


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One random edit: flip, insert, delete, duplicate a slice, or splice a hostile seed."""
    buf = bytearray(data)
    op = rng.randrange(6)
    pos = rng.randrange(len(buf) + 1)
    if op == 0 and buf:
        buf[min(pos, len(buf) - 1)] ^= 1 << rng.randrange(8)
    elif op == 1:
        buf[pos:pos] = bytes([rng.choice(b'{}[]",:0123456789eE.-+aNIn\\u \x00\xff')])
    elif op == 2 and buf:
        del buf[pos : pos + rng.randrange(1, 8)]
    elif op == 3 and buf:
        end = min(len(buf), pos + rng.randrange(1, 32))
        buf[pos:pos] = buf[pos:end] * rng.randrange(1, 50)
    elif op == 4:
        buf[pos:pos] = rng.choice([b"NaN", b"Infinity", b"-1e999", b"[[[[", b'"\\ud800"'])
    else:
        buf = bytearray(rng.choice(HOSTILE))
    return bytes(buf)


def fuzz(seconds: float, seed: int) -> int:
    """Mutate seeds for ``seconds``; returns how many inputs ran (raises on a finding)."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        run = target_handle_line(make_service(Path(tmp)))
        deadline = time.monotonic() + seconds
        n = 0
        corpus = list(SEEDS)
        while time.monotonic() < deadline:
            data = mutate(rng, rng.choice(corpus))
            try:
                target_decode(data)
                run(data)
            except AssertionError:
                print(f"finding after {n} inputs: {data[:300]!r}", file=sys.stderr)
                raise
            n += 1
            if len(corpus) < 200 and rng.random() < 0.05:
                corpus.append(data[:4096])
        return n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    n = fuzz(args.seconds, args.seed)
    print(f"protocol fuzz: {n} inputs in {args.seconds:g}s, no findings")
    return 0


TARGETS = {"protocol": target_decode}

if __name__ == "__main__":
    raise SystemExit(main())
