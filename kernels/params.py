"""The params pytree of one arena: every number a user may sweep, as a dynamic leaf.

Counts (players, strategies, memory size) and choices of code path (engine, scheduler,
generator) are static and live on :class:`bdpd_jax.kernels.game.Game`; everything here is an
array, so ``jax.vmap`` over a batch of params sweeps values with one compiled program.
"""

from __future__ import annotations

from typing import Any, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

# Observation variables, in the fixed order of the ObsParams arrays. Engine-specific ones
# (capitalStock, ...) are simply never visible on an engine that does not produce them.
ENV_VARS: tuple[str, ...] = (
    "commonsStock",
    "regenRate",
    "commonsCapacity",
    "threshold",
    "commonsRatio",
    "capitalStock",
    "pollutionLevel",
    "nPlayers",
    "turn",
    "sustainabilityThreshold",
)
PLAYER_VARS: tuple[str, ...] = ("myWealth", "myCapacity")
PEER_VARS: tuple[str, ...] = ("othersWealth", "othersHarvest")
OBS_VARS: tuple[str, ...] = ENV_VARS + PLAYER_VARS + PEER_VARS
OWN_VARS: tuple[str, ...] = PLAYER_VARS + ("turn",)  # visible by default: a player knows these
# Each variable's noise stream (kernels/rng.py obs_purpose): its place in the order variables
# were added, so a new variable never moves another's draws.
NOISE_STREAM: dict[str, int] = {
    name: i
    for i, name in enumerate(
        tuple(v for v in ENV_VARS if v != "sustainabilityThreshold")
        + PLAYER_VARS
        + PEER_VARS
        + ("sustainabilityThreshold",)
    )
}

RESOLUTIONS: tuple[str, ...] = ("exact", "qualitative", "sign")
EXACT, QUALITATIVE, SIGN = 0, 1, 2


class ObsParams(eqx.Module):
    """Per observation variable: visibility and relative Gaussian noise. (The resolution is
    a choice of code path, so it is static: ``Game.resolution``.)"""

    visible: jax.Array  # bool[V]
    noise: jax.Array  # float[V], std as a fraction of the true value


class PlayerParams(eqx.Module):
    """Per player: initial strategy id and each built-in's parameters."""

    strategy: jax.Array  # int32[N], index into Game.policies
    intensity: jax.Array  # float[N], aggressive i in (0, 1]
    reduction_factor: jax.Array  # float[N], adaptive f
    wealth0: jax.Array  # float[N], initial privateResource
    active_from: jax.Array  # int32[N], the first turn each player acts (activeFrom; 1: from the start)


class Params(eqx.Module):
    """All dynamic numbers of one arena."""

    max_turns: jax.Array  # int32[], turns after which the game ends
    whole_units: jax.Array  # bool[], requests floored to whole units (model.wholeUnits)
    threshold_players: jax.Array  # int32[], index into sustainability.THRESHOLD_PLAYERS
    metric_players: jax.Array  # int32[], index into outcomes.METRIC_PLAYERS
    survival_horizon: jax.Array  # int32[], GovSim's analysis horizon (0: the run's length)
    engine: Any  # the engine's own params pytree (e.g. LogisticParams)
    obs: ObsParams
    players: PlayerParams
    extra: dict  # pytrees of optional layers (governance, perturbations), keyed by layer name

    def with_max_turns(self, max_turns: Any) -> Params:
        """A copy whose ``max_turns`` is ``max_turns`` (an int32 scalar array): the one leaf a
        run's length sets, replaced in this one place (prepare, live options, sweep points)."""
        return type(self)(**{**self.__dict__, "max_turns": max_turns})


def fdtype() -> jnp.dtype:
    """The float dtype in force: float32, or float64 under ``jax_enable_x64``."""
    return jnp.result_type(float)


def farr(x: Any) -> jax.Array:
    """x as the float dtype in force. Host numbers (config values) become numpy arrays: the
    params of a sweep are built once per distinct value, and a numpy conversion costs far
    less than a jax op dispatch (bench/README.md); jit takes either. Traced values stay jax."""
    if isinstance(x, jax.Array):
        return jnp.asarray(x, dtype=fdtype())
    # a numpy leaf stands where a params field is declared jax.Array: jit takes either
    return cast(jax.Array, np.asarray(x, dtype=fdtype()))
