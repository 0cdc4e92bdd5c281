"""The query path: time gate, filters, signal fusion, top-k, link expansion and the budget.

Every shell (CLI, socket, Python) calls :func:`run_query`; it only reads the engine, under the
engine's lock, so a query sees one consistent generation of the index.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import numpy.typing as npt

from .engine import Engine
from .errors import BadRequest
from .models import Entry
from .request import QueryRequest
from .retrieve import Weights, budget_cut, normalise_max, normalise_minmax, recency, top_k
from .timeparse import parse_time_range
from .tokenize import estimate_tokens
from .vault import glob_match

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
_EPOCH = date(1970, 1, 1).toordinal()
WIDEN_STEPS_DAYS = (1, 3)
VECTOR_POOL = 200  # BM25 candidates that get a cosine (ADR-0007)
# A matched time expression that names a calendar date: a year, a month name, or M月.
_ABSOLUTE = re.compile(
    r"\d{4}|\d+\s*月|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b", re.I
)


class VectorSignal(Protocol):
    """Cosine similarity for the query, keyed by vector key (content hash of the embedded text)."""

    def cosines(self, text: str, keys: list[str], limit: int) -> dict[str, float] | None:
        """Cosines for ``keys`` plus the ``limit`` nearest of all; None when unavailable."""

    def warm(self, text: str) -> None:
        """Embed the query ahead (outside the engine lock), so ``cosines`` finds it ready."""


@dataclass(frozen=True, slots=True)
class Gate:
    """The diary window a query is filtered by, and where it came from."""

    start: date
    end: date
    source: str  # "explicit" | "parsed"
    start_time: str | None = None
    end_time: str | None = None
    matched: str | None = None
    widened: int = 0  # days added on each side
    fallback: str | None = None  # why a parsed window was not applied: "weak" | "empty"

    def contains(self, entry: Entry) -> bool:
        if entry.date is None:
            return True
        d = date.fromisoformat(entry.date)
        if not self.start <= d <= self.end:
            return False
        if self.start_time and entry.time and self.start == self.end and not self.widened:
            return self.start_time <= entry.time <= (self.end_time or "23:59")
        return True

    def widen(self, days: int) -> Gate:
        return replace(
            self, start=self.start - timedelta(days), end=self.end + timedelta(days), widened=days
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "start_time": self.start_time,
            "end_time": self.end_time,
            "source": self.source,
            "matched": self.matched,
            "widened_days": self.widened,
            "fallback": self.fallback,
        }


def _local_now(req: QueryRequest) -> datetime:
    zone = None
    if req.tz:
        try:
            zone = ZoneInfo(req.tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise BadRequest(f"tz: unknown time zone {req.tz!r} (e.g. 'Asia/Shanghai')") from None
    now = req.now or datetime.now().astimezone()
    if zone is not None:
        now = now.astimezone(zone) if now.tzinfo else now.replace(tzinfo=zone)
    return now


def resolve_gate(req: QueryRequest, now: datetime) -> tuple[Gate | None, str, bool]:
    """(window, text left for BM25, time-only?) for a request."""
    if isinstance(req.time_range, tuple):
        return Gate(req.time_range[0], req.time_range[1], "explicit"), req.q, False
    if isinstance(req.time_range, str):
        found = parse_time_range(req.time_range, now=now.replace(tzinfo=None))
        if found is None:
            raise BadRequest(f"time_range: no date or time expression in {req.time_range!r}")
        gate = Gate(
            found.start,
            found.end,
            "explicit",
            _hhmm(found.start_time),
            _hhmm(found.end_time),
            found.matched,
        )
        return gate, req.q, False
    if not req.parse_time:
        return None, req.q, False
    found = parse_time_range(req.q, now=now.replace(tzinfo=None))
    if found is None:
        return None, req.q, False
    if not _ABSOLUTE.search(found.matched):
        # "last week, as mentioned on 6 November 2023": a calendar date in the same question
        # is a firmer anchor than a relative word resolved against `now`.
        second = parse_time_range(found.rest, now=now.replace(tzinfo=None))
        if second is not None and _ABSOLUTE.search(second.matched):
            found = second
    gate = Gate(
        found.start,
        found.end,
        "parsed",
        _hhmm(found.start_time),
        _hhmm(found.end_time),
        found.matched,
    )
    return gate, found.rest, found.time_only


def _hhmm(value: object) -> str | None:
    return value.strftime("%H:%M") if hasattr(value, "strftime") else None


def run_query(
    engine: Engine, req: QueryRequest, vectors: VectorSignal | None = None
) -> dict[str, object]:
    """Answer one query. The result is exactly what ``query --json`` prints."""
    started = time.perf_counter()
    vectors = vectors if vectors is not None else engine.vectors
    if not engine.tracks_vectors:
        vectors = None  # the engine keeps no vector keys without an embedder (ADR-0008)
    now = _local_now(req)
    gate, text, time_only = resolve_gate(req, now)
    terms = engine.tokenizer(text)
    if vectors is not None and _weights(engine, req).vector > 0 and text.strip():
        vectors.warm(text)  # a model call must not hold the lock the writer needs
    with engine.lock:
        if gate is not None and (time_only or not terms):
            hits, gate = _window_listing(engine, req, gate)
            embedding_used = False
        else:
            hits, gate, embedding_used = _ranked(engine, req, gate, text, terms, now, vectors)
    return {
        "q": req.q,
        "hits": hits,
        "time_range": gate.as_dict() if gate else None,
        "time_range_source": gate.source if gate else None,
        "widened": bool(gate and gate.widened),
        "query_terms": terms,
        "embedding_used": embedding_used,
        "generation": engine.generation,
        "took_ms": round((time.perf_counter() - started) * 1000.0, 3),
    }


def _passes(req: QueryRequest, entry: Entry) -> bool:
    if entry.kind not in req.kinds:
        return False
    if req.paths and not glob_match(entry.path, req.paths):
        return False
    return not req.tags or any(t in entry.tags for t in req.tags)


def _window_listing(
    engine: Engine, req: QueryRequest, gate: Gate
) -> tuple[list[dict[str, object]], Gate]:
    """A time-only question: the window's diary entries, newest first."""
    steps = (0, *WIDEN_STEPS_DAYS)
    for days in steps:
        g = gate.widen(days) if days else gate
        found = [
            e for e in engine.window_entries(g.start, g.end) if g.contains(e) and _passes(req, e)
        ]
        if found or days == steps[-1]:
            found.sort(key=lambda e: (e.date or "", e.time or "", e.line), reverse=True)
            budget = _budget(found[: req.k], req.budget_tokens)
            return [_hit(e, None, []) for e in budget], g
    raise AssertionError("unreachable")


