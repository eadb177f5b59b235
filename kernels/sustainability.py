"""The sustainability threshold and the running totals GovSim's metrics read.

f(stock) is each engine's (``Engine.sustainability_threshold``): the largest total harvest
after which its regrowth restores the stock. A player's share of it, the observation
variable ``sustainabilityThreshold`` and the line GovSim's over-usage counts against, is
f / N, or (floor f) // N in whole units (GovSim's (h // 2) // N). Written once, here.

N, when some player joins late (``activeFrom`` > 1; :func:`acting`), is ``thresholdPlayers``'s
count (docs/semantics/game.md §19): ``configured`` (GovSim's code: every player slot in turn
1, its literal 10, then the players acting from turn 1, the agent count its ``reset()`` fixed
and the newcomer's arrival never updates), ``present`` (the players acting this turn) or
``all`` (every slot). With every player acting from turn 1 the three agree.
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .metrics import over_share


class Tally(eqx.Module):
    """Per-arena totals kept every turn, so every run (with or without history, thinned or
    streamed) gets GovSim's metrics and the project's ex-post over-usage from its state."""

    gains: jax.Array  # float[N], each player's total catch (what it received, never wealth)
    over: jax.Array  # int32[], (player, turn) catches above the per-player threshold
    share_over: jax.Array  # int32[N], turns with a catch over the ex-post share regen / N (share defined)
    share_judged: jax.Array  # int32[], turns with a defined share: ex_post_over_usage's denominator


def init_tally(n_players: int, dtype) -> Tally:
    zero = jnp.zeros((), jnp.int32)
    return Tally(
        gains=jnp.zeros((n_players,), dtype),
        over=zero,
        share_over=jnp.zeros((n_players,), jnp.int32),
        share_judged=zero,
    )


#: ``model.thresholdPlayers``, by its index in params.threshold_players
THRESHOLD_PLAYERS: tuple[str, ...] = ("configured", "present", "all")


def acting(active_from, turn):
    """bool[N]: the players who act in ``turn`` (1-based): turn >= activeFrom. Plain operators:
    the live host asks a player only from that turn, by this rule on numpy arrays."""
    return turn >= active_from


def threshold_players(params, turn, n_players: int) -> jax.Array:
    """int32[]: the count the threshold of ``turn`` divides by (``model.thresholdPlayers``)."""
    present = jnp.sum(acting(params.players.active_from, turn).astype(jnp.int32))
    configured = jnp.sum(acting(params.players.active_from, 1).astype(jnp.int32))
    configured = jnp.where(jnp.asarray(turn) <= 1, n_players, configured)
    mode = params.threshold_players
    n = jnp.where(mode == 0, configured, jnp.where(mode == 1, present, n_players))
    return jnp.maximum(n, 1)


def per_player(f: jax.Array, n_players, whole_units: jax.Array) -> jax.Array:
    """A player's share of the threshold ``f``: f / N, or floor(floor(f) / N) in whole units."""
    n = jnp.asarray(n_players, f.dtype)
    return jnp.where(whole_units, jnp.floor(jnp.floor(f) / n), f / n)


def threshold_now(game, engine_state, params, turn) -> jax.Array:
    """The per-player sustainability threshold of ``turn`` (1-based) at ``engine_state``
    (float[]; NaN where the engine defines none). ``params``: the arena's (effective) Params."""
    f = game.engine.sustainability_threshold(game.engine.stock(engine_state), params.engine)
    return per_player(f, threshold_players(params, turn, game.n_players), params.whole_units)


def f0(game, params) -> jax.Array:
    """GovSim's f(0): the total threshold at the initial stock (floored in whole units)."""
    eng = game.engine
    f = eng.sustainability_threshold(eng.stock(eng.init(params.engine)), params.engine)
    return jnp.where(params.whole_units, jnp.floor(f), f)


def add(
    tally: Tally, actual: jax.Array, threshold: jax.Array, regen: jax.Array, share_defined: jax.Array, live: jax.Array
) -> Tally:
    """One turn's catches (float[N]) against the threshold from the stock before the harvest,
    the collapse turn counted (GovSim's over-usage), and against the ex-post share regen / N
    on turns where that share is defined (kernels/metrics.py's rule)."""
    over = jnp.sum((actual > threshold) & live).astype(jnp.int32)
    judged = share_defined & live
    share_over = judged & over_share(actual, regen, actual.shape[0])
    return Tally(
        gains=tally.gains + jnp.where(live, actual, 0.0),
        over=tally.over + over,
        share_over=tally.share_over + share_over.astype(jnp.int32),
        share_judged=tally.share_judged + judged.astype(jnp.int32),
    )
