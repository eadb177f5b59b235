"""Sanctions: perturbations with a ``pact_violation`` trigger (000_* section 2.4).

``sanction`` (constant ``amount``) and ``sanction_graduated`` (``ladder``) are one kernel:
a constant amount is a ladder of length 1. The k-th violation of a (player, termType)
costs ``ladder[min(k - 1, len - 1)]`` (the last entry sticks). Sanctions fire once per
violation (no fired-once dedup); several specs may be active at once and each one whose
trigger matches fires. Ladders are padded to a static width with a dynamic ``length``, so
a sweep over ladder values and lengths compiles once.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

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
    return SanctionParams(jnp.zeros((0,), bool), jnp.zeros((0,), jnp.int32), jnp.zeros((0, 1), dt), jnp.ones((0,), jnp.int32))


def ordinals(prior: jax.Array, violated: jax.Array, term: jax.Array, n_terms: int) -> tuple[jax.Array, jax.Array]:
    """Violation ordinals of this turn's events.

    prior: int32[T, N] violations counted so far per (termType, player); violated: bool[P, N];
    term: int32[P]. Simultaneous violations of one (player, termType) are numbered in slot
    order. Returns (k int32[P, N] the 1-based ordinal of each event (0 where none), the
    updated counts int32[T, N]).
    """
    onehot = (term[:, None] == jnp.arange(n_terms)[None, :])  # [P, T]
    by_term = onehot[:, :, None] & violated[:, None, :]  # [P, T, N]
    cum = jnp.cumsum(by_term.astype(jnp.int32), axis=0)  # inclusive, [P, T, N]
    k_all = prior[None, :, :] + cum
    k = jnp.sum(jnp.where(onehot[:, :, None], k_all, 0), axis=1)
    k = jnp.where(violated, k, 0)
    return k.astype(jnp.int32), (prior + jnp.sum(by_term, axis=0)).astype(jnp.int32)


def amounts(sp: SanctionParams, k: jax.Array, violated: jax.Array, term: jax.Array):
    """Sanctions fired by this turn's violations.

    Returns (amount float[N] total deducted per player, fired int32[N] sanctions fired per
    player, per_spec float[K, N] amount per spec and player).
    """
    n = violated.shape[-1]
    if sp.ladder.shape[0] == 0:  # no sanction spec (pacts or talk alone): nothing fires
        dt = sp.ladder.dtype
        return jnp.zeros((n,), dt), jnp.zeros((n,), jnp.int32), jnp.zeros((0, n), dt)
    width = sp.ladder.shape[-1]
    idx = jnp.clip(jnp.minimum(k - 1, sp.length[:, None, None] - 1), 0, width - 1)  # [K, P, N]
    lad = jnp.take_along_axis(sp.ladder[:, None, :], idx.reshape(idx.shape[0], 1, -1), axis=-1).reshape(idx.shape)
    match = sp.active[:, None] & ((sp.term[:, None] == ANY_TERM) | (sp.term[:, None] == term[None, :]))  # [K, P]
    fire = match[:, :, None] & violated[None, :, :]  # [K, P, N]
    per_spec = jnp.sum(jnp.where(fire, lad, 0.0), axis=1)
    fired = jnp.sum(fire, axis=(0, 1)).astype(jnp.int32)
    return jnp.sum(per_spec, axis=0), fired, per_spec
