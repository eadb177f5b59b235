"""Runs of many arenas over many turns: ``jax.vmap`` over arenas inside ``jax.lax.scan``.

The batch axis is the LAST axis of every leaf (per-player arrays are N x B, players-major):
kernels stay written for one arena, and the per-player reductions run over a contiguous
leading axis, which measured faster on CPU than B x N (see bench/README.md).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from .game import Game
from .params import Params
from .state import ArenaState, TurnRecord
from .turn import play

BATCH_AXIS = -1


def batched(fn):
    """vmap a one-arena function over the trailing batch axis of all its arguments."""
    return jax.vmap(fn, in_axes=BATCH_AXIS, out_axes=BATCH_AXIS)


def init_batch(game: Game, params: Params) -> ArenaState:
    """Initial states of a batch (params with a trailing batch axis)."""
    return batched(game.init)(params)


def run_turns(game: Game, n_turns: int, history: bool, keys: jax.Array, state: ArenaState, params: Params):
    """Scan ``n_turns`` turns of a batch. keys: uint32[2, B]. Returns (state, records | None).

    Records are stacked on a leading turn axis: leaf shapes (T, ..., B).
    """
    turn_fn = batched(partial(play, game))

    def body(st, _):
        st, rec = turn_fn(keys, st, params)
        return st, (rec if history else None)

    return jax.lax.scan(body, state, None, length=n_turns)


def summary_of(state: ArenaState) -> dict:
    """Per-arena outcome from a final state (no history needed)."""
    return {
        "survived": ~state.collapsed,
        "collapse_turn": state.collapse_turn,
        "turns_played": state.turn,
        "wealth": state.wealth,
    }
