"""The docs cannot drift from the code: every protocol method is documented, with examples."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from wikimem_watch.daemon.methods import METHODS
from wikimem_watch.daemon.protocol import decode_request
from wikimem_watch.daemon.server import METHODS as SERVER_METHODS

DOCS = Path(__file__).resolve().parent.parent / "docs"
PROTOCOL = (DOCS / "protocol.md").read_text(encoding="utf-8")


def documented_methods() -> set[str]:
    return set(re.findall(r"^### `([a-z_]+)`", PROTOCOL, flags=re.M))


def test_every_dispatched_method_is_documented() -> None:
    missing = set(SERVER_METHODS) - documented_methods()
    assert not missing, f"docs/protocol.md lacks a '### `name`' section for {sorted(missing)}"


def test_no_documented_method_is_missing_from_the_server() -> None:
    assert documented_methods() <= set(METHODS)


def test_every_method_section_has_a_request_and_a_reply_example() -> None:
    sections = re.split(r"^### ", PROTOCOL, flags=re.M)[1:]
    for section in sections:
        name = section.split("`")[1]
        requests = [ln[2:] for ln in section.splitlines() if ln.startswith("→ ")]
        replies = [ln[2:] for ln in section.splitlines() if ln.startswith("← ")]
        assert requests and replies, f"{name}: no example lines"
        for line in requests:
            assert decode_request(line.encode()).method == name
        for line in replies:
            assert "result" in json.loads(line), f"{name}: example reply is not a result"


def test_every_error_code_the_protocol_uses_is_in_the_table() -> None:
    for code in ("-32700", "-32600", "-32601", "-32602", "-32603", "-32004"):
        assert f"| {code} |" in PROTOCOL


README = (DOCS.parent / "README.md").read_text(encoding="utf-8")


def test_every_cli_command_appears_in_the_readme_or_protocol_docs() -> None:
    from wikimem_watch.shells.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    commands = set(sub.choices)  # type: ignore[arg-type]
    missing = {c for c in commands if f"wikimem-watch {c}" not in README + PROTOCOL}
    assert not missing, f"undocumented commands: {sorted(missing)}"


def test_every_config_field_is_listed_in_the_readme() -> None:
    from wikimem_watch.config import settable_fields

    missing = {n for n in settable_fields() if f"`{n}`" not in README}
    assert not missing, f"README's configuration section lacks {sorted(missing)}"


def test_the_readme_says_exactly_which_fields_a_vault_file_may_set() -> None:
    from wikimem_watch.config import VAULT_SETTABLE, settable_fields

    section = README.split("## Configuration", 1)[1].split("\n## ", 1)[0]
    rows = [ln for ln in section.splitlines() if ln.startswith("| `")]
    said: dict[str, bool] = {}
    for row in rows:
        cells = row.split("|")
        if len(cells) < 4 or not cells[-2].strip():
            continue
        allowed = not cells[-2].strip().startswith("**no**")
        for name in re.findall(r"`([a-z_0-9]+)`", cells[1]):
            said[name] = allowed
    assert set(said) == set(settable_fields()), "every field has one row in the table"
    wrong = {n for n, allowed in said.items() if allowed != (n in VAULT_SETTABLE)}
    assert not wrong, f"README's vault column disagrees with config.VAULT_SETTABLE: {wrong}"


def test_every_query_field_is_listed_in_the_readme() -> None:
    from wikimem_watch.retrieval.request import QueryRequest

    missing = {n for n in QueryRequest.__dataclass_fields__ if f"`{n}`" not in README}
    assert not missing, f"README's query table lacks {sorted(missing)}"


def test_protocol_example_ids_are_ids_the_parser_produces() -> None:
    from wikimem_watch.core.parse import parse_note

    note = parse_note("diary/2026-11-14.md", "## 19:30\nhot pot\n\n## 19:30\nrice cakes\n")
    for entry in note.entries:  # diary/2026-11-14.md#19:30 and #19:30~2
        assert entry.id in PROTOCOL, f"docs/protocol.md never shows an id like {entry.id}"
    ids = re.findall(r'"id":"([^"]+#[^"]+)"', PROTOCOL)
    assert ids, "the examples show entry ids"
    for entry_id in ids:
        fragment = entry_id.split("#", 1)[1]
        if entry_id.startswith("diary/"):
            assert re.fullmatch(r"\d\d:\d\d(~\d+)?", fragment), entry_id


def test_the_readme_states_the_k_limit_and_every_embedder() -> None:
    from wikimem_watch.config import EMBED_KINDS
    from wikimem_watch.retrieval.request import MAX_K

    assert f"1–{MAX_K}" in README and f"`k` 1–{MAX_K}" in PROTOCOL
    for kind in EMBED_KINDS:
        assert f"`{kind}`" in README, kind
    assert "--embed hash" in README


def test_help_says_which_commands_work_without_a_daemon() -> None:
    from wikimem_watch.shells.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    choices: dict[str, argparse.ArgumentParser] = sub.choices  # type: ignore[assignment]
    for name in ("status", "days", "day", "note"):
        assert "(through the daemon, else in-process)" in choices[name].format_help(), name
        assert f"wikimem-watch {name}" in README
    assert "--dry-run" in choices["reindex"].format_help() and "--dry-run" in README
    assert "--verbose" in choices["check"].format_help() and "--verbose" in README


def _implementation_lines(adr: str) -> str:
    """The text of an ADR's ``- Implementation:`` header item (it may wrap)."""
    lines = adr.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("- Implementation:")), None)
    if start is None:
        return ""
    out = [lines[start]]
    for ln in lines[start + 1 :]:
        if not ln.startswith("  "):
            break
        out.append(ln)
    return " ".join(out)


