"""What the command line prints: result tables, entry lists, progress, and exit codes.

Pure presentation over the JSON objects every shell shares; no engine, no socket.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False  # `typing` costs a client run milliseconds; type checkers see True
if TYPE_CHECKING:
    import logging
    from typing import Any

EXIT_OK, EXIT_EMPTY, EXIT_USAGE = 0, 1, 2
LOG_LEVEL = 30  # set from --log-level by ``cli.main``


def use_logging() -> None:
    """Configure logging (the only place that does) before a path that logs: an in-process
    engine or the daemon. A command that only talks to a daemon never imports it.

    Lines go to stderr without ever blocking (``stderr_lines``): a daemon whose stderr is a
    pipe nobody reads any more must not stop in the middle of a write or a scan."""
    import logging

    root = logging.getLogger()
    if not root.handlers:
        handler = stderr_lines()
        handler.setFormatter(shown_formatter()("wikimem-watch: %(levelname)s %(message)s"))
        root.addHandler(handler)
    root.setLevel(LOG_LEVEL)


def shown_formatter() -> type[logging.Formatter]:
    import logging

    class Shown(logging.Formatter):
        """A log line with a note's path or text in it, escaped as ``shown`` escapes it (a
        traceback after it is the program's own, kept as it is)."""

        def formatMessage(self, record: logging.LogRecord) -> str:
            return shown(super().formatMessage(record))

    return Shown


def stderr_lines() -> logging.Handler:
    """A handler writing each record to file descriptor 2 only when it can take it now:
    pieces of at most ``select.PIPE_BUF`` bytes (written whole, or not at all), the rest of
    a record dropped and counted in ``dropped`` when the pipe is full."""
    import logging
    import os
    import select

    class StderrLines(logging.Handler):
        dropped = 0

        def emit(self, record: logging.LogRecord) -> None:
            try:
                data = (self.format(record) + "\n").encode("utf-8", "replace")
                for at in range(0, len(data), select.PIPE_BUF):
                    if not select.select([], [2], [], 0)[1]:
                        self.dropped += 1
                        return
                    os.write(2, data[at : at + select.PIPE_BUF])
            except Exception:  # as logging.StreamHandler does: never raise from a log call
                self.handleError(record)

    return StderrLines()


def print_json(obj: object) -> None:
    print(json.dumps(obj, ensure_ascii=False, indent=None))


# C0 and C1 controls, DEL, and the bidirectional overrides and isolates: a vault's text is
# not trusted (ADR-0011), and written raw to a terminal an ESC sequence clears the screen,
# retitles the window or hides what follows; a newline in a file name breaks the row.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def shown(text: object) -> str:
    """``text`` as a terminal may print it: each control character as its escape (``\\n``,
    ``\\x1b``, ``\\u202e``), so what a note holds is seen, never obeyed."""
    return _UNSAFE.sub(lambda m: repr(m.group())[1:-1], str(text))


def print_entries(entries: list[dict[str, Any]]) -> None:
    """``day`` and ``note``: each entry's place, then its whole text (what they are read
    for; a query's hits show the first 110 characters)."""
    for e in entries:
        when = " ".join(x for x in (e.get("date"), e.get("time")) if x) or "-"
        print(f"{when:16}  {shown(e['path'])}:{e['line']}  {shown(e['heading'])}")
        for line in str(e["text"]).splitlines():
            print(f"        {shown(line)}".rstrip())


def window_line(gate: dict[str, object], result: dict[str, object]) -> str:
    """One line on the window a query used: its days, where it came from, whether it was
    widened, and its entries, or that it held none and was not applied."""
    notes = []
    if result.get("widened"):
        notes.append(f"widened ±{gate['widened_days']} days")
    if gate.get("fallback") == "empty":
        notes.append("no entries: not applied")
    else:
        notes.append(f"{gate['entries']} entries")
    source = str(gate["source"])
    if gate.get("session"):  # a conversation named by its order (ADR-0003 addendum)
        source += f": the {gate['session']} conversation"
    return f"window {gate['start']} .. {gate['end']} [{source}] ({', '.join(notes)})"


