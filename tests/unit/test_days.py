"""The restored day order: one stable 64-bit key sort, the same order as a lexsort."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from wikimem_watch.core.days import _stable_order


def _lexsort(major: list[int], minute: list[int], line: list[int]) -> list[int]:
    return np.lexsort((np.array(line), np.array(minute), np.array(major))).tolist()


@given(
    st.lists(
        st.tuples(
            st.integers(0, 5) | st.integers(0, 3_652_059),  # ties, and any date's ordinal
            st.integers(-1, 1439),
            st.integers(1, 4) | st.integers(1, 2**31 - 1),
        ),
        max_size=60,
    )
)
def test_the_key_sort_orders_as_lexsort_with_ties_in_index_order(
    rows: list[tuple[int, int, int]],
) -> None:
    major, minute, line = ([r[i] for r in rows] for i in range(3))
    order = _stable_order(np.array(major, np.int64), np.array(minute), np.array(line))
    assert order.tolist() == _lexsort(major, minute, line)


def test_fields_too_wide_for_the_key_fall_back_to_lexsort() -> None:
    major, minute, line = [1 << 40, 3, 3, -2], [5, 5, 2000, 0], [1, 0, 7, 7]
    order = _stable_order(np.array(major), np.array(minute), np.array(line))
    assert order.tolist() == _lexsort(major, minute, line)
    assert _stable_order(np.array([], np.int64), np.array([]), np.array([])).tolist() == []
