"""The observability layer: what each player sees of the true state.

Per variable (``params.OBS_VARS``): ``visible`` (hidden values are NaN, the kernels' "null"),
``noise`` (zero-mean Gaussian with std = noise x |true value|, drawn per player and element),
and ``resolution``: exact, qualitative (three buckets of the value relative to the engine's
reference stock, reported as the bucket's midpoint so that numeric policies stay meaningful)
or sign (the sign of the true change since last turn plus the reading's noise, -1/0/+1; 0 on
turn 1). Noisy values of quantities that cannot be negative are clamped at 0.
"""

from __future__ import annotations

from typing import TypeVar

import jax
import jax.numpy as jnp

from . import rng
from .params import (
    ENV_VARS,
    EXACT,
    NOISE_STREAM,
    OBS_VARS,
    PEER_VARS,
    PLAYER_VARS,
    QUALITATIVE,
    SIGN,
    Params,
    farr,
    fdtype,
)
from .state import ArenaState
from .sustainability import acting, threshold_now

Wealth = TypeVar("Wealth", jax.Array, float)  # capacity() serves kernels and the host's float checks alike

QUALITATIVE_VARS: tuple[str, ...] = ("commonsStock", "commonsRatio", "capitalStock", "pollutionLevel")
SIGN_VARS: tuple[str, ...] = ENV_VARS
# Bucket edges and reported midpoints, as fractions of the reference (the conservative tiers).
_EDGES = (0.4, 0.6)
_MIDS = (0.2, 0.5, 0.8)


def capacity(wealth: Wealth) -> Wealth:
    """capacity(w) = 1 + 0.05 w, the wealth-scaled harvest capacity of Table A.3."""
    return 1.0 + 0.05 * wealth


def env_values(game, state: ArenaState, params: Params) -> jax.Array:
    """True values of the environment variables, float[len(ENV_VARS)]; NaN where undefined."""
    eng = game.engine.extra_observations(state.engine, params.engine)
    turn = state.turn + 1
    vals = []
    for name in ENV_VARS:
        if name == "nPlayers":  # the players acting this turn (all of them unless some join late)
            vals.append(farr(jnp.sum(acting(params.players.active_from, turn).astype(jnp.int32))))
        elif name == "turn":
            vals.append(farr(state.turn + 1))
        elif name == "sustainabilityThreshold":  # every engine's f, one rule (kernels/sustainability.py)
            vals.append(farr(threshold_now(game, state.engine, params, turn)))
        else:
            vals.append(farr(eng.get(name, jnp.nan)))
    return jnp.stack(vals)


def prev_values(game, state: ArenaState, params: Params) -> jax.Array:
    """What ``sign`` resolution compares against next turn: the true environment values
    (float[len(ENV_VARS)]) when some variable is read by its sign, else float[0] (a static
    choice: nothing to remember, so nothing to carry and select each turn)."""
    if SIGN not in dict(game.resolution).values():
        return jnp.zeros((0,), fdtype())
    return env_values(game, state, params)


def _resolve(noisy, scale):
    """``qualitative``: the midpoint of the reading's bucket (fractions of ``scale``)."""
    q = noisy / jnp.maximum(scale, jnp.finfo(noisy.dtype).tiny)
    mid = jnp.where(q <= _EDGES[0], _MIDS[0], jnp.where(q <= _EDGES[1], _MIDS[1], _MIDS[2]))
    return mid * scale


def _shape(game, name: str) -> tuple[int, ...]:
    return (game.n_players,) if name in PEER_VARS else ()


def _noise(game, key, turn, player, name: str, draws: dict | None = None) -> jax.Array:
    shape = _shape(game, name)
    if name not in game.noisy:  # static: exact reading, no draw
        return jnp.zeros(shape, fdtype())
    if draws is not None:
        return draws[name]
    return rng.normal(key, turn, player, rng.obs_purpose(NOISE_STREAM[name]), shape, game.generator)


def noise_draws(game, key: jax.Array, turn: jax.Array) -> dict:
    """The standard normal draws of every noisy variable at ``turn`` for every player:
    name -> float[N] (float[N, N] for peer variables). The same numbers ``observe`` draws
    itself; the rollout draws them one turn ahead and carries them (see kernels/rollout.py)."""
    players = jnp.arange(game.n_players)
    return {
        name: jax.vmap(
            lambda p, name=name: rng.normal(
                key, turn, p, rng.obs_purpose(NOISE_STREAM[name]), _shape(game, name), game.generator
            )
        )(players)
        for name in OBS_VARS
        if name in game.noisy
    }


def observe_player(
    game, key, state: ArenaState, params: Params, env: jax.Array, player, draws: dict | None = None
) -> dict:
    """The observation of one player: name -> float[] (or float[N] for peer variables).

    Each variable draws its noise from its own stream, so variables no policy reads cost
    nothing (XLA removes the unused draws). ``draws`` (this player's row of
    :func:`noise_draws` for this turn) replaces the draws by the same numbers computed ahead.
    """
    n = game.n_players
    op = params.obs
    turn = state.turn + 1
    ref = game.engine.reference(state.engine, params.engine)
    obs = {}
    for i, name in enumerate(ENV_VARS):
        v = env[i]
        err = op.noise[i] * jnp.abs(v) * _noise(game, key, turn, player, name, draws)
        code = dict(game.resolution).get(name, EXACT)
        if code == SIGN:  # the true change, then noised (docs/semantics.md §4); 0 on turn 1
            noisy = jnp.where(turn > 1, jnp.sign(v - state.prev_env[i] + err), 0.0)
        else:
            noisy = jnp.maximum(v + err, 0.0)
        if code == QUALITATIVE:
            scale = ref if name in ("commonsStock", "capitalStock", "pollutionLevel") else farr(1.0)
            noisy = _resolve(noisy, scale)
        obs[name] = jnp.where(op.visible[i], noisy, jnp.nan)
    w = state.wealth[player]
    own = {"myWealth": w, "myCapacity": capacity(w) * game.engine.harvest_unit(params.engine)}  # stock units
    for name in PLAYER_VARS:
        i = OBS_VARS.index(name)
        v = own[name]
        noisy = jnp.maximum(v + op.noise[i] * jnp.abs(v) * _noise(game, key, turn, player, name, draws), 0.0)
        obs[name] = jnp.where(op.visible[i], noisy, jnp.nan)
    peers = {"othersWealth": state.wealth, "othersHarvest": state.last_actual}
    not_me = jnp.arange(n) != player
    # othersHarvest is last turn's: on turn 1 there is none (null, not 0)
    known = {"othersWealth": True, "othersHarvest": turn > 1}
    for name in PEER_VARS:
        i = OBS_VARS.index(name)
        v = peers[name]
        noisy = jnp.maximum(v + op.noise[i] * jnp.abs(v) * _noise(game, key, turn, player, name, draws), 0.0)
        obs[name] = jnp.where(op.visible[i] & not_me & known[name], noisy, jnp.nan)
    return obs


def observe(game, key, state: ArenaState, params: Params, draws: dict | None = None) -> dict:
    """Observations of all players: name -> float[N] (float[N, N] for peer variables)."""
    env = env_values(game, state, params)
    players = jnp.arange(game.n_players)
    if draws is None:
        return jax.vmap(lambda p: observe_player(game, key, state, params, env, p))(players)
    return jax.vmap(lambda p, z: observe_player(game, key, state, params, env, p, z))(players, draws)


__all__ = [
    "observe",
    "observe_player",
    "noise_draws",
    "prev_values",
    "env_values",
    "capacity",
    "QUALITATIVE_VARS",
    "SIGN_VARS",
    "EXACT",
]
