"""Optional turn layers (governance, perturbations): the turn calls them, never their rules.

A layer is a static object on ``Game.layers`` with a name and its hooks (prewrite, begin,
act, after_harvest), each written for one arena. Every hook has a no-op default here;
:func:`has_hook` says whether a layer defines one (the only test of it: the turn runs
``act`` and the rollout's prewrite cond only for layers that do). Its dynamic numbers live in
``params.extra[name]``, its state in ``state.extra[name]`` and its per-turn output in
``record.extra[name]["begin"]`` (begin hook) and ``["end"]`` (after the harvest).
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp


class Layer:
    name: str = "layer"
    #: the turn-record leaves a game without layers never changes (announced, sanction,
    #: sanctioned, strategy: kernels/stored.py) that this layer can change; None: any of them
    changes: ClassVar[tuple[str, ...] | None] = None

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

    def prewrite(self, game, key: jax.Array, turn: jax.Array, state, params):
        """Start-of-turn writes that read only the state, never the turn's decisions
        (scripted pact writes), applied before ``begin``. The batched rollout applies them
        for the whole batch under one ``lax.cond`` at its edge and skips them on turns
        when no arena is :meth:`busy`; they must then leave the state unchanged. They may
        write the layers' own state (``state.extra``) only. -> state."""
        return state

    def busy(self, game, turn: jax.Array, state, params) -> jax.Array:
        """bool[]: whether :meth:`prewrite` can change this arena's state at ``turn``."""
        return jnp.ones((), bool)

    def act(self, game, key: jax.Array, turn: jax.Array, state, actions, params):
        """Decide side, after the policies and before the harvest (compliance, announcements).
        actions: kernels.actions.Actions (requests, announced float[N]). -> (state, actions)."""
        return state, actions

    def after_harvest(self, game, key: jax.Array, turn: jax.Array, state, ctx: dict, params):
        """After harvest and dynamics (violations, sanctions, talk). ctx has requested,
        actual, regen, announced, sanction (float[N]); layers may update announced/sanction.
        -> (state, ctx, record)."""
        return state, ctx, {}


#: the hooks a layer may define (each with a no-op default on :class:`Layer`)
HOOKS = ("init", "effective_params", "prewrite", "busy", "begin", "act", "after_harvest")


def has_hook(layer: Layer, hook: str) -> bool:
    """Whether the layer defines ``hook`` itself (static), rather than inheriting the
    base's no-op: every :class:`Layer` has every hook, so ``hasattr`` says nothing."""
    return getattr(type(layer), hook) is not getattr(Layer, hook)


def effective_params(game, state, params):
    """Fold every layer's ``effective_params`` hook over ``params`` (identity without layers)."""
    for layer in game.layers:
        params = layer.effective_params(game, state, params)
    return params
