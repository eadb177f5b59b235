"""What a player submits in one turn: a harvest request and, on the talk channel, an
announcement. One type from the decide side to the step (kernels/turn.py)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

ANNOUNCE_DECIMALS: int = 3  # 003_*: announcements are rounded to 3 decimals (the host's messages too)


class Actions(eqx.Module):
    """One turn's actions of every player of one arena."""

    requests: jax.Array  # float[N], requested harvests
    announced: jax.Array  # float[N], announced intended harvest, NaN = no announcement


def of(requests: jax.Array) -> Actions:
    """Actions with no announcement."""
    r = jnp.asarray(requests)
    return Actions(requests=r, announced=jnp.full(r.shape, jnp.nan, r.dtype))


def as_actions(x: Actions | jax.Array) -> Actions:
    """The public ``turn.step``'s one coercion: Actions as given; a bare float[N] of requests
    (a caller with requests only) is Actions with no announcement. Inside the turn only
    Actions flow."""
    return x if isinstance(x, Actions) else of(x)


def announcement(x: jax.Array) -> jax.Array:
    """003_*: a number >= 0 rounded to 3 decimals; anything else (NaN, inf, < 0) is null."""
    ok = jnp.isfinite(x) & (x >= 0)
    return jnp.where(ok, jnp.round(jnp.where(ok, x, 0.0), ANNOUNCE_DECIMALS), jnp.nan)
