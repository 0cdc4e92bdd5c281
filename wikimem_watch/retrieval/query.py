"""The query path: time gate, filters, signal fusion, top-k, link expansion and the budget.

Every shell (CLI, socket, Python) calls :func:`run_query`; it only reads the engine, under the
engine's lock, so a query sees one consistent generation of the index.

Under a time window the diary entries inside it are what the question is about: they rank
first, and wiki items and diary entries outside the window may only follow them, marked
``in_window`` (ADR-0009). A question whose words, after the time words, carry no content
lists the window's entries in time order. What a hit brings with it (its links' context, a
window's listing) is ``context.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from datetime import datetime
from itertools import chain
from typing import Protocol

import numpy as np
import numpy.typing as npt

from ..core.engine import Engine
from ..core.tokenize import estimate_tokens
from ..core.vault import glob_match
from .context import expand, hit_of, listed
from .fusion import (
    Weights,
    best_first,
    budget_cut,
    normalise_max,
    normalise_minmax,
    recency,
    top_k,
    with_previous,
)
from .gate import Gate, local_now, passes_slot, resolve_gate, settle
from .request import QueryRequest

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
B1 = npt.NDArray[np.bool_]
_EPOCH = 719163  # date(1970, 1, 1).toordinal()
VECTOR_POOL = 200  # BM25 candidates that get a cosine (ADR-0007)
NARROW_FETCH = 4  # a filtered query first takes this many times the nearest it needs
INFORMATION_POOL = 20  # best candidates, inside the window and outside, whose information counts


class VectorSignal(Protocol):
    """Cosine similarity for the query, keyed by vector key (content hash of the embedded text)."""

    def cosines(
        self, text: str, keys: list[str], limit: int, within: Collection[str] | None = None
    ) -> dict[str, float] | None:
        """Cosines for ``keys`` plus the ``limit`` nearest of all (of ``within`` when given);
        None when unavailable."""

    def warm(self, text: str) -> None:
        """Embed the query ahead (outside the engine lock), so ``cosines`` finds it ready."""


# Sentence particles and structural words: a query bigram of nothing else ("了吗", "的了")
# asks, it says nothing. Dropped from the question's terms only (the index keeps them), and
# only when other terms are left.
_PARTICLES = frozenset("了吗呢吧啊呀嘛的地得么")


def content_terms(terms: list[str]) -> list[str]:
    """The question's terms without bigrams made only of particles (all of them when
    nothing else is left)."""
    kept = [t for t in terms if len(t) != 2 or t[0] not in _PARTICLES or t[1] not in _PARTICLES]
    return kept or terms


def run_query(
    engine: Engine, req: QueryRequest, vectors: VectorSignal | None = None
) -> dict[str, object]:
    """Answer one query. The result is exactly what ``query --json`` prints."""
    started = time.perf_counter()
    vectors = vectors if vectors is not None else engine.vectors
    if not engine.tracks_vectors:
        vectors = None  # the engine keeps no vector keys without an embedder (ADR-0008)
    now = local_now(req)
    gate, text, time_only = resolve_gate(req, now)
    terms = content_terms(engine.tokenizer(text))
    listing = time_only or not terms
    if vectors is not None and _weights(engine, req).vector > 0 and not listing:
        vectors.warm(text)  # a model call must not hold the lock the writer needs
    cut = False
    with engine.lock:
        if gate is not None:
            gate = settle(engine, req, gate)
        # A window selects diary entries: with kinds leaving them out it selects nothing.
        diary = "diary" in req.kinds
        applied = gate if gate is not None and gate.fallback is None and diary else None
        hits: list[dict[str, object]] = []
        embedding_used = False
        scored: tuple[I64, F64] | None = None  # the query's BM25 matches, once scored
        # Words that only ask about a window that holds nothing ("what happened on May 2"):
        # searched elsewhere they would match other days by their filler.
        empty_ask = time_only and gate is not None and applied is None
        if not (applied and listing) and not empty_ask:
            hits, embedding_used, scored = _ranked(engine, req, applied, text, terms, now, vectors)
        tags_only = bool(req.tags) and not terms and not applied and not empty_ask
        if tags_only:  # "everything tagged #plants": the tag is the question
            hits, cut = _tagged(engine, req, now)
        if applied and not any(h["in_window"] is True for h in hits):
            # Only time words, or words that match nothing inside the window ("what was my
            # mood on May 2nd"): what the window holds is the answer, in time order; matches
            # from elsewhere may follow it.
            hits, cut = listed(engine, req, applied, hits, terms, scored, now)
            listing = True
        # Read with the hits: a write swapped in once the lock is let go is not in them.
        generation, indexed = engine.generation, bool(engine.files)
    searchable = bool(terms) or bool(applied and listing) or tags_only
    note = None if searchable else nothing_searchable(req.q, gate)
    if empty_ask and gate is not None and "diary" not in req.kinds:
        kinds = list(req.kinds)
        note = f"the window {_named(gate)} selects diary entries, and kinds {kinds} leave them out"
    elif empty_ask and gate is not None:
        note = f"the window {_named(gate)} holds no diary entries, and the rest only asks about it"
    elif note is None and applied is not None and listing and not hits:
        note = f"the window {_named(applied)} holds no diary entries"  # an explicit one
    if note is None and not hits and not indexed:
        note = f"nothing is indexed: no notes were found in {str(engine.root)!r}"
    return {
        "q": req.q,
        "hits": hits,
        "note": note,
        "time_range": gate.as_dict() if gate else None,
        "time_range_source": gate.source if gate else None,
        "widened": bool(gate and gate.widened),
        "listing": bool(applied and listing),
        "cut": cut,
        "query_terms": terms,
        "embedding_used": embedding_used,
        "generation": generation,
        "took_ms": round((time.perf_counter() - started) * 1000.0, 3),
    }


def _named(gate: Gate) -> str:
    """A window as a note names it: the words that opened it, else its days."""
    return repr(gate.matched) if gate.matched else f"{gate.start}..{gate.end}"


def nothing_searchable(q: str, gate: Gate | None) -> str:
    """Why a query found nothing before it was even ranked: no words were left to score."""
    if not q.strip():
        return "the query is empty: nothing to search for"
    if not any(c.isalnum() for c in q):  # "☕", "???": nothing was removed, nothing was there
        return f"nothing searchable in {q.strip()!r}: it holds no letters or digits"
    removed = "stop words"
    if gate is not None and gate.matched:
        removed += f" and the time words {gate.matched!r}"
    why = f"nothing searchable left in {q.strip()!r} after removing {removed}"
    if gate is not None and gate.fallback == "empty":
        why += " (and that window holds no diary entries)"
    return why


def _ranked(
    engine: Engine,
    req: QueryRequest,
    gate: Gate | None,
    text: str,
    terms: list[str],
    now: datetime,
    vectors: VectorSignal | None,
) -> tuple[list[dict[str, object]], bool, tuple[I64, F64]]:
    """Fused ranking; under a window, its diary entries first, then the rest (marked). Also
    the query's BM25 matches before the filters (link context is chosen by them)."""
    slots, own = engine.index.score(terms)
    scored = (slots, own)  # every match, before the filters: what link context is chosen by
    day, is_wiki, epoch = engine.slot_arrays()
    weights = _weights(engine, req)
    prior = with_previous(
        slots, own, engine.previous_slots(), weights.previous, engine.asks(), weights.question
    )
    keep = _passes(engine, req, gate, slots)
    if not keep.all():  # no copies of ~every entry for a common word and no filter
        slots, own, prior = slots[keep], own[keep], prior[keep]
    slots, own, prior, cos, waiting, embedding_used = _with_vectors(
        engine, req, gate, vectors, text, slots, own, prior, weights
    )
    raw = own + prior
    bm25_norm = normalise_max(raw)
    fused = weights.bm25 * bm25_norm
    cos_norm = np.zeros(0)
    if embedding_used:  # else every cosine is absent: nothing to add
        has = ~np.isnan(cos)
        cos_norm = normalise_minmax(np.nan_to_num(cos), has)
        if waiting.any() and has.any():
            # Not embedded yet (a first embedding run, a fresh edit): the typical share, not
            # none, so a BM25 match waiting for its vector is not put below entries that match
            # nothing but have one.
            cos_norm[waiting] = _median(cos_norm[has])
        fused += weights.vector * cos_norm
    now_days = now.toordinal() - _EPOCH + (now.hour * 60 + now.minute) / 1440.0
    half_life = req.half_life_days or engine.config.half_life_days
    rec = recency(now_days - epoch[slots], half_life) if slots.size else np.zeros(0)
    fused += weights.recency * rec
    inside = _inside(engine, gate, slots) if gate is not None else np.zeros(slots.size, bool)
    info = np.zeros(slots.size)
    if weights.information > 0:
        info = _information(engine, slots, fused, inside, max(req.k, INFORMATION_POOL))
        fused += weights.information * info
    order = _gate_first(engine, slots, fused, inside, req.k)
    hits: list[dict[str, object]] = []
    hit_slots = [int(slots[j]) for j in order]
    matched_of = engine.index.matched_terms_of(hit_slots, terms)
    for n, j in enumerate(order):
        entry = engine.slot_entry(hit_slots[n])
        matched = matched_of[n]
        mark = None if gate is None or entry.kind == "wiki" else bool(inside[j])
        hit = hit_of(entry, float(fused[j]), matched, mark)
        if req.explain:
            hit["explain"] = {
                "bm25_raw": float(raw[j]),
                "bm25_own": float(own[j]),
                "bm25_previous": float(prior[j]),
                "bm25_norm": float(bm25_norm[j]),
                "cosine": None if not embedding_used or np.isnan(cos[j]) else float(cos[j]),
                "cosine_norm": float(cos_norm[j]) if embedding_used else 0.0,
                "recency": float(rec[j]),
                "information": float(info[j]),
                "half_life_days": half_life,
                "weights": weights.as_dict(),
                "matched_terms": matched,
                "time_gate": gate.as_dict() if gate else None,
                "in_window": mark,
            }
        hits.append(hit)
    costs = [estimate_tokens(f"{h['heading']}\n{h['text']}") for h in hits]
    hits = hits[: budget_cut(costs, req.budget_tokens)]
    if req.expand_links:
        expand(engine, req, hits, hit_slots, terms, scored, now)
    return hits, embedding_used, scored