def test_every_adr_cites_files_and_names_that_exist() -> None:
    """An ADR's Implementation line names files and names that exist. A bare file name is
    read as a reader reads it: beside the last path cited before it."""
    root = DOCS.parent
    sources = [
        p.read_text(encoding="utf-8")
        for folder in ("wikimem_watch", "tests")
        for p in sorted((root / folder).rglob("*.py"))
    ]
    for adr in sorted((DOCS / "adr").glob("*.md")):
        folder = root / "wikimem_watch"
        for token in re.findall(r"`([^`]+)`", _implementation_lines(adr.read_text("utf-8"))):
            path = token.split("::")[0].split(" ")[0]
            if path.startswith(("$", "~", "[")) or "*" in path:
                continue
            if re.search(r"\.(py|md|toml)$", path) or "/" in path:
                hits = [c for c in (root / path, root / "wikimem_watch" / path, folder / path)]
                found = next((c for c in hits if c.exists()), None)
                assert found, f"{adr.name} cites {token!r}, which does not exist"
                folder = found if found.is_dir() else found.parent
                continue
            if not re.fullmatch(r"[A-Za-z_]\w*(\.\w+)*", token) or token.isupper():
                continue  # a value, a flag or an OS constant, not one of our names
            names = {re.escape(token), token.split(".")[-1]}  # "e.vkey" is a literal
            # Only the files that hold the name at all (every match does): the same answer
            # as a search of all of them, at a tenth of the cost.
            texts = [text for text in sources if token.split(".")[-1] in text]
            assert any(
                re.search(rf"(def|class)\s+{n}\b|\b{n}\s*(:[^=\n]*)?=|[\"']{n}[\"']", text)
                for n in names
                for text in texts
            ), f"{adr.name} cites {token!r}, defined nowhere"


def test_the_hello_example_lists_every_method() -> None:
    replies = [ln[2:] for ln in PROTOCOL.splitlines() if ln.startswith("← ")]
    hello = next(json.loads(r)["result"] for r in replies if '"capabilities"' in r)
    assert hello["capabilities"] == sorted(SERVER_METHODS)


def test_every_test_the_reliability_page_cites_exists() -> None:
    """``tests/x.py::test_y`` and the shorthand ``::test_z`` (in the file cited last)."""
    root = DOCS.parent
    text = (DOCS / "reliability.md").read_text(encoding="utf-8")
    cited, current = [], None
    for m in re.finditer(r"(tests/[\w/]+\.py)?::(test_\w+)|(tests/[\w/]+\.py)", text):
        current = m.group(1) or m.group(3) or current
        if m.group(2):
            assert current is not None, f"::{m.group(2)} before any file is cited"
            cited.append((current, m.group(2)))
        else:
            assert (root / current).is_file(), current
    assert len(cited) > 40
    missing = [
        f"{path}::{name}"
        for path, name in cited
        if not re.search(rf"^def {name}\(", (root / path).read_text(encoding="utf-8"), re.M)
    ]
    assert missing == []


def test_the_http_query_url_takes_every_query_field_with_its_type() -> None:
    """``GET /v1/query`` names every query field but ``weights`` (``POST /rpc`` takes that),
    and each boolean, number and list field is read from the URL as one."""
    import dataclasses
    import typing

    from wikimem_watch.daemon import http
    from wikimem_watch.retrieval.request import QueryRequest

    url = re.search(r"`GET /v1/query\?([^`]+)`", PROTOCOL)
    assert url, "docs/protocol.md shows the GET /v1/query URL"
    named = {pair.split("=")[0] for pair in url.group(1).split("&")}
    fields = {f.name: f for f in dataclasses.fields(QueryRequest)}
    assert named == set(fields) - {"weights"}, "the documented URL names every query field"
    typed = {
        bool: http._BOOL_PARAMS,
        int: http._INT_PARAMS,
        int | None: http._INT_PARAMS,
        float | None: http._FLOAT_PARAMS,
        tuple[str, ...]: http._LIST_PARAMS,
    }
    for name, hint in typing.get_type_hints(QueryRequest).items():
        if hint in typed:
            assert name in typed[hint], f"GET /v1/query reads {name} as text"
