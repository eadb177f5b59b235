"""Sanctions: perturbations with a ``pact_violation`` trigger (000_* section 2.4).

``sanction`` (constant ``amount``) and ``sanction_graduated`` (``ladder``) are one kernel:
a constant amount is a ladder of length 1. The k-th violation of a (player, termType)
costs ``ladder[min(k - 1, len - 1)]`` (the last entry sticks). Sanctions fire once per
violation (no fired-once dedup); several specs may be active at once and each one whose
trigger matches fires. Ladders are padded to a static width with a dynamic ``length``, so
a sweep over ladder values and lengths compiles once.
"""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp

from . import unroll

ANY_TERM = -1  # trigger without termType: fires on every term type


class SanctionParams(eqx.Module):
    """K sanction specs (static count), ladders padded to width L (static)."""

    active: jax.Array  # bool[K], False = padding / switched off
    term: jax.Array  # int32[K], term type code the trigger watches, ANY_TERM for all
    ladder: jax.Array  # float[K, L], amounts by violation ordinal
    length: jax.Array  # int32[K], entries of the ladder in use (>= 1)


def none(dtype=None) -> SanctionParams:
    """No sanction spec (K = 0)."""
    dt = dtype or jnp.result_type(float)
    return SanctionParams(
        jnp.zeros((0,), bool), jnp.zeros((0,), jnp.int32), jnp.zeros((0, 1), dt), jnp.ones((0,), jnp.int32)
    )


def ordinals(prior: jax.Array, violated: jax.Array, term: jax.Array, n_terms: int) -> tuple[jax.Array, jax.Array]:
    """Violation ordinals of this turn's events.

    prior: int32[T, N] violations counted so far per (termType, player); violated: bool[P, N];
    term: int32[P]. Simultaneous violations of one (player, termType) are numbered in slot
    order. Returns (k int32[P, N] the 1-based ordinal of each event (0 where none), the
    updated counts int32[T, N]). Running counters slot by slot (P is static and small): a
    cumsum over slots lowers to a reduce-window that XLA:CPU runs slowly.
    """
    if not unroll.slots(violated.shape[0]):  # many slots: running counts by cumsum (kernels/unroll.py)
        prior = table(prior)
        k = jnp.zeros(violated.shape, jnp.int32)
        count = []
        for t in range(n_terms):
            is_t = term == t
            run = prior[t][None, :] + jnp.cumsum((violated & is_t[:, None]).astype(jnp.int32), axis=0)
            k = jnp.where(is_t[:, None], run, k)
            count.append(run[-1])
        return jnp.where(violated, k, 0).astype(jnp.int32), jnp.stack(count).astype(jnp.int32)
    count = [prior[t] for t in range(n_terms)]
    ks = []
    for p in range(violated.shape[0]):
        v = violated[p]
        k = jnp.zeros(v.shape, jnp.int32)
        for t in range(n_terms):
            is_t = term[p] == t
            count[t] = count[t] + (v & is_t).astype(jnp.int32)
            k = jnp.where(is_t, count[t], k)
        ks.append(jnp.where(v, k, 0))
    return jnp.stack(ks).astype(jnp.int32), jnp.stack(count).astype(jnp.int32)


Table = Sequence[Sequence[jax.Array]]  # [T][N] of int32[]: one value per (termType, player)


def table(rows: Table | jax.Array) -> jax.Array:
    """A [T][N] table of scalars as an int32[T, N] array (an array is returned as it is)."""
    if not isinstance(rows, (list, tuple)):
        return jnp.asarray(rows, jnp.int32)
    return jnp.stack([jnp.stack(list(r)) for r in rows]).astype(jnp.int32)


def counts(violated: jax.Array, term: jax.Array, n_terms: int) -> list[list[jax.Array]] | jax.Array:
    """This turn's violations per (termType, player): [T][N] of int32[] (:func:`table` makes
    the array). violated: bool[P, N]. One value per pair rather than a [T, N] array: under
    vmap each is contiguous over the batch, and the governance state keeps them so
    (bench/README.md, "Governance benchmark"). Many players: the int32[T, N] array; many slots: the
    sum over slots as one reduction (kernels/unroll.py)."""
    n_slots, n = violated.shape
    if not (unroll.players(n) and unroll.slots(n_slots)):
        is_t = term[None, :] == jnp.arange(n_terms, dtype=term.dtype)[:, None]  # [T, P]
        arr = jnp.sum(violated[None, :, :] & is_t[:, :, None], axis=1, dtype=jnp.int32)
        return [[arr[t, i] for i in range(n)] for t in range(n_terms)] if unroll.players(n) else arr
    return [
        [
            sum(
                ((violated[p, i] & (term[p] == t)).astype(jnp.int32) for p in range(violated.shape[0])),
                jnp.zeros((), jnp.int32),
            )
            for i in range(violated.shape[1])
        ]
        for t in range(n_terms)
    ]


