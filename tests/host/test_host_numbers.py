"""``nums`` (one orjson pass per array, used for envelopes and turn records) equals ``num``
element by element: the same shortest round-trip decimal, the same None for non-finite values."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from bdpd_jax.host.live.registry import num, nums


@settings(max_examples=200, deadline=None)
@given(
    arrays(
        st.sampled_from([np.float32, np.float64]),
        st.integers(0, 12),
        elements=st.floats(allow_nan=True, allow_infinity=True, width=32),
    )
)
def test_nums_equals_num(a) -> None:
    got, want = nums(a), [num(v) for v in a]
    assert got == want
    assert [np.signbit(g) for g in got if g is not None] == [np.signbit(w) for w in want if w is not None]


def test_nums_nested_and_special_values() -> None:
    x = np.array([[0.1, np.nan], [np.inf, -3.4028235e38]], np.float32)
    assert nums(x) == [[0.1, None], [None, -3.4028235e38]]
    assert nums(np.float32(2.1)) == 2.1 == num(np.float32(2.1))
    assert nums(np.array([3, -1], np.int32)) == [3.0, -1.0] == [num(v) for v in np.array([3, -1], np.int32)]
