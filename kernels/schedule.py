"""Schedulers: how one turn's requests are served from the commons.

``simultaneous`` (the default): all requests at once. The engine is asked for the total
demand once (one die sequence for the whole excess); when it delivers less than the demand,
each player receives the same fraction of its request (proportional rationing), so no
player ever receives what did not exist and nobody is favoured by order.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp

from . import rng

SCHEDULERS: dict[str, Callable] = {}


def scheduler(name: str):
    def deco(fn):
        SCHEDULERS[name] = fn
        return fn

    return deco


def get_scheduler(name: str) -> Callable:
    try:
        return SCHEDULERS[name]
    except KeyError:
        raise ValueError(f"model.scheduler: unknown scheduler {name!r}; known: {sorted(SCHEDULERS)}") from None


def ration(requests: jax.Array, delivered: jax.Array) -> jax.Array:
    """Split ``delivered`` in proportion to ``requests``; the parts never sum above it."""
    total = jnp.sum(requests)
    frac = jnp.where(total > 0, jnp.minimum(delivered / jnp.where(total > 0, total, 1.0), 1.0), 0.0)
    actual = requests * frac
    # Rounding can push the sum a few ulps above what was delivered; scale it back under.
    over = jnp.sum(actual) > delivered
    return jnp.where(over, actual * (delivered / jnp.maximum(jnp.sum(actual), jnp.finfo(actual.dtype).tiny)) * (1 - 4 * jnp.finfo(actual.dtype).eps), actual)


@scheduler("simultaneous")
def simultaneous(game, key, turn, es, requests, params):
    """Serve every request at once; returns (engine state, actual[N], collapsed, reserve drawn)."""
    u = rng.uniform(key, turn, 0, rng.DIE, (), game.generator)
    es, delivered, died, drawn = game.engine.step_one(es, jnp.sum(requests), u, params.engine)
    return es, ration(requests, delivered), died, drawn
