"""Schedulers: how one turn's requests are served from the commons (a static choice).

``simultaneous`` (the default): all requests at once. The engine is asked for the total
demand once (one die sequence for the whole excess); when it delivers less than the demand,
each player receives the same fraction of its request (proportional rationing), so no
player ever receives what did not exist and nobody is favoured by order.

``sequential``: players harvest one after another in a uniformly random order drawn afresh
each turn (``turn_order``: argsort of N uniforms of stream (turn, 0, ORDER)). Each player's
request is served by its own ``step_one`` against the stock its predecessors left, with its
own die uniform (stream (turn, player, DIE)); after a die failure (collapse) later players
receive nothing. With policy players (``play``) each player decides when its go comes,
observing (through the observability layer) the stock its predecessors left; requests
submitted from outside (live players) are served as submitted, in the same order.

``wealth-weighted``: like ``simultaneous`` (one ``step_one`` for the total demand), but a
shortfall is shared by weighted water-filling instead of proportionally: player i receives
min(request_i, lambda * c_i) with c_i = capacity(w_i) = 1 + 0.05 w_i (Table A.3, wealth at
the start of the turn) and lambda set so the allocations sum to what was delivered. Richer
players' claims are served further; nobody receives more than requested; nothing is lost.

``random_units``: GovSim's allocation. If the requests fit in what the engine delivers for
the total demand (one ``step_one``, as ``simultaneous``), everyone gets their request;
otherwise what was delivered goes out one unit at a time, each unit to a player drawn
uniformly among those still wanting more, until it is gone. ``hand_out`` draws that law in
rounds of a block of labels instead of unit by unit (the proof is in its docstring and
docs/semantics/game.md §19); a player's last unit, or the pool's, may be a fraction.

A scheduler is ``fn(game, key, turn, engine_state, requests, params, *, wealth, redecide)``
returning :class:`Served`. ``redecide(es, p) -> (request, invalid, memory[K, M])`` (or None)
lets a scheduler re-run player p's decision against engine state ``es``; only
``sequential`` uses it. All schedulers conserve the stock: sum(actual) equals the stock
taken plus the reserve drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import rng, unroll
from .observe import capacity

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


def _players(x: jax.Array) -> list[jax.Array] | jax.Array:
    # Per player, one value per arena: under vmap each is contiguous over the batch, which
    # XLA:CPU vectorises (bench/README.md, "Layout"). Many players: the array itself
    # (kernels/unroll.py).
    return [x[i] for i in range(x.shape[0])] if unroll.players(x.shape[0]) else x


def _sum(xs: list[jax.Array] | jax.Array) -> jax.Array:
    return jnp.sum(jnp.stack(xs) if isinstance(xs, list) else xs)


def ration(requests: jax.Array, delivered: jax.Array) -> jax.Array:
    """Split ``delivered`` in proportion to ``requests``; the parts never sum above it."""
    tiny = jnp.finfo(requests.dtype).tiny
    rs = _players(requests)
    total = _sum(rs)
    frac = jnp.where(total > 0, jnp.minimum(delivered / jnp.maximum(total, tiny), 1.0), 0.0)
    actual = [r * frac for r in rs] if isinstance(rs, list) else rs * frac
    # Rounding can push the sum a few ulps above what was delivered; scale it back under.
    s = _sum(actual)
    shrink = jnp.where(s > delivered, delivered / jnp.maximum(s, tiny) * (1 - 4 * jnp.finfo(requests.dtype).eps), 1.0)
    # The final min() (a no-op: actual <= request) also keeps the product from being
    # contracted into a later FMA (wealth + actual) in one XLA fusion but not in another,
    # which would make two copies of the same value differ in the last bit.
    if not isinstance(rs, list):
        return jnp.minimum(rs * frac * shrink, rs)  # actual * shrink, read where mypy knows it is an array
    return jnp.stack([jnp.minimum(a * shrink, r) for a, r in zip(actual, rs, strict=True)])


class Served(NamedTuple):
    """What a scheduler returns. ``requests``/``invalid``/``memory`` are None unless the
    scheduler re-decided (sequential with policy players): then they replace the turn's."""

    engine: object  # engine state after the harvest
    actual: jax.Array  # float[N], what each player received
    collapsed: jax.Array  # bool[], the collapse die failed
    reserve_drawn: jax.Array  # float[], units drawn from the hidden reserve
    requests: jax.Array | None = None  # float[N], the requests actually served
    invalid: jax.Array | None = None  # bool[N]
    memory: jax.Array | None = None  # float[K, M], policy memory after deciding