SNIPPET_CHARS = 110


def snippet(text: str, matched: object, width: int = SNIPPET_CHARS) -> str:
    """``width`` characters of ``text``: its start, or, when the first matched term lies
    past that, the part around it (a long item hit by a word in its last paragraph)."""
    if len(text) <= width:
        return text
    lowered, start = text.lower(), 0
    if isinstance(matched, list):
        found = [i for t in matched if isinstance(t, str) and t and (i := lowered.find(t)) >= 0]
        first = min(found, default=0)
        if first > width - 20:  # not in what the start shows
            start = max(0, min(first - width // 3, len(text) - width + 1))
    head = "…" if start else ""
    cut = text[start : start + width - len(head)]
    return f"{head}{cut}{'…' if start + len(cut) < len(text) else ''}"


def _print_hit(hit: dict[str, object], indent: str) -> None:
    when = " ".join(str(x) for x in (hit.get("date"), hit.get("time")) if x) or "-"
    score = hit.get("score")
    score_s = f"{score:6.3f}" if isinstance(score, float) else "     -"
    text = " ".join(str(hit["text"]).split())
    print(
        f"{indent}{score_s}  {when:16}  {shown(hit['path'])}:{hit['line']}  {shown(hit['heading'])}"
    )
    print(f"{indent}        {shown(snippet(text, hit.get('matched_terms')))}")
    explain = hit.get("explain")
    if isinstance(explain, dict) and "bm25_raw" in explain:
        w = explain["weights"]
        cos = explain["cosine"]
        vector = (
            ""
            if cos is None
            else f"  cosine {cos:.3f} → {explain['cosine_norm']:.2f}×{w['vector']:g}"
        )
        print(
            f"{indent}        bm25 {explain['bm25_own']:.3f} + previous "
            f"{explain['bm25_previous']:.3f} → {explain['bm25_norm']:.2f}×{w['bm25']:g}{vector}"
            f"  recency {explain['recency']:.3f}×{w['recency']:g}"
            f"  information {explain['information']:.2f}×{w['information']:g}"
            f"  terms {','.join(explain['matched_terms'])}"
        )


def print_result(result: dict[str, object], as_json: bool) -> int:
    hits = result.get("hits")
    assert isinstance(hits, list)
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
        return EXIT_OK if hits else EXIT_EMPTY
    gate = result.get("time_range")
    if isinstance(gate, dict):
        print(window_line(gate, result))
    if not hits:
        print(f"no results: {result['note']}" if result.get("note") else "no results")
        return EXIT_EMPTY
    outside = False
    for hit in hits:
        if hit.get("in_window") is not True and isinstance(gate, dict) and not outside:
            outside = gate.get("fallback") is None
            if outside:
                print("-- outside the window --")
        _print_hit(hit, "")
        for context in hit.get("linked", []):
            _print_hit(context, "  ↳ ")
        if hit.get("linked_more"):
            print(f"  ↳ (and {hit['linked_more']} more linked)")
    if result.get("cut"):
        if isinstance(gate, dict) and gate.get("fallback") is None:
            print(f"(first {len(hits)} of {gate['entries']})")
        else:  # the tagged entries of a question of tags alone: the result has no total
            print(f"(first {len(hits)}; there are more: raise -k to see them)")
    return EXIT_OK


class Progress:
    """A progress bar on ``stream``: ``[####....] done/total`` redrawn in place on a
    terminal, plain ``embedding: done/total`` lines otherwise (a log, a pipe). ``done`` never
    goes back, and ``total`` is the work this run was given (it grows only if more arrives).
    """

    LINE_EVERY_S = 2.0  # plain lines: at most one per this many seconds, and the last

    def __init__(self, stream: Any, width: int = 30) -> None:
        self.stream = stream
        self.width = width
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.done = 0
        self.total = 0
        self._shown: tuple[int, int] | None = None
        self._line_at = 0.0

    def update(self, done: int, total: int) -> None:
        """``done`` of ``total`` (an in-process sync reports both)."""
        self.total = max(self.total, total, done)
        self.done = min(max(self.done, done), self.total)
        self._draw()

    def pending(self, pending: int) -> None:
        """What a daemon reports: how many still wait. The first count sets the total."""
        if pending > self.total - self.done:
            self.total = self.done + pending  # new work arrived (or the first reading)
        self.update(self.total - pending, self.total)

    def _draw(self) -> None:
        if self._shown == (self.done, self.total) or self.total == 0:
            return
        if self.tty:
            filled = self.width * self.done // self.total
            bar = "#" * filled + "." * (self.width - filled)
            print(f"\r[{bar}] {self.done}/{self.total}", end="", file=self.stream, flush=True)
        else:
            import time

            now = time.monotonic()
            if self.done < self.total and now - self._line_at < self.LINE_EVERY_S:
                return
            self._line_at = now
            print(f"embedding: {self.done}/{self.total}", file=self.stream, flush=True)
        self._shown = (self.done, self.total)

    def finish(self) -> None:
        """End the bar's line (a terminal) once something was drawn."""
        if self.tty and self._shown is not None:
            print(file=self.stream, flush=True)


def print_vectors(status: dict[str, Any]) -> None:
    print(f"vectors  {vectors_line(status)}")


def vectors_line(status: dict[str, Any]) -> str:
    """The vector cache in one line: state, rows, model, dim, pending, last error."""
    if status.get("state") == "off":
        return "off (BM25 only; serve with --embed local|hash|http to add vectors)"
    return (
        f"{status.get('state')}  {status.get('rows', 0)} rows  "
        f"model {status.get('model') or status.get('embedder')}  dim {status.get('dim')}  "
        f"pending {status.get('pending', 0)}"
        + (f"  last error: {status['last_error']}" if status.get("last_error") else "")
    )


def _more(total: int, shown: int, what: str, lists_all: str | None) -> None:
    """The line after a list ``status`` cut short: how many more, and what lists them all."""
    if total > shown:
        hint = f" (all: wikimem-watch {lists_all})" if lists_all else ""
        print(f"         … and {total - shown} more {what} files{hint}")


def print_status(status: dict[str, Any]) -> None:
    """``status`` as a short report (the daemon's, or an in-process scan's)."""
    entries = status["entries"]
    print(f"{status['state']}  vault {status['vault']}  pid {status['pid']} on {status['host']}")
    if "socket" in status:
        print(f"socket   {status['socket']}  ({status['watcher']} watcher)")
    if status.get("http"):
        print(f"http     {status['http']['url']}  token in {status['http']['token_file']}")
    pending = f", pending {status['pending']}" if "pending" in status else ""
    print(
        f"index    {status['files']} files, {entries['diary']} diary + {entries['wiki']} wiki "
        f"entries, generation {status['generation']}{pending}"
    )
    if status.get("scan_files") is not None:
        print(f"scan     {status['scan_files']} files to read before ready")
    print(f"links    {status['unresolved_links']} unresolved")
    listed = status.get("unresolved", [])
    for link in listed:
        print(f"         [[{shown(link['target'])}]] in {shown(link['path'])}:{link['line']}")
    if status["unresolved_links"] > len(listed):
        print(f"         … and {status['unresolved_links'] - len(listed)} more")
    for item in status["skipped"]:
        print(f"skipped  {shown(item['path'])}: {shown(item['reason'])}")
    _more(status.get("skipped_files", 0), len(status["skipped"]), "skipped", "reindex --dry-run")
    for path, warnings in sorted(status["warnings"].items()):
        for warning in warnings:
            print(f"warning  {shown(path)}: {shown(warning)}")
    # ``check --verbose`` prints every warning, with a daemon to check
    lists_all = "check --verbose" if "socket" in status else None
    _more(status.get("warned_files", 0), len(status["warnings"]), "warned", lists_all)
    for warning in status.get("config_warnings", []):
        print(f"config   {shown(warning)}")
    cache = status.get("cache")
    if cache and not cache["usable"]:  # serving without caches: no vectors, no config.toml
        print(f"cache    {shown(cache['problem'])}")
    print(f"vectors  {vectors_line(status['vectors'])}")