def _ranked(
    engine: Engine,
    req: QueryRequest,
    gate: Gate | None,
    text: str,
    terms: list[str],
    now: datetime,
    vectors: VectorSignal | None,
) -> tuple[list[dict[str, object]], Gate | None, bool]:
    slots, raw = engine.index.score(terms)
    day, is_wiki, epoch = engine.slot_arrays()
    weights = _weights(engine, req)
    keep = _filter(engine, req, slots)
    slots, raw = slots[keep], raw[keep]
    if gate is not None:
        slots, raw, gate = _gate(engine, gate, slots, raw, day, is_wiki)
    slots, raw, cos, embedding_used = _with_vectors(
        engine, req, gate, vectors, text, slots, raw, weights
    )
    bm25_norm = normalise_max(raw)
    fused = weights.bm25 * bm25_norm
    cos_norm = normalise_minmax(np.nan_to_num(cos), ~np.isnan(cos))
    fused += weights.vector * cos_norm
    now_days = now.toordinal() - _EPOCH + (now.hour * 60 + now.minute) / 1440.0
    half_life = req.half_life_days or engine.config.half_life_days
    rec = recency(now_days - epoch[slots], half_life) if slots.size else np.zeros(0)
    fused += weights.recency * rec
    order = top_k(fused, req.k, lambda j: engine.slot_entry(int(slots[j])).id)
    hits: list[dict[str, object]] = []
    seen: set[str] = set()
    for j in order:
        entry = engine.slot_entry(int(slots[j]))
        matched = engine.index.matched_terms(int(slots[j]), terms)
        hit = _hit(entry, float(fused[j]), matched)
        if req.explain:
            hit["explain"] = {
                "bm25_raw": float(raw[j]),
                "bm25_norm": float(bm25_norm[j]),
                "cosine": None if np.isnan(cos[j]) else float(cos[j]),
                "cosine_norm": float(cos_norm[j]),
                "recency": float(rec[j]),
                "half_life_days": half_life,
                "weights": weights.as_dict(),
                "matched_terms": matched,
                "time_gate": gate.as_dict() if gate else None,
                "via": None,
            }
        hits.append(hit)
        seen.add(entry.id)
    if req.expand_links:
        hits = _expand(engine, req, hits, seen, terms)
    costs = [estimate_tokens(f"{h['heading']}\n{h['text']}") for h in hits]
    return hits[: budget_cut(costs, req.budget_tokens)], gate, embedding_used


