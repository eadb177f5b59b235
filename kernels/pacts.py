"""The pact registry of one arena as fixed-size arrays (001_* 'Pacts', 000_* section 2.1).

A table of ``P`` slots (static) holds every pact ever proposed in the arena. The lifecycle
is ``proposed -> active`` once every party has accepted (the proposer accepts implicitly),
or ``proposed -> rejected`` when any party rejects; a one-party pact (a ``pledge``) is
active on proposal. Every write is a pure function of the table, so the batched scripted
talk (kernels/talk.py) and the live host (message bus and tools) drive the same arrays.

Kernels never raise: an invalid proposal (``maxHarvest <= 0``, ``tolerance < 0``, unknown
term, no party) is not stored and counted in ``invalid``; a proposal that finds the table
full is not stored and counted in ``dropped`` (never dropped silently). Both counters are
reported every turn.

Term types are a registry (kernels/pact_terms.py: one checker function plus one
:func:`register_term` call), re-exported here; the table reads it when called.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from . import unroll
from .barrier import materialize, materialize_mask
from .metrics import EPS  # the one numerical tolerance: a harvest exactly at a limit keeps it
from .pact_terms import (  # noqa: F401 (the term registry, re-exported: P.register_term etc.)
    HARVEST_CAP,
    NO_AGGRESSION,
    NUMBERS,
    Limit,
    TermField,
    TermType,
    TurnContext,
    register_term,
    term_code,
    term_names,
    term_type,
    unregister_term,
    valid_terms,
)

# status codes of a slot; INACTIVE: a regulator's reserved slot binding no one (kernels/governance_agent.py)
EMPTY, PROPOSED, ACTIVE, REJECTED, INACTIVE = 0, 1, 2, 3, 4
STATUSES: tuple[str, ...] = ("empty", "proposed", "active", "rejected", "inactive")


def __getattr__(name: str):
    """``PACT_TERM_TYPES``: the registered names as they are when read (never a copy)."""
    if name == "PACT_TERM_TYPES":
        return term_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Pacts(eqx.Module):
    """The pact table of one arena: P slots of N players."""

    term: jax.Array  # int32[P], index into PACT_TERM_TYPES
    parties: jax.Array  # bool[P, N]
    proposer: jax.Array  # int32[P], -1 for an empty slot
    accepted: jax.Array  # bool[P, N], recorded acceptances (proposer implicit)
    max_harvest: jax.Array  # float[P], harvest_cap's maxHarvest (0 when unused)
    tolerance: jax.Array  # float[P], no_aggression's tolerance (0 when unused)
    status: jax.Array  # int32[P], EMPTY | PROPOSED | ACTIVE | REJECTED
    proposed_turn: jax.Array  # int32[P], 0 for an empty slot
    accepted_turn: jax.Array  # int32[P], turn the pact became active, 0 before
    violation_count: jax.Array  # int32[P], violations recorded against this pact
    dropped: jax.Array  # int32[], proposals not stored because the table was full
    invalid: jax.Array  # int32[], proposals not stored because the terms were invalid

    @property
    def n_slots(self) -> int:
        return self.status.shape[-1]


def empty(n_slots: int, n_players: int, dtype=None) -> Pacts:
    """A table of ``n_slots`` empty slots."""
    dt = dtype or jnp.result_type(float)
    zi = jnp.zeros((n_slots,), jnp.int32)
    zb = jnp.zeros((n_slots, n_players), bool)
    return Pacts(
        term=zi,
        parties=zb,
        proposer=zi - 1,
        accepted=zb,
        max_harvest=jnp.zeros((n_slots,), dt),
        tolerance=jnp.zeros((n_slots,), dt),
        status=zi,
        proposed_turn=zi,
        accepted_turn=zi,
        violation_count=zi,
        dropped=jnp.zeros((), jnp.int32),
        invalid=jnp.zeros((), jnp.int32),
    )


def _settle(p: Pacts, turn: jax.Array) -> Pacts:
    """Proposed pacts whose every party has accepted become active this turn."""
    full = jnp.all(p.accepted | ~p.parties, axis=-1)
    now = materialize_mask((p.status == PROPOSED) & full)  # read by two fields
    return eqx.tree_at(
        lambda q: (q.status, q.accepted_turn),
        p,
        (jnp.where(now, ACTIVE, p.status), jnp.where(now, turn, p.accepted_turn).astype(jnp.int32)),
    )


def propose(
    pacts: Pacts,
    proposer: ArrayLike,
    parties: ArrayLike,
    term: ArrayLike,
    max_harvest: ArrayLike,
    tolerance: ArrayLike,
    turn: jax.Array,
    when: jax.Array | bool = True,
) -> tuple[Pacts, jax.Array]:
    """Store a proposal in the first empty slot; returns (pacts, slot), slot -1 if not stored.

    proposer: int[]; parties: bool[N] (the proposer is always made a party); term: int[]
    code; turn: int[] the turn of the proposal; when: bool[] (False = no-op, for scripts).
    The proposer's acceptance is recorded at once, so a one-party pact is active on proposal.
    """
    dt = pacts.max_harvest.dtype
    pk, slots = propose_many(
        pacts,
        jnp.asarray(proposer, jnp.int32)[None],
        jnp.asarray(parties, bool)[None],
        jnp.asarray(term, jnp.int32)[None],
        jnp.asarray(max_harvest, dt)[None],
        jnp.asarray(tolerance, dt)[None],
        turn,
        jnp.asarray(when, bool)[None],
    )
    return pk, slots[0]


def propose_many(
    pacts: Pacts,
    proposer: jax.Array,
    parties: jax.Array,
    term: jax.Array,
    max_harvest: jax.Array,
    tolerance: jax.Array,
    turn: jax.Array,
    when: jax.Array,
) -> tuple[Pacts, jax.Array]:
    """R proposals made in order (R static): the same table as R calls of :func:`propose`,
    computed in one step (the r-th stored proposal takes the r-th empty slot) rather than
    as a chain of R table rewrites. proposer, term, max_harvest, tolerance, when: [R];
    parties: bool[R, N]. Returns (pacts, slot int32[R], -1 where not stored)."""
    n = pacts.parties.shape[-1]
    n_req = proposer.shape[0]
    me = jnp.arange(n)[None, :] == proposer[:, None]  # [R, N]
    parties = parties | me
    ok = valid_terms(term, max_harvest, tolerance) & (proposer >= 0) & (proposer < n)
    want = when & ok
    free = pacts.status == EMPTY
    if not (unroll.slots(pacts.n_slots) and unroll.players(n_req)):
        return _propose_array(pacts, proposer, parties, term, max_harvest, tolerance, turn, when, me, ok, want, free)
    # exclusive running counts (R and P are small and static: written out, no cumsum)
    rank, seen = [], jnp.zeros((), jnp.int32)
    for r in range(n_req):
        rank.append(seen)
        seen = seen + want[r].astype(jnp.int32)
    free_rank, seen = [], jnp.zeros((), jnp.int32)
    for q in range(pacts.n_slots):
        free_rank.append(seen)
        seen = seen + free[q].astype(jnp.int32)
    n_free = seen
    store = jnp.stack([want[r] & (rank[r] < n_free) for r in range(n_req)])
    hit = jnp.stack([free & (jnp.stack(free_rank) == rank[r]) & store[r] for r in range(n_req)])  # [R, P]
    hit = materialize_mask(hit)  # read by every field: computed once

    def put(old, values):  # old [P, ...]; values [R, ...]: slot p takes the value of the request that hit it
        new = old
        for r in range(n_req):
            h = hit[r].reshape(hit.shape[1:] + (1,) * (old.ndim - 1))
            new = jnp.where(h, values[r], new)
        return new

    p = _stored(pacts, put, proposer, parties, term, max_harvest, tolerance, turn, me, when & ~ok, want & ~store)
    slots = jnp.arange(pacts.n_slots, dtype=jnp.int32)
    slot = jnp.stack([jnp.where(store[r], jnp.sum(jnp.where(hit[r], slots, 0)), -1) for r in range(n_req)])
    return _settle(p, turn), slot.astype(jnp.int32)


def _stored(pacts, put, proposer, parties, term, max_harvest, tolerance, turn, me, invalid, dropped) -> Pacts:
    """The table with each stored request written by ``put(old [P, ...], values [R, ...])``
    (the unrolled and the array form of :func:`propose_many` differ only in ``put``)."""
    n_req = proposer.shape[0]
    return Pacts(
        term=put(pacts.term, term),
        parties=put(pacts.parties, parties),
        proposer=put(pacts.proposer, proposer).astype(jnp.int32),
        accepted=put(pacts.accepted, me),
        max_harvest=put(pacts.max_harvest, max_harvest),
        tolerance=put(pacts.tolerance, tolerance),
        status=put(pacts.status, jnp.full((n_req,), PROPOSED, jnp.int32)),
        proposed_turn=put(pacts.proposed_turn, jnp.full((n_req,), turn, jnp.int32)),
        accepted_turn=pacts.accepted_turn,
        violation_count=put(pacts.violation_count, jnp.zeros((n_req,), jnp.int32)),
        dropped=pacts.dropped + jnp.sum(dropped).astype(jnp.int32),
        invalid=pacts.invalid + jnp.sum(invalid).astype(jnp.int32),
    )


def _propose_array(pacts, proposer, parties, term, max_harvest, tolerance, turn, when, me, ok, want, free):
    """:func:`propose_many` in array form (many slots or requests): the same ranks by
    cumsum, each slot taking the request that hit it by one gather (kernels/unroll.py)."""
    want_i, free_i = want.astype(jnp.int32), free.astype(jnp.int32)
    rank = jnp.cumsum(want_i) - want_i  # exclusive running counts
    free_rank = jnp.cumsum(free_i) - free_i
    store = want & (rank < jnp.sum(free_i))
    hit = materialize_mask(free[None, :] & (free_rank[None, :] == rank[:, None]) & store[:, None])  # [R, P]
    got = jnp.any(hit, axis=0)  # [P]: a request took this slot
    src = jnp.argmax(hit, axis=0)  # [P]: which one (each slot is hit at most once)

    def put(old, values):  # old [P, ...]; values [R, ...]
        return jnp.where(got.reshape(got.shape + (1,) * (old.ndim - 1)), values[src], old)

    p = _stored(pacts, put, proposer, parties, term, max_harvest, tolerance, turn, me, when & ~ok, want & ~store)
    slots = jnp.arange(pacts.n_slots, dtype=jnp.int32)
    slot = jnp.where(store, jnp.sum(jnp.where(hit, slots[None, :], 0), axis=1), -1)
    return _settle(p, turn), slot.astype(jnp.int32)


def pledge(pacts: Pacts, player: jax.Array, max_harvest: jax.Array, turn: jax.Array, when: jax.Array | bool = True):
    """003_* ``pledge(maxHarvest)``: a one-party harvest_cap pact, active on proposal."""
    n = pacts.parties.shape[-1]
    return propose(pacts, player, jnp.zeros((n,), bool), HARVEST_CAP, max_harvest, 0.0, turn, when)


def accept(pacts: Pacts, slot: jax.Array, player: jax.Array, turn: jax.Array, when: jax.Array | bool = True) -> Pacts:
    """Record ``player``'s acceptance of a proposed pact it is a party to (else a no-op).

    The pact becomes active, with ``accepted_turn = turn``, once every party has accepted.
    """
    return accept_mask(
        pacts,
        (jnp.arange(pacts.n_slots) == slot)[:, None]
        & (jnp.arange(pacts.parties.shape[-1]) == player)[None, :]
        & jnp.asarray(when, bool),
        turn,
    )


def accept_mask(pacts: Pacts, acc: jax.Array, turn: jax.Array) -> Pacts:
    """Many acceptances at once: acc bool[P, N] (player n accepts slot p)."""
    acc = acc & pacts.parties & (pacts.status == PROPOSED)[:, None]
    return _settle(eqx.tree_at(lambda q: q.accepted, pacts, pacts.accepted | acc), turn)


def reject(pacts: Pacts, slot: jax.Array, player: jax.Array, when: jax.Array | bool = True) -> Pacts:
    """A party's rejection of a proposed pact makes it ``rejected`` (binding no one)."""
    return reject_mask(
        pacts,
        (jnp.arange(pacts.n_slots) == slot)[:, None]
        & (jnp.arange(pacts.parties.shape[-1]) == player)[None, :]
        & jnp.asarray(when, bool),
    )


