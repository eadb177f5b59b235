"""Per-arena outcome columns, from an arena's final state: GovSim's (Piatti et al. 2024,
"Cooperate or Collapse", §2.4) and the project's own, written once for one arena and batched
at the edge, so ``simulate``, sweeps and the live report give the same numbers.

Everything is read from the kernel's running totals (kernels/sustainability.py ``Tally``),
never from the records, so a run with or without history has the same outcomes. With m the
turns played (the collapse turn, else the run's length T; a collapse on the last turn counts
as T) and R_i each player's total catch:

- ``govsim_survival_time`` m; ``govsim_survived`` m == T (GovSim's survival rate);
- ``govsim_total_gain`` sum_i R_i; ``govsim_gain`` its mean over players (the paper's Gain);
- ``govsim_efficiency`` min(1, sum_i R_i / (T f(0))), f(0) the engine's threshold at the
  initial stock; NaN where f(0) is not a positive number;
- ``govsim_equality`` 1 - Gini(R); NaN when every R_i is 0 (GovSim's 0/0);
- ``govsim_over_usage`` (player, turn) catches above the per-player threshold, over N m; NaN
  where the engine defines no threshold.

The project's: ``survival_time`` m, ``total_gain`` sum_i R_i, ``efficiency`` against the
engine's maximum sustainable yield (r K / 4 for logistic; NaN without one), ``equality``
1 - Gini (1 when nobody caught anything) and ``ex_post_over_usage`` (catches above the share
regen / N measured after the harvest, over the turns where that share is defined; NaN when
none was). ``ranks``: 1 = richest, ties share the better rank.

Computed in the run's float (float32 unless x64 is on), inside the program that ran the
turns: the host only copies them into frames.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .metrics import gini, sum_players
from .sustainability import Tally


def efficiency(total: jax.Array, max_turns: jax.Array, per_turn: jax.Array) -> jax.Array:
    """``min(1, total / (max_turns x per_turn))``; NaN where ``per_turn`` is not a positive number."""
    ok = jnp.isfinite(per_turn) & (per_turn > 0)
    eff = jnp.minimum(1.0, total / (max_turns.astype(total.dtype) * jnp.where(ok, per_turn, 1.0)))
    return jnp.where(ok, eff, jnp.nan)


#: ``model.metricPlayers``, by its index in params.metric_players
METRIC_PLAYERS: tuple[str, ...] = ("present", "all")


def _gini_of(gains: jax.Array, present: jax.Array, n_present: jax.Array) -> jax.Array:
    """Gini of the present players' gains (pairwise form; 0 when their total is 0)."""
    x = jnp.where(present, jnp.maximum(gains, 0.0), 0.0)
    pair = present[:, None] & present[None, :]
    diff = jnp.sum(jnp.where(pair, jnp.abs(x[:, None] - x[None, :]), 0.0))
    tot = jnp.sum(x)
    return jnp.where(tot > 0, diff / (2 * n_present.astype(x.dtype) * jnp.where(tot > 0, tot, 1.0)), 0.0)


def outcomes(
    tally: Tally,
    turns_played: jax.Array,
    max_turns: jax.Array,
    max_yield: jax.Array,
    f0: jax.Array,
    params=None,
    collapsed: jax.Array | None = None,
) -> dict[str, jax.Array]:
    """One arena's outcome columns by name. tally: gains float[N], over int32[], share_over
    int32[N], share_judged int32[]; turns_played, max_turns: int32[]; max_yield (the engine's
    maximum sustainable yield) and f0 (GovSim's f(0)): float[] of the gains' dtype.

    params (the arena's Params) and collapsed (bool[]) give GovSim's reading of late joiners
    and of its analysis (docs/semantics/game.md §19): with ``metricPlayers`` "present" the
    gain, equality and over-usage are over the players present in the log (activeFrom <= m;
    over-usage over the player-months they acted), and with a ``survivalHorizon`` H a run
    that never collapses has survival time min(H, m) and a run survives unless it collapsed
    before month H. Without them: every player, and H = the run's length."""
    gains = tally.gains
    dt = gains.dtype
    n = gains.shape[0]
    m = turns_played.astype(jnp.int32)
    total = sum_players(gains, 0, jnp)
    nan = jnp.asarray(jnp.nan, dt)
    judged = tally.share_judged
    ex_post = sum_players(tally.share_over, 0, jnp).astype(dt) / (n * jnp.maximum(judged, 1)).astype(dt)
    equal_all = 1.0 - gini(gains, axis=0, xp=jnp)
    gain, equal = total / n, equal_all
    player_months = n * jnp.maximum(m, 1)
    survival, survived = m, m >= max_turns
    if params is not None:
        start = params.players.active_from
        every = params.metric_players == 1
        present = every | (start <= m)
        n_present = jnp.maximum(jnp.sum(present.astype(jnp.int32)), 1)
        gain = total / n_present.astype(dt)
        equal = jnp.where(jnp.all(present), equal_all, 1.0 - _gini_of(gains, present, n_present))
        acted = jnp.sum(jnp.maximum(m - start + 1, 0))
        player_months = jnp.where(every, player_months, jnp.maximum(acted, 1))
        h = params.survival_horizon
        horizon = jnp.where(h > 0, h, max_turns)
        ended = jnp.zeros((), bool) if collapsed is None else collapsed
        survival = jnp.where(~ended & (h > 0), jnp.minimum(h, m), m)
        survived = jnp.where(ended, m >= horizon, m >= jnp.minimum(horizon, max_turns))
    over_usage = tally.over.astype(dt) / jnp.asarray(player_months).astype(dt)
    return {
        "govsim_survival_time": survival,
        "govsim_survived": survived,
        "govsim_total_gain": total,
        "govsim_gain": gain,
        "govsim_efficiency": efficiency(total, max_turns, jnp.asarray(f0, dt)),
        "govsim_equality": jnp.where(total > 0, equal, nan),
        "govsim_over_usage": jnp.where(jnp.isfinite(f0) & (m > 0), over_usage, nan),
        "survival_time": m,
        "total_gain": total,
        "efficiency": efficiency(total, max_turns, jnp.asarray(max_yield, dt)),
        "equality": equal_all,
        "ex_post_over_usage": jnp.where(judged > 0, ex_post, nan),
    }


def ranks(wealth: jax.Array) -> jax.Array:
    """wealth float[N] -> int32[N]: 1 + how many players are richer (1 = richest; ties share
    the better rank)."""
    return 1 + jnp.sum(wealth[None, :] > wealth[:, None], axis=1, dtype=jnp.int32)