def _gate_first(engine: Engine, slots: I64, fused: F64, inside: B1, k: int) -> I64:
    """Top ``k`` by fused score, the candidates inside the window before all others."""

    def tiebreak(j: int) -> str:
        return engine.slot_id(int(slots[j]))

    first = np.flatnonzero(inside)
    rest = np.flatnonzero(~inside)
    head = first[top_k(fused[first], k, lambda j: tiebreak(int(first[j])))]
    tail = rest[top_k(fused[rest], k - head.size, lambda j: tiebreak(int(rest[j])))]
    return np.concatenate([head, tail]).astype(np.int64)


def _information(engine: Engine, slots: I64, fused: F64, inside: B1, pool: int) -> F64:
    """How much each turn among the best ``pool`` candidates inside the window and outside
    it says, scaled by the most informative of them; the median of those for anything else
    among them; 0 for the rest (ADR-0009 §11).

    Among turns of a conversation that match a question about as well, the one that says
    more is the answer more often than the one that announces or echoes it ("I have a
    problem" / "sounds good, thanks"). A turn is a diary entry with a time of day. A wiki or
    note item is not one, nor is an untimed diary page (a day file without ``## HH:MM``
    sections): between those BM25 (and its length normalisation) decides, so a long section
    that names the topic in passing stays behind the section about it, and they meet the
    turns as a typical turn would. Like the vector pool, the signal only reorders the best
    candidates: it never lowers a score, so the rest stay behind them, and a fixed pool makes
    the hits for any ``k`` up to it prefixes of one another. Reading an entry's terms costs
    ~30 µs.
    """
    info = np.zeros(slots.size)
    groups = (np.flatnonzero(inside), np.flatnonzero(~inside))
    best = np.concatenate([g[best_first(fused[g], pool, _ids(engine, slots[g]))] for g in groups])
    untimed = engine.store.minute[slots[best]] < 0  # wiki and note items have no time either
    turns, items = best[~untimed], best[untimed]
    info[turns] = normalise_max(engine.information(slots[turns].tolist()))
    info[items] = _median(info[turns]) if turns.size else 1.0
    return info


