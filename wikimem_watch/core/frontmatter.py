"""Front matter: the YAML block a note may open with, read as metadata and never as text.

Tolerant: bad, oversized or deeply nested YAML is skipped with a warning, and the note is
indexed without it. Values are read only as scalars or lists of scalars (with YAML anchors
a few hundred bytes can stand for a structure whose ``str()`` is gigabytes).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, datetime

_FRONT_MATTER_END = re.compile(r"^(?:---|\.\.\.)\s*$", re.M)
_SCALARS = (str, int, float, date)
MAX_FRONT_MATTER_BYTES = 64 * 1024  # bigger YAML is an export, not note metadata: skipped
MAX_FRONT_MATTER_DEPTH = 32  # PyYAML recurses per level: deep flow nesting is slow, then fails
MAX_FRONT_STRINGS = 256  # values read for links: a property list is short


def split_front_matter(text: str) -> tuple[dict[str, object], int, list[str]]:
    """Return (front matter, number of lines it spans, warnings). Bad YAML is skipped, not text."""
    if not text.startswith("---") or not re.match(r"---\s*\n", text):
        return {}, 0, []
    first_nl = text.index("\n")
    end = _FRONT_MATTER_END.search(text, first_nl + 1)
    if end is None:
        return {}, 0, []
    raw = text[first_nl + 1 : end.start()]
    lines = text[: end.end()].count("\n") + 1
    if len(raw) > MAX_FRONT_MATTER_BYTES:
        return {}, lines, [f"front matter over {MAX_FRONT_MATTER_BYTES // 1024} KiB; not read"]
    if _flow_depth(raw) > MAX_FRONT_MATTER_DEPTH:
        return {}, lines, [f"front matter nests deeper than {MAX_FRONT_MATTER_DEPTH}; not read"]
    import yaml  # here: importing it costs ~10 ms, and a start from the snapshot reads no note

    try:
        data = yaml.safe_load(raw)
    except (yaml.YAMLError, RecursionError, ValueError, OverflowError) as exc:
        # ValueError: a timestamp YAML reads as one but no calendar has ("2024-13-45").
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return {}, lines, [f"front matter is not valid YAML: {first}"]
    if data is None:
        return {}, lines, []
    if not isinstance(data, dict):
        return {}, lines, ["front matter is not a mapping"]
    return {str(k): v for k, v in data.items()}, lines, []


def front_matter_lines(text: str) -> int:
    """How many lines the front matter spans (0: none); ``text`` has ``\n`` line breaks."""
    return split_front_matter(text)[1]


def _flow_depth(raw: str) -> int:
    """An upper bound of the YAML flow nesting depth (brackets, quoted or not)."""
    depth = deepest = 0
    for ch in re.findall(r"[\[\]{}]", raw):
        depth = depth + 1 if ch in "[{" else max(depth - 1, 0)
        deepest = max(deepest, depth)
    return deepest


def scalar(value: object) -> str | None:
    """A front matter value as text when it is a scalar. Lists and maps are refused: with
    YAML anchors a few hundred bytes can stand for a structure whose ``str()`` is gigabytes."""
    if isinstance(value, _SCALARS) and not isinstance(value, bool):
        return str(value)
    return None


def note_ts(value: object, warnings: list[str]) -> str | None:
    """A front-matter ``date`` as an ISO-8601 time, or None (with a warning when it is not
    one). YAML gives a date or datetime for most spellings, a string for the rest."""
    if value is None:
        return None
    if isinstance(value, date):  # datetime is a date too
        return value.isoformat()
    if isinstance(value, str) and valid_iso(value.strip()):
        return value.strip()
    # Only a scalar is shown: with YAML anchors a list's str() can be gigabytes.
    shown = scalar(value)
    shown = repr(shown[:40]) if shown is not None else f"a {type(value).__name__}"
    warnings.append(f"front matter date={shown} is not an ISO-8601 date; ignored")
    return None


def str_list(value: object) -> tuple[str, ...]:
    """Front-matter ``tags``: a list, or a string of tags split at commas and spaces (a tag
    holds no space), each without its ``#``."""
    if isinstance(value, str):
        items: list[object] = [v for v in re.split(r"[,\s]+", value) if v]
    elif isinstance(value, list):
        items = value
    else:
        return ()
    texts = (scalar(v) for v in items)
    return tuple(t.lstrip("#") for t in texts if t is not None and t.strip())


def name_list(value: object) -> tuple[str, ...]:
    """Front-matter ``aliases``: a list, or a string of names split at commas only
    (``aliases: My Long Alias`` is one name, as Obsidian reads it, not three)."""
    if isinstance(value, str):
        items: list[object] = [*value.split(",")]
    elif isinstance(value, list):
        items = value
    else:
        return ()
    texts = (scalar(v) for v in items)
    return tuple(t.strip() for t in texts if t is not None and t.strip())


def front_strings(front: dict[str, object]) -> Iterator[str]:
    """The text values of the front matter, top-level strings and strings in top-level
    lists, at most ``MAX_FRONT_STRINGS`` (Obsidian properties hold links: ``up: "[[X]]"``)."""
    count = 0
    for value in front.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                yield item
                count += 1
                if count >= MAX_FRONT_STRINGS:
                    return


def valid_iso(value: str) -> bool:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True
