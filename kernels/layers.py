"""Optional turn layers (governance, perturbations): the turn calls them, never their rules.

A layer is a static object on ``Game.layers`` with a name and three hooks, each written for
one arena. Its dynamic numbers live in ``params.extra[name]``, its state in
``state.extra[name]`` and its per-turn output in ``record.extra[name]["begin"]`` (begin hook) and ``["end"]`` (after the harvest).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


class Layer:
    name: str = "layer"

    def init(self, game, params) -> Any:
        """This layer's part of the initial state."""
        return {}

    def effective_params(self, game, state, params):
        """The params every kernel reads this turn: a layer holding mutable copies of params
        numbers in its state (perturbations: r, K, threshold, visibility) substitutes them."""
        return params

    def begin(self, game, key: jax.Array, turn: jax.Array, state, params):
        """Start of turn, before players observe (shocks, overrides). -> (state, record)."""
        return state, {}

    def ahead(self, game, key: jax.Array, turn: jax.Array, state, params, busy: bool = True) -> Any:
        """Decide-side work that reads only the state at the start of ``turn``, not the
        turn's decisions (scripted pact writes). The batched rollout runs it at the end of
        the previous turn and carries the result, so XLA computes it once, in memory, rather
        than inside every consumer's fusion; ``act`` receives it (None: compute it there).
        Same numbers either way. ``busy=False`` (static): no arena of the batch is
        :meth:`busy`; return the same result without the work."""
        return None

    def busy(self, game, turn: jax.Array, state, params) -> jax.Array:
        """bool[]: whether ``ahead`` has anything to do for this arena at ``turn``. The
        rollout skips the work (``busy=False``) on turns when no arena of the batch is busy."""
        return jnp.ones((), bool)

    def act(self, game, key: jax.Array, turn: jax.Array, state, actions, params, ahead: Any = None):
        """Decide side, after the policies and before the harvest (scripted talk, compliance).
        actions: kernels.actions.Actions (requests, announced float[N]); ahead: this layer's
        ``ahead`` result for this turn, or None. -> (state, actions)."""
        return state, actions

    def after_harvest(self, game, key: jax.Array, turn: jax.Array, state, ctx: dict, params):
        """After harvest and dynamics (violations, sanctions, talk). ctx has requested,
        actual, regen, announced, sanction (float[N]); layers may update announced/sanction.
        -> (state, ctx, record)."""
        return state, ctx, {}


def has_ahead(layer: Layer) -> bool:
    """Whether the layer defines ``ahead`` work (static)."""
    return type(layer).ahead is not Layer.ahead


def effective_params(game, state, params):
    """Fold every layer's ``effective_params`` hook over ``params`` (identity without layers)."""
    for layer in game.layers:
        params = layer.effective_params(game, state, params)
    return params
