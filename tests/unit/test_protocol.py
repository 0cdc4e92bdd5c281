"""JSON-RPC 2.0 framing, error codes and dispatch, without a socket."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from wikimem_watch.config import Config
from wikimem_watch.core.engine import Engine
from wikimem_watch.daemon.methods import METHODS, STOP_AFTER_REPLY
from wikimem_watch.daemon.protocol import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    ProtocolError,
    Request,
    decode_request,
    decode_response,
    encode_error,
    encode_notification,
    encode_request,
    encode_result,
)
from wikimem_watch.daemon.server import handle_line
from wikimem_watch.errors import BadRequest, NotFound
from wikimem_watch.retrieval.query import VectorSignal


def line(obj: object) -> bytes:
    return json.dumps(obj).encode()


def test_a_request_decodes_with_its_method_params_and_id() -> None:
    req = decode_request(line({"jsonrpc": "2.0", "id": 7, "method": "day", "params": {"a": 1}}))
    assert req == Request("day", {"a": 1}, 7, notification=False)


def test_a_request_without_id_is_a_notification_but_id_null_is_not() -> None:
    assert decode_request(line({"jsonrpc": "2.0", "method": "status"})).notification
    assert not decode_request(line({"jsonrpc": "2.0", "method": "status", "id": None})).notification


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{not json", PARSE_ERROR),
        (b"\xff\xfe", PARSE_ERROR),
        (b"[]", INVALID_REQUEST),
        (b'[{"jsonrpc":"2.0","method":"status","id":1}]', INVALID_REQUEST),
        (b'"status"', INVALID_REQUEST),
        (b'{"method":"status","id":1}', INVALID_REQUEST),
        (b'{"jsonrpc":"1.0","method":"status","id":1}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","id":1}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","method":5,"id":1}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","method":"status","id":1.5}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","method":"status","id":true}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","method":"status","id":1,"params":"x"}', INVALID_REQUEST),
        (b'{"jsonrpc":"2.0","method":"status","id":1,"params":[1]}', INVALID_PARAMS),
    ],
)
def test_malformed_requests_get_the_standard_code(raw: bytes, code: int) -> None:
    with pytest.raises(ProtocolError) as info:
        decode_request(raw)
    assert info.value.code == code


def test_an_integer_too_long_to_read_is_a_parse_error_in_the_clients_terms() -> None:
    """Python's own advice (``use sys.set_int_max_str_digits()``) means nothing to a client."""
    with pytest.raises(ProtocolError) as info:
        decode_request(b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"status"}')
    assert info.value.code == PARSE_ERROR
    assert info.value.message.startswith("parse error: an integer longer than ")
    assert "sys." not in info.value.message


def test_an_invalid_request_keeps_its_id_when_it_has_a_valid_one() -> None:
    with pytest.raises(ProtocolError) as info:
        decode_request(b'{"jsonrpc":"2.0","id":"abc"}')
    assert info.value.request_id == "abc"


def test_encoded_lines_are_compact_single_lines_keeping_unicode() -> None:
    out = encode_result(1, {"text": "昨天\nline two"})
    assert out.endswith(b"\n") and out.count(b"\n") == 1
    assert "昨天".encode() in out and b": " not in out


def test_request_and_response_round_trip() -> None:
    req = decode_request(encode_request("query", {"q": "coffee", "k": 3}, "r1"))
    assert (req.method, req.params, req.id) == ("query", {"q": "coffee", "k": 3}, "r1")
    assert decode_request(encode_notification("status")).notification
    resp = decode_response(encode_result("r1", {"hits": []}))
    assert (resp.id, resp.result, resp.error) == ("r1", {"hits": []}, None)
    err = decode_response(encode_error(3, NotFound.code, "no note", {"path": "x.md"}))
    assert err.error == {"code": -32004, "message": "no note", "data": {"path": "x.md"}}


def test_a_result_that_is_not_json_refuses_to_encode() -> None:
    with pytest.raises(ValueError):
        encode_result(1, float("nan"))


def test_decode_response_rejects_garbage() -> None:
    for raw in (b"nope", b"{}", b'{"jsonrpc":"2.0","id":1}', b'{"jsonrpc":"2.0","error":"x"}'):
        with pytest.raises(ProtocolError):
            decode_response(raw)


# ----------------------------------------------------------------- dispatch via handle_line


class FakeService:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.stopped = False

    def status(self) -> dict[str, object]:
        return {"state": "ready", "generation": self.engine.generation}

    def reindex(self, dry_run: bool = False) -> dict[str, object]:
        if dry_run:
            return {"dry_run": True}
        return {"changed": len(self.engine.scan().changed)}

    def request_stop(self) -> None:
        self.stopped = True

    def vector_signal(self) -> VectorSignal | None:
        return None

    def boom(self) -> dict[str, object]:
        raise RuntimeError("secret detail")


@pytest.fixture
def service(tmp_path: Path) -> FakeService:
    (tmp_path / "diary").mkdir()
    (tmp_path / "diary" / "2026-07-21.md").write_text(
        "## 08:00\ncoffee with [[people]]\n\n## 09:00\nwalk to [[nowhere]]\n", encoding="utf-8"
    )
    (tmp_path / "people.md").write_text("# People\n\n## Ann\nlikes coffee\n", encoding="utf-8")
    engine = Engine(Config(vault=tmp_path))
    engine.scan()
    return FakeService(engine)