def _median(values: F64) -> float:
    """The median of a non-empty array (``np.median`` imports ``numpy.ma``: ~10-25 ms)."""
    ordered = np.sort(values)
    return float(ordered[(ordered.size - 1) // 2] + ordered[ordered.size // 2]) / 2.0


def _weights(engine: Engine, req: QueryRequest) -> Weights:
    c = engine.config
    w = {
        "bm25": c.weight_bm25,
        "vector": c.weight_vector,
        "recency": c.weight_recency,
        "previous": c.weight_previous,
        "question": c.weight_question,
        "information": c.weight_information,
    }
    w.update(req.weights or {})
    return Weights(**w)


def _tagged(
    engine: Engine, req: QueryRequest, now: datetime
) -> tuple[list[dict[str, object]], bool]:
    """A question of tags alone: the entries that carry them (and pass the other filters),
    the most recent first, items with no time after them, then by path and line (so the live
    index and a fresh scan agree); with the budget, links' context and ``explain`` as ranked
    hits have them; and whether there were more than ``k``."""
    slots = engine.index.live_slots()
    slots = slots[_filter(engine, req, slots)]
    _, _, epoch = engine.slot_arrays()
    when = np.nan_to_num(-epoch[slots], nan=np.inf).tolist()
    store = engine.store
    order = sorted(
        range(slots.size),
        key=lambda j: (when[j], store.path[int(slots[j])], int(store.line[int(slots[j])])),
    )
    top = [int(slots[j]) for j in order[: req.k]]
    hits = [hit_of(engine.slot_entry(s), None, [], None) for s in top]
    if req.explain:
        for hit in hits:
            hit["explain"] = {"listing": True, "tags": list(req.tags)}
    costs = [estimate_tokens(f"{h['heading']}\n{h['text']}") for h in hits]
    hits = hits[: budget_cut(costs, req.budget_tokens)]
    if req.expand_links:  # as for ranked hits: context only while the budget has room
        expand(engine, req, hits, top, [], (np.zeros(0, np.int64), np.zeros(0)), now)
    return hits, slots.size > req.k


def _filter(engine: Engine, req: QueryRequest, slots: I64) -> B1:
    """Which candidates pass ``kinds``, ``paths`` and ``tags``."""
    _, is_wiki, _ = engine.slot_arrays()
    keep = np.ones(slots.size, dtype=bool)
    if "wiki" not in req.kinds:
        keep &= ~is_wiki[slots]
    if "diary" not in req.kinds:
        keep &= is_wiki[slots]
    if req.paths or req.tags:
        keep &= np.fromiter((passes_slot(req, engine, s) for s in slots), bool, slots.size)
    return keep


def _passes(engine: Engine, req: QueryRequest, gate: Gate | None, slots: I64) -> B1:
    """Which candidates pass the filters and an explicit window (the caller said which days;
    wiki items are not on the time axis)."""
    keep = _filter(engine, req, slots)
    if gate is not None and gate.source == "explicit":
        _, is_wiki, _ = engine.slot_arrays()
        keep &= is_wiki[slots] | _inside(engine, gate, slots)
    return keep


def _passing(engine: Engine, req: QueryRequest, gate: Gate | None) -> I64:
    """Every live entry that passes the filters and an explicit window. With ``paths`` the
    files are matched first, not each of their entries."""
    if not req.paths:
        slots = engine.index.live_slots()
    else:
        files = [r.slots for rel, r in engine.files.items() if glob_match(rel, req.paths)]
        slots = np.sort(np.fromiter(chain.from_iterable(files), np.int64))
    return slots[_passes(engine, req, gate, slots)]


def _narrowed(req: QueryRequest, gate: Gate | None) -> bool:
    """Whether the request's filters or an explicit window leave out some entries."""
    explicit = gate is not None and gate.source == "explicit"
    return len(req.kinds) < 2 or bool(req.paths or req.tags) or explicit


def _inside(engine: Engine, g: Gate, slots: I64) -> B1:
    """Which candidates are diary entries inside the window (and not after ``now``)."""
    day, is_wiki, _ = engine.slot_arrays()
    d = day[slots]
    inside = (d >= g.start.toordinal()) & (d <= g.end.toordinal()) & ~is_wiki[slots]
    exact = g.start_time is not None and g.start == g.end and not g.widened
    check = inside.copy() if exact else inside & (d >= (g.limit_day or g.end).toordinal())
    for j in np.flatnonzero(check):  # the last day, or a time of day: look at the times
        inside[j] = g.contains_at(*engine.store.date_time(int(slots[j])))
    return inside


def _with_vectors(
    engine: Engine,
    req: QueryRequest,
    gate: Gate | None,
    vectors: VectorSignal | None,
    text: str,
    slots: I64,
    own: F64,
    prior: F64,
    weights: Weights,
) -> tuple[I64, F64, F64, F64, B1, bool]:
    """Add the cosine signal: (slots, own BM25, BM25 from the entry before, cosine or NaN,
    whether the candidate's vector is not made yet, embedding used).

    Cosines are asked for the best ``VECTOR_POOL`` BM25 candidates and the entries nearest
    the query among those that pass the filters (``_nearest``); a nearest entry that BM25
    missed joins the candidates (BM25 0). Candidates outside both pools keep a cosine of
    "absent".
    """
    cos = np.zeros(0)  # unused unless the vectors take part
    waiting = np.zeros(slots.size, dtype=bool)
    if vectors is None or weights.vector <= 0 or not text.strip():
        return slots, own, prior, cos, waiting, False
    pool = best_first(own + prior, VECTOR_POOL, _ids(engine, slots))
    keys = [engine.vector_key(int(s)) for s in slots[pool]]
    found = _nearest(engine, req, gate, vectors, text, keys, max(50, req.k * 5))
    if found is None:
        return slots, own, prior, cos, waiting, False
    cos = np.full(slots.size, np.nan)
    cos[pool] = [found.get(key, np.nan) for key in keys]
    waiting[pool] = [key not in found for key in keys]  # the pool's cosines: all it has
    pooled = set(keys)
    nearest = engine.slots_of_keys(key for key in found if key not in pooled)
    # BM25 candidates beyond the pool that the vectors found: slots are sorted ascending.
    at = np.searchsorted(slots, nearest)
    known = np.zeros(nearest.size, dtype=bool)
    if slots.size:
        known = (at < slots.size) & (slots[np.minimum(at, slots.size - 1)] == nearest)
    if known.any():
        cos[at[known]] = [found[engine.vector_key(int(s))] for s in nearest[known]]
    extra = nearest[~known]
    extra = extra[_passes(engine, req, gate, extra)]  # a key's other entries may not pass
    if extra.size:
        order = np.argsort(np.concatenate([slots, extra]), kind="stable")
        slots = np.concatenate([slots, extra])[order]
        own = np.concatenate([own, np.zeros(extra.size)])[order]
        prior = np.concatenate([prior, np.zeros(extra.size)])[order]
        cos = np.concatenate([cos, [found[engine.vector_key(int(s))] for s in extra]])[order]
        waiting = np.concatenate([waiting, np.zeros(extra.size, dtype=bool)])[order]
    return slots, own, prior, cos, waiting, True


def _nearest(
    engine: Engine,
    req: QueryRequest,
    gate: Gate | None,
    vectors: VectorSignal,
    text: str,
    keys: list[str],
    limit: int,
) -> dict[str, float] | None:
    """Cosines of ``keys`` (the BM25 pool) and of the ``limit`` entries nearest the query
    among those that pass the filters and an explicit window; None when unavailable.

    The filters apply before the cut: taken from the whole cache and filtered after, the
    nearest could all be entries a narrow filter leaves out ("kinds: wiki" in a vault of
    diary days), and the answer came back short while more entries passed. Filtered, the
    ``NARROW_FETCH × limit`` nearest of the whole cache are looked at first: when ``limit``
    of them pass, they are the nearest that pass (a broad filter costs next to nothing
    more); else the search is made again within the keys of every entry that passes.
    """
    if not _narrowed(req, gate):
        return vectors.cosines(text, keys, limit)
    found = vectors.cosines(text, keys, NARROW_FETCH * limit)
    if found is None:
        return None
    # The search's answer in its own order (pool cosines below its cut fall off the end).
    ranked = sorted(found, key=lambda key: (-found[key], key))[: NARROW_FETCH * limit]
    slots = engine.slots_of_keys(ranked)
    passing = set(engine.vector_keys_of(slots[_passes(engine, req, gate, slots)]))
    near = [key for key in ranked if key in passing][:limit]
    if len(near) < limit:
        within = engine.vector_keys_of(_passing(engine, req, gate))
        return vectors.cosines(text, keys, limit, within)
    pooled = {key: found[key] for key in keys if key in found}
    return {**pooled, **{key: found[key] for key in near}}


def _ids(engine: Engine, slots: I64) -> Callable[[int], str]:
    """Candidate ``j``'s entry id: the tie-break that a live index and a fresh scan share."""
    return lambda j: engine.slot_id(int(slots[j]))