def _fit_under(actual: jax.Array, delivered: jax.Array) -> jax.Array:
    # Rounding can push the sum a few ulps above what was delivered; scale it back under.
    # The min() is a no-op that also blocks FMA contraction into wealth + actual (see ration).
    total = _sum(_players(actual))
    over = total > delivered
    eps = jnp.finfo(actual.dtype).eps
    scaled = actual * (delivered / jnp.maximum(total, jnp.finfo(actual.dtype).tiny)) * (1 - 4 * eps)
    return jnp.minimum(jnp.where(over, scaled, actual), actual)


@scheduler("simultaneous")
def simultaneous(game, key, turn, es, requests, params, *, wealth=None, redecide=None):
    """Serve every request at once, proportional rationing of a shortfall."""
    u = rng.uniform(key, turn, 0, rng.DIE, (), game.generator)
    es, delivered, died, drawn = game.engine.step_one(es, _sum(_players(requests)), u, params.engine)
    return Served(es, ration(requests, delivered), died, drawn)


def water_fill(requests: jax.Array, weights: jax.Array, delivered: jax.Array) -> jax.Array:
    """min(r_i, lambda w_i) summing to ``delivered`` (all r_i when they fit); weights > 0."""
    n = requests.shape[0]
    t = requests / weights  # the level at which player i is fully served
    idx = jnp.argsort(t)
    rs, ws, ts = requests[idx], weights[idx], t[idx]
    served_before = jnp.cumsum(rs) - rs  # players sorted before k fully served
    w_rest = jnp.sum(ws) - (jnp.cumsum(ws) - ws)  # weight of players k.. N-1
    lam_k = (delivered - served_before) / w_rest
    unsat = lam_k < ts
    k = jnp.argmax(unsat)
    lam = jnp.where(jnp.any(unsat), lam_k[jnp.minimum(k, n - 1)], jnp.inf)
    alloc = jnp.minimum(requests, jnp.maximum(lam, 0.0) * weights)
    fits = jnp.sum(requests) <= delivered
    return _fit_under(jnp.where(fits, requests, alloc), delivered)


@scheduler("wealth-weighted")
def wealth_weighted(game, key, turn, es, requests, params, *, wealth=None, redecide=None):
    """One draw for the total demand; a shortfall is water-filled with weights capacity(w)."""
    u = rng.uniform(key, turn, 0, rng.DIE, (), game.generator)
    es, delivered, died, drawn = game.engine.step_one(es, jnp.sum(requests), u, params.engine)
    w = jnp.zeros_like(requests) if wealth is None else jnp.maximum(wealth, 0.0)
    return Served(es, water_fill(requests, capacity(w), delivered), died, drawn)


def turn_order(game, key, turn) -> jax.Array:
    """The sequential order of this turn: int32[N], a uniform random permutation."""
    u = rng.uniform(key, turn, 0, rng.ORDER, (game.n_players,), game.generator)
    return jnp.argsort(u).astype(jnp.int32)


@scheduler("sequential")
def sequential(game, key, turn, es, requests, params, *, wealth=None, redecide=None):
    """Players harvest one after another in a random order; each sees what was left."""
    order = turn_order(game, key, turn)

    def go(carry, p):
        es, died = carry
        if redecide is None:
            r, bad, mem = requests[p], jnp.zeros((), bool), None
        else:
            r, bad, mem = redecide(es, p)
        r = jnp.where(died, 0.0, r)
        u = rng.uniform(key, turn, p, rng.DIE, (), game.generator)
        es2, got, d, drawn = game.engine.step_one(es, r, u, params.engine)
        return (es2, died | d), (r, bad, mem, got, drawn)

    (es, died), (rs, bads, mems, gots, drawns) = jax.lax.scan(go, (es, jnp.zeros((), bool)), order)
    inv = jnp.argsort(order)
    actual = gots[inv]
    if redecide is None:
        return Served(es, actual, died, jnp.sum(drawns))
    by_player = mems[inv]  # [N, K, M]: the memory as each player's redecision left it
    slots = game.memory_slots
    if not slots:
        memory = mems[0]
    elif unroll.players(game.n_players):
        memory = jnp.stack([by_player[p, k] for k, (_, p) in enumerate(slots)])
    else:
        memory = by_player[np.asarray([p for _, p in slots]), np.arange(len(slots))]
    return Served(es, actual, died, jnp.sum(drawns), rs[inv], bads[inv], memory)


#: labels drawn at once by a round of ``hand_out`` (a larger pool takes more rounds; < 256)
BLOCK = 128
#: ``hand_out`` is exact for pools up to this many units; the rest of a larger one is rationed
MAX_UNITS = 4096


def max_rounds(n: int) -> int:
    """The rounds ``hand_out`` may take for ``n`` players and a pool of ``MAX_UNITS``: each
    round meets a player, leaves less than one unit, or hands out a full block."""
    return n + 2 + MAX_UNITS // BLOCK