def reject_mask(pacts: Pacts, rej: jax.Array) -> Pacts:
    """Many rejections at once: rej bool[P, N]. Only proposed pacts can be rejected."""
    hit = jnp.any(rej & pacts.parties, axis=-1) & (pacts.status == PROPOSED)
    return eqx.tree_at(lambda q: q.status, pacts, jnp.where(hit, REJECTED, pacts.status))


def impose(pacts: Pacts, slot: int, max_harvest: jax.Array, turn: jax.Array, put: jax.Array, lift: jax.Array) -> Pacts:
    """A regulator's reserved slot (static ``slot``, parties: everyone): ``put`` makes it an
    active harvest cap of ``max_harvest`` from ``turn`` (violations counted afresh), ``lift``
    makes it inactive, neither leaves it (kernels/governance_agent.py)."""
    at = lambda arr, v: arr.at[slot].set(jnp.where(put, v, arr[slot]))  # noqa: E731
    status = jnp.where(put, ACTIVE, jnp.where(lift, INACTIVE, pacts.status[slot]))
    return eqx.tree_at(
        lambda q: (q.status, q.max_harvest, q.proposed_turn, q.accepted_turn, q.violation_count),
        pacts,
        (
            pacts.status.at[slot].set(status),
            at(pacts.max_harvest, max_harvest.astype(pacts.max_harvest.dtype)),
            at(pacts.proposed_turn, turn),
            at(pacts.accepted_turn, turn),
            at(pacts.violation_count, jnp.int32(0)),
        ),
    )


