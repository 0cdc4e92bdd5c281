"""What a hit brings with it: the entries its links point at (one hop, as ``linked``), and a
window's own entries listed in time order when the question only asks about the window
(ADR-0009 §2, §7). Read under the engine's lock by :func:`~.query.run_query`."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import numpy.typing as npt

from ..core.engine import Engine
from ..core.models import Entry, Link
from ..core.tokenize import estimate_tokens
from .fusion import budget_cut
from .gate import Gate, passes_slot, window_entries
from .request import QueryRequest

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def hit_of(
    entry: Entry, score: float | None, matched: list[str], in_window: bool | None
) -> dict[str, object]:
    """An entry as a result shows it: its fields, its score and matched terms, ``in_window``."""
    hit = {**entry.as_dict(), "score": score, "matched_terms": matched}
    hit["in_window"] = in_window
    return hit


def listed(
    engine: Engine,
    req: QueryRequest,
    gate: Gate,
    ranked: list[dict[str, object]],
    terms: list[str],
    scored: tuple[I64, F64] | None,
    now: datetime,
) -> tuple[list[dict[str, object]], bool]:
    """The window's entries in time order, then the best of ``ranked`` (from other days):
    with their links' context, ``explain`` and the budget as for ranked hits; and whether
    the window held more than ``k``."""
    inside = window_entries(engine, req, gate, limit=req.k)
    head = [hit_of(e, None, [], True) for e in inside]
    rest = ranked[: req.k - len(head)]
    if req.explain:
        for hit in head:
            hit["explain"] = {"listing": True, "time_gate": gate.as_dict(), "in_window": True}
    hits = head + rest
    if req.expand_links and head:
        slots = [s for h in head if (s := engine.slot_of(str(h["id"]))) is not None]
        if scored is None:  # not ranked: only the head's links need the scores
            scored = engine.index.score(terms) if terms else (np.zeros(0, np.int64), np.zeros(0))
        expand(engine, req, hits, slots, terms, scored, now)  # the head's; the rest have theirs
    # An entry listed, or brought by a listed entry's links, is not repeated as the context
    # of a hit after them (the rest's context was chosen before the head was known).
    shown = {str(x["id"]) for h in head for x in [h, *_linked(h)]}
    for hit in rest:
        linked = [c for c in _linked(hit) if str(c["id"]) not in shown]
        if linked:
            hit["linked"] = linked
        else:
            hit.pop("linked", None)
    costs = [
        sum(estimate_tokens(f"{x['heading']}\n{x['text']}") for x in [h, *_linked(h)]) for h in hits
    ]
    return hits[: budget_cut(costs, req.budget_tokens)], gate.entries > len(head)


def _linked(hit: dict[str, object]) -> list[dict[str, object]]:
    value = hit.get("linked")
    return value if isinstance(value, list) else []


MAX_LINKED = 5  # context entries a hit brings at most; a hub note links to hundreds


def expand(
    engine: Engine,
    req: QueryRequest,
    hits: list[dict[str, object]],
    hit_slots: list[int],
    terms: list[str],
    scored: tuple[I64, F64],
    now: datetime,
) -> None:
    """Attach to each hit, as ``linked``, the entries its links point at (one hop).

    A link to a section brings that section; a link to a whole note (or to a heading the
    note lacks) brings the note's best section for the query, else the one whose heading the
    hit names, else its first.
    A hit brings at most ``MAX_LINKED``, those that match the query best first, then in link
    order, and says how many more it had (``linked_more``). An entry already shown as a hit
    or as another hit's context is not repeated. Context never takes a hit's place in ``k``,
    and under ``budget_tokens`` it is added only while the budget has room. A diary entry
    after ``now`` is never context (a plan linking to the day it is for, asked about "as of"
    an earlier day, must not tell what happened then); a time window does not limit context:
    it chose the hits, and what a hit links to explains it, whatever its day.
    """
    seen = {str(h["id"]) for h in hits}
    local = now.replace(tzinfo=None)
    today, minute = local.toordinal(), local.hour * 60 + local.minute
    budget = req.budget_tokens
    used = sum(estimate_tokens(f"{h['heading']}\n{h['text']}") for h in hits)
    for hit, slot in zip(hits, hit_slots, strict=False):
        candidates: list[tuple[float, int, int, Link]] = []
        for n, link in enumerate(engine.store.links_of(slot)):
            targets = [
                t
                for t in engine.resolve_slots(link)
                if passes_slot(req, engine, t) and not _later(engine, t, today, minute)
            ]
            if targets:
                best_slot, score = _best_for(targets, scored)
                if score == 0.0 and len(targets) > 1:  # none matches: the one the hit names
                    named = _named_in(engine, targets, str(hit["text"]))
                    if named is not None:  # slot 0 is a slot (`or` took it for none)
                        best_slot = named
                candidates.append((-score, n, best_slot, link))
        chosen: list[tuple[int, Entry, Link]] = []
        more: set[str] = set()
        for _, _, best_slot, link in sorted(candidates, key=lambda c: (c[0], c[1])):
            entry_id = engine.slot_id(best_slot)
            if entry_id in seen:
                continue
            full = len(chosen) == MAX_LINKED
            if full and budget is None:  # counted by id: no Entry for what is not shown
                more.add(entry_id)  # an entry, not a link: two links to it are one more
                continue
            best = engine.slot_entry(best_slot)
            cost = estimate_tokens(f"{best.heading}\n{best.text}")
            if budget is not None and used + cost > budget:
                continue
            if full:
                more.add(entry_id)
                continue
            seen.add(entry_id)
            used += cost
            chosen.append((best_slot, best, link))
        matched_of = engine.index.matched_terms_of([c[0] for c in chosen], terms)
        linked: list[dict[str, object]] = []
        for (_, best, link), matched in zip(chosen, matched_of, strict=True):
            context = hit_of(best, None, matched, None)
            context["via"] = hit["id"]
            context["link"] = link.target + (f"#{link.heading}" if link.heading else "")
            linked.append(context)
        if linked:
            hit["linked"] = linked
        if more:
            hit["linked_more"] = len(more)


def _later(engine: Engine, slot: int, today: int, minute: int) -> bool:
    """A diary entry dated after ``today`` (a day ordinal), or on it after ``minute``."""
    store = engine.store
    day = int(store.day[slot])
    if store.wiki[slot] or day < today:
        return False
    return day > today or int(store.minute[slot]) > minute


def _best_for(targets: list[int], scored: tuple[I64, F64]) -> tuple[int, float]:
    """Of a link's entries (slots), the one BM25 scored best for the query (the first when
    none matches), and its score; ``scored`` is the query's (slots, scores), slots
    ascending."""
    scores = [_score_of(t, scored) for t in targets]
    best = max(range(len(targets)), key=scores.__getitem__)  # the first of equals
    return targets[best], scores[best]


def _named_in(engine: Engine, targets: list[int], text: str) -> int | None:
    """Of a linked note's sections, the one whose heading the linking text names ("Pantry:
    … [[file:projects]]" → the Pantry item), the longest such heading, the first of equals in
    the note (not the highest slot: slots follow editing history, and a fresh scan chose
    another); None when none is."""
    lowered = text.lower()
    best: int | None = None
    longest = 1
    for t in targets:  # in the note's order
        h = (engine.store.heading.get(t) or "").strip().lower()
        if len(h) > longest and h in lowered:
            best, longest = t, len(h)
    return best


def _score_of(slot: int, scored: tuple[I64, F64]) -> float:
    slots, raw = scored
    at = int(np.searchsorted(slots, slot))
    return float(raw[at]) if at < slots.size and slots[at] == slot else 0.0