def call(service: FakeService, method: str, params: object = None, rid: object = 1) -> Any:
    msg: dict[str, object] = {"jsonrpc": "2.0", "method": method, "id": rid}
    if params is not None:
        msg["params"] = params
    reply, _ = handle_line(service, line(msg))
    assert reply is not None
    return json.loads(reply)


def test_hello_lists_every_method_as_a_capability(service: FakeService) -> None:
    result = call(service, "hello")["result"]
    assert result["protocol"] == 1 and set(result["capabilities"]) == set(METHODS)


def test_query_result_is_exactly_run_query_output(service: FakeService) -> None:
    result = call(service, "query", {"q": "coffee", "k": 5})["result"]
    assert {h["path"] for h in result["hits"]} == {"diary/2026-07-21.md", "people.md"}
    assert result["q"] == "coffee" and "took_ms" in result


def test_read_methods_answer_from_the_index(service: FakeService) -> None:
    days = call(service, "days")["result"]["days"]
    assert days == [{"date": "2026-07-21", "entries": 2}]
    assert call(service, "days", {"start": "2026-07-22"})["result"]["days"] == []
    day = call(service, "day", {"date": "2026-07-21"})["result"]["entries"]
    assert [e["time"] for e in day] == ["08:00", "09:00"]
    note = call(service, "note", {"path": "people.md"})["result"]["entries"]
    assert note[0]["heading"] == "Ann"
    links = call(service, "links", {"path": "diary/2026-07-21.md"})["result"]["links"]
    assert [(lk["target"], lk["unresolved"]) for lk in links] == [
        ("people", False),
        ("nowhere", True),
    ]
    back = call(service, "backlinks", {"path": "people.md"})["result"]["backlinks"]
    assert [b["path"] for b in back] == ["diary/2026-07-21.md"]
    digests = call(service, "file_digests")["result"]
    assert digests["digest"] == service.engine.digest()
    assert set(digests["files"]) == {"diary/2026-07-21.md", "people.md"}


def test_reindex_passes_dry_run_to_the_service(service: FakeService) -> None:
    assert call(service, "reindex", {"dry_run": True})["result"] == {"dry_run": True}
    assert call(service, "reindex")["result"] == {"changed": 0}


@pytest.mark.parametrize(
    ("method", "params", "code"),
    [
        ("nope", None, METHOD_NOT_FOUND),
        ("query", {"k": 3}, BadRequest.code),
        ("query", {"q": "x", "k": "many"}, INVALID_PARAMS),
        ("day", {"date": "yesterday"}, INVALID_PARAMS),
        ("day", {"date": "20260720"}, INVALID_PARAMS),  # fromisoformat's other forms
        ("day", {"date": "2026-W29-1"}, INVALID_PARAMS),
        ("days", {"start": "2026-W29-1"}, INVALID_PARAMS),
        ("day", {}, INVALID_PARAMS),
        ("days", {"start": 5}, INVALID_PARAMS),
        ("days", {"start": "2026-11-20", "end": "2026-11-01"}, INVALID_PARAMS),
        ("status", {"verbose": True}, INVALID_PARAMS),
        ("note", {"path": "missing.md"}, NotFound.code),
        ("backlinks", {"path": "missing.md"}, NotFound.code),
        ("note", {"path": "/etc/hosts"}, INVALID_PARAMS),
        ("reindex", {"dry_run": "yes"}, INVALID_PARAMS),
        ("reindex", {"dry": True}, INVALID_PARAMS),
    ],
)
def test_bad_params_and_unknown_names_get_typed_errors(
    service: FakeService, method: str, params: object, code: int
) -> None:
    reply = call(service, method, params)
    assert reply["error"]["code"] == code and reply["id"] == 1
    assert reply["error"]["message"]


def test_an_unexpected_exception_is_logged_and_answered_without_its_details(
    service: FakeService, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(service, "status", service.boom)
    with caplog.at_level(logging.ERROR):
        reply = call(service, "status")
    assert reply["error"]["code"] == INTERNAL_ERROR
    assert "secret detail" not in json.dumps(reply)
    assert "secret detail" in caplog.text


def test_notifications_run_but_get_no_reply(service: FakeService) -> None:
    (service.engine.root / "kites.md").write_text("## Red\nA red kite.\n", encoding="utf-8")
    assert "kites.md" not in service.engine.files
    reply, method = handle_line(service, encode_notification("reindex"))
    assert reply is None and method == "reindex"
    assert "kites.md" in service.engine.files  # it ran


def test_a_parse_error_is_answered_with_id_null(service: FakeService) -> None:
    reply, method = handle_line(service, b"{oops")
    assert reply is not None and method is None
    assert json.loads(reply) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": PARSE_ERROR, "message": json.loads(reply)["error"]["message"]},
    }
    message = json.loads(reply)["error"]["message"]
    assert isinstance(message, str) and message.strip()


def test_shutdown_is_answered_before_the_daemon_stops(service: FakeService) -> None:
    reply, method = handle_line(service, line({"jsonrpc": "2.0", "id": 1, "method": "shutdown"}))
    assert reply is not None and json.loads(reply)["result"]["stopping"] is True
    # Answering does not stop: the server stops once the reply is written.
    assert method in STOP_AFTER_REPLY and not service.stopped
