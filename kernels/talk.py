"""Scripted cheap talk for batched arenas (003_*): announcements, pledges, proposals,
acceptance rules and compliance, configured per player as dynamic arrays.

Batched arenas have no language, so each player follows a script. Within turn t, after the
policies have decided and before the harvest, every player in order:

1. answers the proposals awaiting it that were made before turn t (messages of turn t are
   seen at t + 1, 003_* 'Timing'): accept by its rule, else reject (or ignore them);
2. pledges ``pledge_cap`` if t == ``pledge_turn``;
3. proposes its pact if t == ``propose_turn``;
4. if it complies, clips its request to the tightest limit of its active pacts;
5. announces ``request x (1 - bias)`` (rounded to 3 decimals) if it announces.
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import pacts as P
from . import unroll
from .barrier import materialize, materialize_mask

ALWAYS, NEVER, MIN_CAP = 0, 1, 2
ACCEPT_RULES: tuple[str, ...] = ("always", "never", "min_cap")


class TalkParams(eqx.Module):
    """Every player's script (leaves [N] or [N, N])."""

    announce: jax.Array  # bool[N], announce the intended harvest each turn
    bias: jax.Array  # float[N], announce request x (1 - bias); 0 = honest
    comply: jax.Array  # bool[N], clip the request to the limits of one's active pacts
    pledge_turn: jax.Array  # int32[N], turn of the pledge, 0 = never
    pledge_cap: jax.Array  # float[N], maxHarvest of the pledge
    propose_turn: jax.Array  # int32[N], turn of the proposal, 0 = never
    propose_parties: jax.Array  # bool[N, N], row i: the parties player i proposes to
    propose_term: jax.Array  # int32[N], term type code of the proposal
    propose_cap: jax.Array  # float[N], maxHarvest (harvest_cap)
    propose_tolerance: jax.Array  # float[N], tolerance (no_aggression)
    accept_rule: jax.Array  # int32[N], ALWAYS | NEVER | MIN_CAP
    accept_min: jax.Array  # float[N], MIN_CAP: accept a harvest_cap with maxHarvest >= this
    decline_rejects: jax.Array  # bool[N], a declined proposal is rejected (else left pending)


def silent(n: int, dtype=None) -> TalkParams:
    """Nobody talks, pledges, proposes or complies; everyone accepts."""
    dt = dtype or jnp.result_type(float)
    zb, zi, zf = jnp.zeros((n,), bool), jnp.zeros((n,), jnp.int32), jnp.zeros((n,), dt)
    return TalkParams(zb, zf, zb, zi, zf, zi, jnp.zeros((n, n), bool), zi, zf, zf, zi, zf, jnp.ones((n,), bool))