def _gate(
    engine: Engine,
    gate: Gate,
    slots: I64,
    raw: F64,
    day: npt.NDArray[np.int32],
    is_wiki: npt.NDArray[np.bool_],
) -> tuple[I64, F64, Gate]:
    """Keep wiki items and the diary entries inside the window.

    A window whose best diary match is missing or weak (below ``gate_fallback_ratio`` of the
    best diary match anywhere) widens by ±1 then ±3 days. A *parsed* window that is still weak
    is not applied at all (``fallback``): a time word the parser read right can still point
    away from the evidence, and narrow must not become wrong. An explicit window always holds.
    """
    diary = ~is_wiki[slots]
    best_all = float(raw[diary].max()) if diary.any() else 0.0
    ratio = engine.config.gate_fallback_ratio
    g = gate
    for days in (0, *WIDEN_STEPS_DAYS):
        g = gate.widen(days) if days else gate
        inside = _inside(engine, g, slots, day)
        best_in = float(raw[inside].max()) if inside.any() else 0.0
        if best_in > 0.0 and best_in >= ratio * best_all:
            keep = is_wiki[slots] | inside
            return slots[keep], raw[keep], g
    if gate.source == "parsed" and best_all > 0.0:
        return slots, raw, replace(g, fallback="weak" if inside.any() else "empty")
    keep = is_wiki[slots] | inside
    return slots[keep], raw[keep], g


def _weights(engine: Engine, req: QueryRequest) -> Weights:
    c = engine.config
    w = {"bm25": c.weight_bm25, "vector": c.weight_vector, "recency": c.weight_recency}
    w.update(req.weights or {})
    return Weights(w["bm25"], w["vector"], w["recency"])


def _filter(engine: Engine, req: QueryRequest, slots: I64) -> npt.NDArray[np.bool_]:
    """Which candidates pass ``kinds``, ``paths`` and ``tags``."""
    _, is_wiki, _ = engine.slot_arrays()
    keep = np.ones(slots.size, dtype=bool)
    if "wiki" not in req.kinds:
        keep &= ~is_wiki[slots]
    if "diary" not in req.kinds:
        keep &= is_wiki[slots]
    if req.paths or req.tags:
        keep &= np.fromiter((_passes(req, engine.slot_entry(s)) for s in slots), bool, slots.size)
    return keep


def _inside(
    engine: Engine, g: Gate, slots: I64, day: npt.NDArray[np.int32]
) -> npt.NDArray[np.bool_]:
    """Which candidates are diary entries inside the window (times of day for one day)."""
    d = day[slots]
    inside = (d >= g.start.toordinal()) & (d <= g.end.toordinal())
    if g.start_time and g.start == g.end and not g.widened:
        inside &= np.fromiter((g.contains(engine.slot_entry(s)) for s in slots), bool, slots.size)
    return inside


