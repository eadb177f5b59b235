"""Runs of many arenas over many turns: ``jax.vmap`` over arenas inside ``jax.lax.scan``.

Each turn is ``turn.play`` (the one composition of a turn's phases, kernels/turn.py), with
three choices of layout that keep the same numbers and make the batch fast (figures in
bench/README.md, "Why the rollout is laid out so"):

- At the API the batch axis is the LAST axis of every leaf (per-player arrays are N x B);
  inside the scan it goes FIRST (``vmap(in_axes=-1)`` made XLA transpose around every op
  mixing a per-arena scalar with a per-player array).
- Turn t + 1's observation noise depends on the key and the turn alone; it is drawn at the
  end of turn t and carried (``turn.prepare``): a carried value is materialised, where
  XLA:CPU re-ran it inside every consumer. The numbers are the ones the turn computes itself.
- The layers' start-of-turn writes (``turn.prewrite``: scripted pact writes) are applied to
  the carried state before each turn under one ``lax.cond`` for the whole batch, which skips
  them on turns when no arena is busy (an exact shortcut); the cond's result replaces the
  state's own table, so the idle branch copies nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial, reduce
from typing import Any

import jax
import jax.numpy as jnp

from .game import Game
from .layers import has_hook
from .params import Params
from .state import ArenaState, still_playing
from .stored import stored
from .turn import play, prepare, prewrite, prewrite_busy

BATCH_AXIS = -1


def batched(fn: Callable[..., Any]) -> Callable[..., Any]:
    """vmap a one-arena function over the trailing batch axis of all its arguments."""
    return jax.vmap(fn, in_axes=BATCH_AXIS, out_axes=BATCH_AXIS)


def init_batch(game: Game, params: Params) -> ArenaState:
    """Initial states of a batch (params with a trailing batch axis)."""
    return batched(game.init)(params)


def run_turns(
    game: Game,
    n_turns: int,
    history: bool,
    keys: jax.Array,
    state: ArenaState,
    params: Params,
    every: int = 1,
    stop_when_ended: bool = False,
    lanes: int = 1,
    record_axis: int = -1,
):
    """Scan ``n_turns`` turns of a batch. keys: uint32[2, B]. Returns (state, records | None).
    With ``stop_when_ended`` (static) the loop stops once every arena has ended: the turns
    left are frozen no-ops, so the final state is the same; with history (``every`` 1) it
    stops after the first turn no arena played and gives the turns left that turn's record
    (``_recorded_until_ended``), so the records are the same too.

    Records are stacked on a leading turn axis: leaf shapes (T, ..., B), the leaves the game
    never changes left out (None: kernels/stored.py; ``restored`` puts them back on the
    host). With ``every = k``
    (``n_turns`` a multiple of k) only every k-th turn's record is kept, inside the scan (an
    inner scan of k turns emits its last record), so memory holds T/k records.

    ``lanes`` (static): each turn runs the batch as that many independent slices of arenas.
    The numbers are the same (an arena's never depend on its neighbours); XLA:CPU runs the
    slices' ops at the same time, where its cost model leaves a narrow batch's memory-bound
    ops on one thread (bench/README.md, "Lanes").
    """
    turn_fn = jax.vmap(partial(play, game, prewritten=True))  # batch-first inside the scan
    prepare_fn = jax.vmap(partial(prepare, game))
    prewrite_fn = _prewriter(game)
    keys, state, params = _front((keys, state, params))
    cuts = lane_cuts(keys.shape[0], lanes)
    ks, ps = _split(keys, cuts), _split(params, cuts)

    def body(carry, _):
        out, recs = [], []
        for k, p, (st, z) in zip(ks, ps, carry, strict=True):
            st = prewrite_fn(k, st, p)
            st, rec = turn_fn(k, st, p, z)
            out.append((st, prepare_fn(k, st, p)))
            recs.append(stored(game, rec) if history else None)
        return tuple(out), tuple(recs)

    carry = tuple((st, prepare_fn(k, st, p)) for k, st, p in zip(ks, _split(state, cuts), ps, strict=True))
    if not history and stop_when_ended:
        # a while loop over turns that also ends once no arena of the batch is live
        def go(c):
            i, lane_c, _ = c
            lane_c = body(lane_c, None)[0]
            live = [jnp.any(still_playing(st, p)) for (st, _z), p in zip(lane_c, ps, strict=True)]
            return i + 1, lane_c, reduce(jnp.logical_or, live)

        start = (jnp.zeros((), jnp.int32), carry, jnp.ones((), bool))
        final = jax.lax.while_loop(lambda c: (c[0] < n_turns) & c[2], go, start)[1]
        recs = None
    elif stop_when_ended and every == 1:
        final, recs = _recorded_until_ended(body, carry, n_turns)
    elif every == 1:
        final, recs = jax.lax.scan(body, carry, None, length=n_turns)
    else:
        if n_turns % every:
            raise ValueError(f"history_every: {every} does not divide the chunk length {n_turns}")

        def block(st, _):
            st, _unused = jax.lax.scan(lambda s, x: (body(s, x)[0], None), st, None, length=every - 1)
            return body(st, None)

        final, recs = jax.lax.scan(block, carry, None, length=n_turns // every)
    # back to the API layout: state (..., B), records (T, ..., B)
    final = _back(_join([st for st, _z in final], 0), 0)
    if recs is None:
        return final, None
    recs = _join(list(recs), 1)
    return final, (recs if record_axis == 1 else _back(recs, 1))


def _recorded_until_ended(body: Callable[..., Any], carry: Any, n_turns: int) -> tuple[Any, Any]:
    """``scan(body, carry, length=n_turns)`` with history that stops once a turn had no arena
    playing: every arena is then frozen, and a frozen arena's record is the same every turn
    (its state, and with it every input of the turn, no longer changes), so the turns left
    get the last turn's record, written in place. The records are those of the full scan;
    the seed's payload (every arena ended by turn ~20 of 30) skips a third of its turns."""
    shapes = jax.eval_shape(lambda c: body(c, None)[1], carry)
    bufs = jax.tree_util.tree_map(lambda s: jnp.zeros((n_turns, *s.shape), s.dtype), shapes)

    def put(buf: Any, rec: Any, i: jax.Array) -> Any:
        return jax.tree_util.tree_map(lambda b, r: jax.lax.dynamic_update_index_in_dim(b, r, i, 0), buf, rec)

    def go(c):
        i, lane_c, buf, _ = c
        lane_c, recs = body(lane_c, None)
        live = reduce(jnp.logical_or, [jnp.any(r.played) for r in recs])
        return i + 1, lane_c, put(buf, recs, i), live

    start = (jnp.zeros((), jnp.int32), carry, bufs, jnp.ones((), bool))
    ran, final, bufs, _ = jax.lax.while_loop(lambda c: (c[0] < n_turns) & c[3], go, start)
    last = jax.tree_util.tree_map(lambda b: jax.lax.dynamic_index_in_dim(b, ran - 1, 0, keepdims=False), bufs)
    bufs = jax.lax.fori_loop(ran, n_turns, lambda t, buf: put(buf, last, t), bufs)
    return final, bufs


def lane_cuts(width: int, lanes: int) -> tuple[tuple[int, int], ...]:
    """The [start, stop) arena ranges of ``lanes`` near-equal slices of a batch (at least one
    arena each)."""
    lanes = max(1, min(int(lanes), width))
    return tuple((i * width // lanes, (i + 1) * width // lanes) for i in range(lanes))


def _split(tree, cuts) -> list:
    if len(cuts) == 1:
        return [tree]
    return [jax.tree_util.tree_map(lambda x, a=a, b=b: x[a:b], tree) for a, b in cuts]


def _join(trees: list, axis: int):
    if len(trees) == 1:
        return trees[0]
    return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs, axis), *trees)


def _prewriter(game: Game):
    """The batched ``prewrite``: on a turn when no arena of the batch is busy the idle
    branch returns the state as it is (same numbers, no work): an exact shortcut taken at
    the edge, where the whole batch is visible (scripted pact writes happen on a few turns)."""
    if not any(has_hook(layer, "prewrite") for layer in game.layers):
        return lambda keys, st, params: st
    full = jax.vmap(partial(prewrite, game))
    any_busy = jax.vmap(partial(prewrite_busy, game))

    def write(keys, st, params):
        # only the layers' own state goes through the cond: a prewrite writes nothing else
        def full_extra(k, extra, p):
            return full(k, dataclasses.replace(st, extra=extra), p).extra

        extra = jax.lax.cond(jnp.any(any_busy(st, params)), full_extra, lambda k, e, p: e, keys, st.extra, params)
        return dataclasses.replace(st, extra=extra)

    return write


def _front(tree):
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, -1, 0), tree)


def _back(tree, axis: int):
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, axis, -1), tree)


def summary_of(state: ArenaState) -> dict:
    """Per-arena outcome from a final state (no history needed)."""
    return {
        "survived": ~state.collapsed,
        "collapse_turn": state.collapse_turn,
        "turns_played": state.turn,
        "wealth": state.wealth,
    }