def binding(pacts: Pacts) -> jax.Array:
    """bool[P, N]: player n is bound by slot p (an active pact it is a party to)."""
    return pacts.parties & (pacts.status == ACTIVE)[:, None]


def limits(pacts: Pacts, ctx: TurnContext) -> jax.Array:
    """float[P]: each slot's limit under its own term type (a select over the registry).
    Computed once per arena and slot, and kept in memory (kernels/barrier.py), so the
    per-(slot, player) consumers only compare: evaluated inside them, XLA:CPU redid the
    select for every player."""
    lim = jnp.zeros(pacts.max_harvest.shape, pacts.max_harvest.dtype)
    for code, name in enumerate(term_names()):
        lim = jnp.where(
            pacts.term == code, jnp.broadcast_to(term_type(name).limit(pacts, ctx), lim.shape).astype(lim.dtype), lim
        )
    return materialize(lim)


def check(pacts: Pacts, actual: jax.Array, playing: jax.Array) -> tuple[Pacts, jax.Array]:
    """End-of-turn violation check (001_* 'Violation checking').

    actual: float[N] actual harvests; playing: bool[N] players whose decision counts this
    turn (groupMean is over them; parties not playing are skipped). Returns (pacts with
    ``violation_count`` updated, violated bool[P, N]): one event per (pact, party).
    """
    dt = actual.dtype
    n_play = jnp.sum(playing)
    mean = jnp.sum(jnp.where(playing, actual, 0.0)) / jnp.maximum(n_play, 1).astype(dt)
    lim = limits(pacts, TurnContext(group_mean=mean))
    bind = binding(pacts)
    n = actual.shape[0]
    if not (unroll.players(n) and unroll.slots(pacts.n_slots)):  # array form (kernels/unroll.py)
        violated = (actual[None, :] > lim[:, None] + EPS) & bind & playing[None, :]
        counted = pacts.violation_count + jnp.sum(violated, axis=1, dtype=jnp.int32)
        return eqx.tree_at(lambda q: q.violation_count, pacts, counted.astype(jnp.int32)), violated
    # one value per (slot, player): under vmap each is contiguous over the batch
    rows = [[(actual[i] > lim[p] + EPS) & bind[p, i] & playing[i] for i in range(n)] for p in range(pacts.n_slots)]
    counted = pacts.violation_count + jnp.stack([sum(r[1:], r[0].astype(jnp.int32)) for r in rows]).astype(jnp.int32)
    violated = jnp.stack([jnp.stack(r) for r in rows])
    return eqx.tree_at(lambda q: q.violation_count, pacts, counted), violated


