"""Long-running fuzzing of the untrusted-input decoders (ADR-0011): the tests run the same
targets briefly; this runs them for as long as you like.

Run (from the repository root)::

    PYTHONPATH=. .venv/bin/python bench/fuzz.py --target parse --seconds 600
    PYTHONPATH=. .venv/bin/python bench/fuzz.py --target parse --engine hypothesis --examples 50000
    PYTHONPATH=. .venv/bin/python bench/fuzz.py --target parse --growth
    PYTHONPATH=. .venv/bin/python bench/fuzz.py --target protocol --seconds 300
    PYTHONPATH=. .venv/bin/python bench/fuzz.py --target request --engine hypothesis

Engines: ``atheris`` (coverage-guided, ``pip install atheris``) when it imports, else
``hypothesis`` with many examples. A target is a function of raw bytes that raises on a bug
(an invariant broken, or an exception the decoder should never let out). ``--growth`` times
each adversarial family of ``tests/property/test_parse_fuzz.py`` at growing sizes and prints
the time ratio per 4x of input (about 4 when linear, about 16 when quadratic).

Targets: ``parse`` (the Markdown parser), ``protocol`` (the JSON-RPC line decoder) and
``request`` (a whole socket line through ``handle_line`` over an in-process engine on a small
temporary vault; see ``bench/fuzz_targets_protocol.py``, which also runs on its own). Adding
a target: write ``def _my_target(data: bytes) -> None`` and add it to ``TARGETS``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wikimem_watch.core.parse import parse_meta, parse_note, strip_meta

Target = Callable[[bytes], None]
PATHS = ("diary/2026-01-01.md", "wiki/x.md", "diary/bad.md", "n.md")
SLOW_PARSE_S = 1.0  # a single parse of a fuzz input (a few KiB) this slow is reported


def _parse_target(data: bytes) -> None:
    """parse_note never raises, keeps ids unique and lines in range, and strips every
    well-formed metadata comment; a slow input is reported as a failure."""
    path = PATHS[data[0] % len(PATHS)] if data else PATHS[0]
    text = data[1:].decode("utf-8", errors="replace")
    started = time.perf_counter()
    parsed = parse_note(path, text)
    elapsed = time.perf_counter() - started
    if elapsed > SLOW_PARSE_S:
        raise AssertionError(f"parse took {elapsed:.2f}s for {len(data)} bytes")
    if any(w.startswith("could not parse") for w in parsed.warnings):
        raise AssertionError(f"parse_note caught an exception: {parsed.warnings}")
    ids = [e.id for e in parsed.entries]
    if len(ids) != len(set(ids)):
        raise AssertionError(f"duplicate ids: {ids}")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").count("\n") + 1
    for e in parsed.entries:
        if not 1 <= e.line <= lines:
            raise AssertionError(f"line {e.line} outside 1..{lines}")
        if strip_meta(e.text, lambda body: parse_meta(body) is not None) != e.text:
            raise AssertionError(f"a metadata comment stayed in the text of {e.id}")


def _protocol_target(data: bytes) -> None:
    from fuzz_targets_protocol import target_decode

    target_decode(data)


def _request_target() -> Target:
    import tempfile

    from fuzz_targets_protocol import make_service, target_handle_line

    root = Path(tempfile.mkdtemp(prefix="wikimem-fuzz-"))
    return target_handle_line(make_service(root))


TARGETS: dict[str, Target] = {
    "parse": _parse_target,
    "protocol": _protocol_target,
    "request": lambda data: _REQUEST.setdefault("run", _request_target())(data),
}
_REQUEST: dict[str, Target] = {}


def run_atheris(target: Target, seconds: int, corpus: list[str]) -> None:
    import atheris  # type: ignore[import-not-found]

    args = [sys.argv[0], f"-max_total_time={seconds}", "-max_len=65536", *corpus]
    atheris.instrument_all()  # coverage of everything loaded: the decoder and its libraries
    atheris.Setup(args, target)
    atheris.Fuzz()


def run_hypothesis(target: Target, examples: int) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from tests.property.test_parse_fuzz import ADVERSARIAL_PIECES

    pieces = st.lists(st.sampled_from(ADVERSARIAL_PIECES), max_size=400).map("".join)
    data = st.one_of(st.binary(max_size=4096), pieces.map(lambda s: b"\x01" + s.encode()))

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(data)
    def fuzz(raw: bytes) -> None:
        target(raw)

    started = time.perf_counter()
    fuzz()
    print(f"{examples} examples passed in {time.perf_counter() - started:.1f}s")


def report_growth(repeats: int) -> None:
    """Time every adversarial family at 1x, 4x and 16x; print the ratio per 4x."""
    from tests.property.test_parse_fuzz import BASE_UNITS, FAMILIES

    print(f"{'family':34s} {'bytes@1x':>9s} {'1x ms':>8s} {'4x ms':>8s} {'16x ms':>9s}  ratios")
    for name, make in sorted(FAMILIES.items()):
        times = []
        for scale in (1, 4, 16):
            text = make(BASE_UNITS * scale)
            best = float("inf")
            for _ in range(repeats):
                started = time.perf_counter()
                parse_note("wiki/fuzz.md", text)
                best = min(best, time.perf_counter() - started)
            times.append(best)
        size = len(make(BASE_UNITS))
        r1, r2 = times[1] / max(times[0], 1e-9), times[2] / max(times[1], 1e-9)
        ms = "".join(f" {t * 1000:8.2f}" for t in times)
        print(f"{name:34s} {size:9d}{ms}  {r1:4.1f} {r2:4.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=sorted(TARGETS), default="parse")
    parser.add_argument("--engine", choices=["auto", "atheris", "hypothesis"], default="auto")
    parser.add_argument("--seconds", type=int, default=300, help="atheris run time")
    parser.add_argument("--examples", type=int, default=20_000, help="hypothesis examples")
    parser.add_argument("--corpus", nargs="*", default=[], help="atheris corpus directories")
    parser.add_argument("--growth", action="store_true", help="print parse-time growth")
    parser.add_argument("--repeats", type=int, default=3, help="growth: min of this many")
    args = parser.parse_args()
    if args.growth:
        report_growth(args.repeats)
        return 0
    target = TARGETS[args.target]
    engine = args.engine
    if engine == "auto":
        try:
            import atheris  # noqa: F401

            engine = "atheris"
        except ImportError:
            engine = "hypothesis"
    print(f"fuzzing {args.target!r} with {engine}", flush=True)
    if engine == "atheris":
        run_atheris(target, args.seconds, args.corpus)
    else:
        run_hypothesis(target, args.examples)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
