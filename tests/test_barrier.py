"""kernels/barrier.py: an exact identity that XLA keeps (it computes the value once)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bdpd_jax.kernels.barrier import materialize, materialize_mask


def test_materialize_is_the_identity_bit_for_bit():
    x = jnp.asarray([0.0, -0.0, 1.5, -3.25e-38, 3.4e38, np.inf, -np.inf, np.nan], jnp.float32)
    got = np.asarray(jax.jit(materialize)(x))
    want = np.asarray(x)
    np.testing.assert_array_equal(got[:-1].view(np.uint32), want[:-1].view(np.uint32))  # -0.0 keeps its sign
    assert np.isnan(got[-1])
    # a subnormal is kept, or flushed to zero where the backend flushes every arithmetic
    # result (XLA:CPU does: x * 3 flushes alike)
    sub = jnp.asarray([1e-45], jnp.float32)
    flushes = float(jax.jit(lambda v: v * 3.0)(sub)[0]) == 0.0
    assert float(jax.jit(materialize)(sub)[0]) == (0.0 if flushes else float(sub[0]))
    m = jnp.asarray([True, False, True])
    np.testing.assert_array_equal(np.asarray(jax.jit(materialize_mask)(m)), np.asarray(m))


def test_the_division_survives_compilation():
    """A division by a broadcast scalar or a select of constants would be turned into a
    multiply, which XLA duplicates into the broadcasting consumer: the divisor is per
    element, and the compiled program keeps the division."""

    def f(a, b):
        y = materialize(a * b + 1.0)  # [N]
        return y[None, :] > jnp.arange(3.0)[:, None]  # a consumer that reuses each element

    text = jax.jit(f).lower(jnp.ones(4), jnp.ones(4)).compile().as_text()
    assert " divide(" in text