def caps(pacts: Pacts, last_mean: jax.Array, has_last: jax.Array) -> list[jax.Array] | jax.Array:
    """float[] per player: the harvest a complying player may take under its active pacts
    (inf if none): the least limit of the pacts binding it, on last turn's context (this
    turn's group mean is unknown when deciding). Without a last turn the group mean is taken
    as +inf, which leaves no_aggression unbounded and harvest_cap at maxHarvest. One value
    per player, so that under vmap each is contiguous over the batch (XLA:CPU vectorises
    those; bench/README.md, "Governance benchmark"). Many players: float[N]
    (kernels/unroll.py); many slots: the least limit by one reduction (min is exact)."""
    mean = jnp.where(has_last, last_mean, jnp.inf)
    lim = limits(pacts, TurnContext(group_mean=mean))
    bind = binding(pacts)
    n = pacts.parties.shape[-1]
    if not (unroll.players(n) and unroll.slots(pacts.n_slots)):
        cap = jnp.min(jnp.where(bind, lim[:, None], jnp.inf), axis=0, initial=jnp.inf)
        return [cap[i] for i in range(n)] if unroll.players(n) else cap
    out = []
    for i in range(pacts.parties.shape[-1]):
        cap = jnp.full((), jnp.inf, lim.dtype)
        for p in range(pacts.n_slots):
            cap = jnp.where(bind[p, i], jnp.minimum(cap, lim[p]), cap)
        out.append(cap)
    return out