def _counts(j: jax.Array, n: int) -> jax.Array:
    """How many of the labels ``j`` (int32[BLOCK], a slot in [0, n) or -1: not drawn) fell on
    each slot -> int32[n]. Four 8-bit counters to a uint32 word (a slot gets at most BLOCK <
    256 labels), so a round sums ceil(n / 4) words over the block instead of an n x BLOCK
    one-hot table (7x faster on XLA:CPU: bench/HISTORY.md, govsim_alloc.py)."""
    words = []
    for w in range((n + 3) // 4):
        here = (j >= 4 * w) & (j < 4 * w + 4)
        shift = jnp.where(here, 8 * (j - 4 * w), 0).astype(jnp.uint32)
        words.append(jnp.sum(jnp.where(here, jnp.uint32(1) << shift, jnp.uint32(0)), dtype=jnp.uint32))
    return jnp.stack([((words[s // 4] >> (8 * (s % 4))) & 255).astype(jnp.int32) for s in range(n)])


def hand_out(key, turn, requests: jax.Array, delivered: jax.Array, generator: str) -> jax.Array:
    """``delivered`` (float[]) shared out as GovSim does among ``requests`` (float[N]): unit by
    unit, each unit to a player drawn uniformly among those still short. -> float[N].

    Drawn in rounds, not unit by unit. Round r draws e labels, e = min(BLOCK, floor(left)) (1
    when less than one unit is left), each uniform over the players open at the round's start
    (draw k: element k of stream (turn, r, UNITS)); open player i drawn x_i times receives
    min(x_i, still_wanted_i, left). Exact in law: GovSim's process is the same as reading iid
    labels uniform over the players open at the start and skipping those of players already
    served (given the past, the first label that falls among the still-open players is uniform
    over them, a uniform conditioned on a subset being uniform on it). Within a round the pool
    cannot run out before its last label (e <= left and each label takes at most one unit), so
    only the counts x_i matter; at a round's end the labels of players served meanwhile would
    all be skipped, so the next round may draw over the open players alone. Each round meets
    a player, leaves less than one unit or hands out a full block, so ``max_rounds(N)`` rounds
    serve any pool up to ``MAX_UNITS``; a larger one's rest is rationed proportionally."""
    n = requests.shape[0]
    want = jnp.maximum(requests, 0.0)
    k_index = jnp.arange(BLOCK, dtype=jnp.int32)

    def cond(c):
        r, got, left = c
        return (r < max_rounds(n)) & (left > 0) & jnp.any(want - got > 0)

    def body(c):
        r, got, left = c
        rem = want - got
        open_ = rem > 0
        m = jnp.sum(open_.astype(jnp.int32))
        e = jnp.clip(jnp.floor(left), 1.0, float(BLOCK)).astype(jnp.int32)
        u = rng.uniform(key, turn, r, rng.UNITS, (BLOCK,), generator)
        j = jnp.minimum(jnp.floor(u * m.astype(u.dtype)).astype(jnp.int32), m - 1)  # the j-th open player
        j = jnp.where(k_index < e, j, -1)  # labels past e are not drawn
        by_slot = _counts(j, n)  # [N]: labels per slot (the j-th open player)
        rank = jnp.cumsum(open_.astype(jnp.int32)) - 1  # [N]: i's slot, where open
        x = by_slot[jnp.clip(rank, 0, n - 1)].astype(requests.dtype)
        take = jnp.minimum(jnp.minimum(x, rem), left)
        take = jnp.where(open_, take, 0.0)
        return r + 1, got + take, left - jnp.sum(take)

    z = jnp.zeros((), jnp.int32)
    _, got, left = jax.lax.while_loop(cond, body, (z, jnp.zeros((n,), requests.dtype), delivered))
    rest = ration(want - got, jnp.maximum(left, 0.0))  # only past MAX_UNITS units
    return _fit_under(got + rest, delivered)


@scheduler("random_units")
def random_units(game, key, turn, es, requests, params, *, wealth=None, redecide=None):
    """GovSim: all requests when they fit, else the delivered units handed out at random."""
    u = rng.uniform(key, turn, 0, rng.DIE, (), game.generator)
    rs = _players(requests)
    total = _sum(rs)
    es, delivered, died, drawn = game.engine.step_one(es, total, u, params.engine)
    fits = total <= delivered
    # when the requests fit the loop is given nothing to hand out, so it stops at once
    handed = hand_out(key, turn, requests, jnp.where(fits, 0.0, delivered), game.generator)
    if isinstance(rs, list):  # per player, as the other schedulers (batch-contiguous under vmap)
        actual = jnp.stack([jnp.where(fits, r, handed[i]) for i, r in enumerate(rs)])
    else:
        actual = jnp.where(fits, requests, handed)
    return Served(es, actual, died, drawn)