def answers(tp: TalkParams, pacts: P.Pacts, turn: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(accept, reject) bool[P, N] of every player on the proposals awaiting it."""
    waiting = (
        (pacts.status == P.PROPOSED)[:, None] & pacts.parties & ~pacts.accepted & (pacts.proposed_turn < turn)[:, None]
    )
    cap_ok = (pacts.term != P.HARVEST_CAP)[:, None] | (pacts.max_harvest[:, None] >= tp.accept_min[None, :])
    rule = tp.accept_rule[None, :]
    yes = (rule == ALWAYS) | ((rule == MIN_CAP) & cap_ok)
    return waiting & yes, waiting & ~yes & tp.decline_rejects[None, :]


def registry_writes(tp: TalkParams, pacts: P.Pacts, turn: jax.Array, scripted: tuple | None = None) -> P.Pacts:
    """Steps 1-3 of every player's script for this turn: answers, pledges, proposals.

    They read only the table and the turn (not this turn's decisions): the governance
    layer's ``prewrite``, applied before the turn (kernels/rollout.py). scripted: static; the players
    that have a pledge or a proposal in their script (None = every player): the table
    writes of steps 2-3 run for them only.
    """
    acc, rej = answers(tp, pacts, turn)
    pacts = P.reject_mask(P.accept_mask(pacts, materialize_mask(acc), turn), materialize_mask(rej))
    players = range(tp.announce.shape[0]) if scripted is None else scripted
    n = tp.announce.shape[0]
    dt = tp.pledge_cap.dtype
    if not unroll.players(n):
        return _propose_scripted(tp, pacts, turn, np.asarray(list(players), np.int32))
    req: list[tuple[Any, ...]] = []  # in player order, each player's pledge before its proposal
    for i in players:
        req.append(
            (i, jnp.zeros((n,), bool), P.HARVEST_CAP, tp.pledge_cap[i], jnp.zeros((), dt), tp.pledge_turn[i] == turn)
        )
        req.append(
            (
                i,
                tp.propose_parties[i],
                tp.propose_term[i],
                tp.propose_cap[i],
                tp.propose_tolerance[i],
                tp.propose_turn[i] == turn,
            )
        )
    if not req:
        return pacts
    cols = list(zip(*req, strict=True))
    pacts, _ = P.propose_many(
        pacts,
        jnp.asarray(cols[0], jnp.int32),
        jnp.stack(cols[1]),
        jnp.stack([jnp.asarray(t, jnp.int32) for t in cols[2]]),
        jnp.stack(cols[3]),
        jnp.stack(cols[4]),
        turn,
        jnp.stack(cols[5]),
    )
    return pacts


def _propose_scripted(tp: TalkParams, pacts: P.Pacts, turn: jax.Array, who) -> P.Pacts:
    """Steps 2-3 for many players (kernels/unroll.py): the same requests, in the same order
    (each player's pledge before its proposal), built as arrays instead of one by one."""
    if who.size == 0:
        return pacts
    n = tp.announce.shape[0]
    dt = tp.pledge_cap.dtype

    def pair(a, b):  # [W] pledges and [W] proposals -> [2W], interleaved
        return jnp.stack([a, b], axis=1).reshape((2 * who.size,) + a.shape[1:])

    pacts, _ = P.propose_many(
        pacts,
        jnp.asarray(np.repeat(who, 2), jnp.int32),
        pair(jnp.zeros((who.size, n), bool), tp.propose_parties[who]),
        pair(jnp.full((who.size,), P.HARVEST_CAP, jnp.int32), tp.propose_term[who].astype(jnp.int32)),
        pair(tp.pledge_cap[who], tp.propose_cap[who]),
        pair(jnp.zeros((who.size,), dt), tp.propose_tolerance[who]),
        turn,
        pair(tp.pledge_turn[who] == turn, tp.propose_turn[who] == turn),
    )
    return pacts


def registry_busy(tp: TalkParams, pacts: P.Pacts, turn: jax.Array) -> jax.Array:
    """bool[]: whether :func:`registry_writes` can change the table at ``turn``: a pledge or
    a proposal is scripted for it, or a proposal awaits an answer. When False the writes
    leave every field as it is (no acceptance, rejection, slot or counter changes)."""
    return jnp.any(tp.pledge_turn == turn) | jnp.any(tp.propose_turn == turn) | jnp.any(pacts.status == P.PROPOSED)


def comply_announce(tp: TalkParams, pacts: P.Pacts, requests: jax.Array, last_actual: jax.Array, turn: jax.Array):
    """Steps 4-5: complying players clip to their active pacts' limits; announcers announce.
    Returns (requests, announced). Player by player (see :func:`kernels.pacts.caps`); each
    clipped request is computed once (kernels/barrier.py): the scheduler, the engine and
    the layers all read it."""
    last_mean = jnp.mean(last_actual)
    cap = P.caps(pacts, last_mean, turn > 1)
    if not isinstance(cap, list):  # many players: the array form (kernels/unroll.py)
        requests = materialize(jnp.where(tp.comply, jnp.minimum(requests, cap), requests))
        return requests, jnp.where(tp.announce, requests * (1.0 - tp.bias), jnp.nan)
    requests = jnp.stack(
        [
            materialize(jnp.where(tp.comply[i], jnp.minimum(requests[i], cap[i]), requests[i]))
            for i in range(requests.shape[0])
        ]
    )
    announced = jnp.where(tp.announce, requests * (1.0 - tp.bias), jnp.nan)
    return requests, announced