def _with_vectors(
    engine: Engine,
    req: QueryRequest,
    gate: Gate | None,
    vectors: VectorSignal | None,
    text: str,
    slots: I64,
    raw: F64,
    weights: Weights,
) -> tuple[I64, F64, F64, bool]:
    """Add the cosine signal: (slots, raw BM25, cosine or NaN, embedding used).

    Cosines are asked for the best ``VECTOR_POOL`` BM25 candidates and the nearest entries of
    the whole cache; a nearest entry that BM25 missed joins the candidates (BM25 0) once it
    passes the same filters and gate. Candidates outside both pools keep a cosine of "absent".
    """
    cos = np.full(slots.size, np.nan)
    if vectors is None or weights.vector <= 0 or not text.strip():
        return slots, raw, cos, False
    pool = np.argsort(-raw, kind="stable")[:VECTOR_POOL]
    keys = [engine.vector_key(int(s)) for s in slots[pool]]
    found = vectors.cosines(text, keys, max(50, req.k * 5))
    if found is None:
        return slots, raw, cos, False
    cos[pool] = [found.get(key, np.nan) for key in keys]
    pooled = set(keys)
    near = engine.slots_of_keys(key for key in found if key not in pooled)
    # BM25 candidates beyond the pool that the vectors found: slots are sorted ascending.
    at = np.searchsorted(slots, near)
    known = np.zeros(near.size, dtype=bool)
    if slots.size:
        known = (at < slots.size) & (slots[np.minimum(at, slots.size - 1)] == near)
    if known.any():
        cos[at[known]] = [found[engine.vector_key(int(s))] for s in near[known]]
    extra = near[~known]
    keep = _filter(engine, req, extra)
    if gate is not None and gate.fallback is None:
        day, is_wiki, _ = engine.slot_arrays()
        keep &= is_wiki[extra] | _inside(engine, gate, extra, day)
    extra = extra[keep]
    if extra.size:
        order = np.argsort(np.concatenate([slots, extra]), kind="stable")
        slots = np.concatenate([slots, extra])[order]
        raw = np.concatenate([raw, np.zeros(extra.size)])[order]
        cos = np.concatenate([cos, [found[engine.vector_key(int(s))] for s in extra]])[order]
    return slots, raw, cos, True


def _hit(entry: Entry, score: float | None, matched: list[str]) -> dict[str, object]:
    return {**entry.as_dict(), "score": score, "matched_terms": matched}


def _expand(
    engine: Engine,
    req: QueryRequest,
    hits: list[dict[str, object]],
    seen: set[str],
    terms: list[str],
) -> list[dict[str, object]]:
    """After each hit, the entries its links point at (one hop, each entry once)."""
    out: list[dict[str, object]] = []
    for hit in hits:
        out.append(hit)
        for link in engine.entries[str(hit["id"])].links:
            targets = [t for t in engine.resolve(link) if t.id not in seen and _passes(req, t)]
            if not targets:
                continue
            best = _best_for(engine, targets, terms)
            seen.add(best.id)
            linked = _hit(
                best, None, engine.index.matched_terms(engine.index.slot(best.id) or 0, terms)
            )
            linked["via"] = hit["id"]
            if req.explain:
                linked["explain"] = {"via": hit["id"], "link": link.target}
            out.append(linked)
    return out


def _best_for(engine: Engine, targets: list[Entry], terms: list[str]) -> Entry:
    """Of a linked note's entries, the one sharing most query terms (the first on a tie)."""

    def shared(e: Entry) -> int:
        slot = engine.index.slot(e.id)
        return len(engine.index.matched_terms(slot, terms)) if slot is not None else 0

    return max(targets, key=shared)


def _budget(entries: list[Entry], budget_tokens: int | None) -> list[Entry]:
    costs = [estimate_tokens(f"{e.heading}\n{e.text}") for e in entries]
    return entries[: budget_cut(costs, budget_tokens)]
