"""Records compare and show themselves by their fields, as the dataclasses they replace on
the client path did."""

from __future__ import annotations

import pytest

from wikimem_watch.daemon.protocol import Request, Response
from wikimem_watch.record import Record


class Point(Record):
    __slots__ = ("x", "y")

    def __init__(self, x: int, y: int) -> None:
        self.x = x
        self.y = y


class Other(Record):
    __slots__ = ("x", "y")

    def __init__(self, x: int, y: int) -> None:
        self.x = x
        self.y = y


def test_records_are_equal_when_their_type_and_fields_are() -> None:
    assert Point(1, 2) == Point(1, 2) and hash(Point(1, 2)) == hash(Point(1, 2))
    assert Point(1, 2) != Point(2, 1)
    assert Point(1, 2) != Other(1, 2) and Point(1, 2) != (1, 2)
    assert len({Point(1, 2), Point(1, 2), Point(0, 0)}) == 2


def test_a_record_shows_its_fields_in_order() -> None:
    assert repr(Point(1, "a")) == "Point(x=1, y='a')"  # type: ignore[arg-type]
    assert repr(Response(3, None, {"code": 1})) == "Response(id=3, result=None, error={'code': 1})"


def test_a_record_has_no_room_for_other_attributes() -> None:
    request = Request("status")
    assert request.params == {} and request.id is None and not request.notification
    with pytest.raises(AttributeError):
        request.extra = 1  # type: ignore[attr-defined]
