"""Any JSON-safe request or response survives a trip through the line framing."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wikimem_watch.daemon.protocol import (
    decode_request,
    decode_response,
    encode_error,
    encode_request,
    encode_result,
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
ids = st.none() | st.integers(min_value=-(2**53), max_value=2**53) | st.text()


@given(st.text(min_size=1), st.dictionaries(st.text(), json_values, max_size=5), ids)
def test_requests_round_trip(method: str, params: dict[str, object], request_id: object) -> None:
    raw = encode_request(method, params, request_id)  # type: ignore[arg-type]
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    req = decode_request(raw)
    assert (req.method, req.params, req.id, req.notification) == (
        method,
        params,
        request_id,
        False,
    )


@given(ids, json_values)
def test_results_round_trip(request_id: object, result: object) -> None:
    raw = encode_result(request_id, result)  # type: ignore[arg-type]
    assert raw.count(b"\n") == 1
    resp = decode_response(raw)
    assert (resp.id, resp.result, resp.error) == (request_id, result, None)


@given(ids, st.integers(), st.text(), json_values)
def test_errors_round_trip(request_id: object, code: int, message: str, data: object) -> None:
    resp = decode_response(encode_error(request_id, code, message, data))  # type: ignore[arg-type]
    assert resp.id == request_id and resp.error is not None
    assert resp.error["code"] == code and resp.error["message"] == message
    assert resp.error.get("data") == data


@given(st.binary(max_size=200))
def test_decoding_arbitrary_bytes_never_raises_anything_but_protocol_errors(raw: bytes) -> None:
    from wikimem_watch.daemon.protocol import ProtocolError

    try:
        decode_request(raw)
    except ProtocolError as exc:
        assert -32700 <= exc.code <= -32600
