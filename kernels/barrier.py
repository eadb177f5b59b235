"""Keep a value in memory for the consumers that broadcast it (an exact identity).

XLA:CPU fuses a producer into every consumer when the producer is made of cheap
element-wise ops, and evaluates it again for each consumer element. Consumers that broadcast
a per-player value over the pact slots (the violation check, the ladder) then re-ran the
whole harvest resolution once per (slot, player): that was most of the governance layer's
cost. XLA does not duplicate an "expensive" op (a float division) into a consumer that reuses
its elements, so dividing by a 1 it cannot prove constant keeps the value computed once.
x / 1 == x exactly in IEEE arithmetic (finite, inf and -0.0 alike; NaN stays NaN), so no
number changes, except that a subnormal flushes to zero as in every arithmetic op XLA:CPU
runs. The cost is one division per element (bench/README.md has the figures).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def materialize(x: jax.Array) -> jax.Array:
    """x unchanged (a float array), computed once for its broadcasting consumers."""
    # (x == x) is 1 except at NaN, where NaN / 0 is NaN again. The divisor must be
    # per-element and opaque: XLA turns a division by a broadcast scalar into a multiply.
    return x / (x == x).astype(x.dtype)


def materialize_mask(mask: jax.Array) -> jax.Array:
    """A bool array computed once (as 0/1 floats, see :func:`materialize`)."""
    return materialize(mask.astype(jnp.float32)) > 0