def ladder_sum(ladder: jax.Array, length: jax.Array, before: jax.Array, m: jax.Array) -> jax.Array:
    """sum over j < m of ladder[min(before + j, length - 1)]: what m violations cost after
    ``before`` earlier ones (the ordinals before + 1 ... before + m). Interior rungs are
    taken once each; the sticking last rung is charged once per violation that reaches it,
    as (count x amount). ladder float[L]; length int[]; before, m int[N] -> float[N]."""
    width = ladder.shape[-1]
    last = jnp.clip(length - 1, 0, width - 1)
    total = jnp.zeros(m.shape, ladder.dtype)
    for r in range(width - 1):
        inside = (r < last) & (before <= r) & (r < before + m)
        total = total + jnp.where(inside, ladder[r], 0.0)
    at_last = jnp.maximum(m - jnp.maximum(last - before, 0), 0)
    top = ladder[0]
    for r in range(1, width):  # ladder[last] by a select over the static width
        top = jnp.where(last == r, ladder[r], top)
    return total + at_last.astype(ladder.dtype) * top


def amounts(sp: SanctionParams, prior: Table | jax.Array, count: Table | jax.Array):
    """Sanctions fired by this turn's violations.

    prior: [T][N] violations of each (termType, player) before this turn; count: [T][N]
    this turn's (:func:`counts`); int32[T, N] arrays serve as well. Every spec whose trigger matches a term type
    fires once per violation of it, the k-th violation costing ``ladder[min(k - 1, len - 1)]``.
    Returns (amount float[N] total deducted per player, fired int32[N] sanctions fired per
    player, per_spec float[K, N] amount per spec and player). Per (spec, termType) rather
    than per event: a few operations per player instead of a ladder lookup per (slot,
    player), the bulk of the governance layer's cost (bench/README.md).
    """
    n = len(count[0])
    dt = sp.ladder.dtype
    k_specs = sp.ladder.shape[0]
    if k_specs == 0:  # no sanction spec (pacts or talk alone): nothing fires
        return jnp.zeros((n,), dt), jnp.zeros((n,), jnp.int32), jnp.zeros((0, n), dt)
    if not unroll.players(n):  # many players: the same sums over [N] arrays (kernels/unroll.py)
        prior, count = table(prior), table(count)
        spec_rows = []
        fired_all = jnp.zeros((n,), jnp.int32)
        for s in range(k_specs):
            row = jnp.zeros((n,), dt)
            for t in range(count.shape[0]):
                match = sp.active[s] & ((sp.term[s] == ANY_TERM) | (sp.term[s] == t))
                m = jnp.where(match, count[t], 0)
                row = row + ladder_sum(sp.ladder[s], sp.length[s], prior[t], m)
                fired_all = fired_all + m
            spec_rows.append(row)
        total = spec_rows[0]
        for row in spec_rows[1:]:
            total = total + row
        return total, fired_all, jnp.stack(spec_rows)
    per_spec = [[jnp.zeros((), dt)] * n for _ in range(k_specs)]
    fired = [jnp.zeros((), jnp.int32)] * n
    for s in range(k_specs):
        for t in range(len(count)):
            match = sp.active[s] & ((sp.term[s] == ANY_TERM) | (sp.term[s] == t))
            for i in range(n):  # player by player: contiguous over the batch under vmap
                m = jnp.where(match, count[t][i], 0)
                per_spec[s][i] = per_spec[s][i] + ladder_sum(sp.ladder[s], sp.length[s], prior[t][i], m)
                fired[i] = fired[i] + m
    amount = []
    for i in range(n):
        a = per_spec[0][i]
        for s in range(1, k_specs):
            a = a + per_spec[s][i]
        amount.append(a)
    return jnp.stack(amount), jnp.stack(fired), jnp.stack([jnp.stack(row) for row in per_spec])


def event_amounts(sp: SanctionParams, k: jax.Array, term: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Provenance of this turn's sanctions, one entry per (spec, violation event): (fired
    bool[K, P, N] spec s fired on the event (slot p, player n), amount float[K, P, N] what
    it charged, 0 where it did not fire). k: int32[P, N] the events' ordinals (0 = no
    event, :func:`ordinals`); term: int32[P]. Summed over specs and slots it is the
    ``amounts`` total per player (the same ordinals, charged one by one). For the turn
    record only: a run without history never computes it."""
    width = sp.ladder.shape[-1]
    match = sp.active[:, None] & ((sp.term[:, None] == ANY_TERM) | (sp.term[:, None] == term[None, :]))  # [K, P]
    fired = match[:, :, None] & (k > 0)[None, :, :]
    rung = jnp.clip(jnp.minimum(k[None, :, :] - 1, sp.length[:, None, None] - 1), 0, width - 1)  # [K, P, N]
    flat = rung.reshape(rung.shape[0], 1, rung.shape[1] * rung.shape[2])
    amount = jnp.take_along_axis(sp.ladder[:, None, :], flat, axis=-1).reshape(rung.shape)
    return fired, jnp.where(fired, amount, 0.0)
