"""The state pytree of one arena and the record one turn emits."""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax

from .metrics import record_metrics


class ArenaState(eqx.Module):
    """What changes from turn to turn. Derived values (capacity, ratio) are never stored."""

    engine: Any  # the engine's own state pytree (stock, reserve, R/C/P, ...)
    wealth: jax.Array  # float[N], privateResource
    last_actual: jax.Array  # float[N], actual harvests of the previous turn (othersHarvest)
    memory: jax.Array  # float[K, M], private memory, one row per Game.memory_slots (strategy, player)
    strategy: jax.Array  # int32[N], the decision function in force for each player
    prev_env: jax.Array  # float[len(ENV_VARS)] last turn's true values if a variable is read by its sign, else float[0]
    turn: jax.Array  # int32[], turns completed
    collapsed: jax.Array  # bool[]
    collapse_turn: jax.Array  # int32[], turn the commons collapsed, 0 while alive
    tally: Any  # kernels.sustainability.Tally: catches and over-threshold counts (GovSim's metrics)
    extra: dict  # optional layers' state (governance, perturbations), keyed by layer name


def still_playing(state: ArenaState, params) -> jax.Array:
    """bool[]: whether the arena plays its next turn (not collapsed, ``max_turns`` not
    reached); an arena that has ended is frozen (kernels/turn.py)."""
    return ~state.collapsed & (state.turn < params.max_turns)


class TurnRecord(eqx.Module):
    """What one turn of one arena reports (stacked over turns by the scan)."""

    turn: jax.Array  # int32[], 1-based number of this turn
    played: jax.Array  # bool[], False once the game had ended before this turn
    stock: jax.Array  # float[], commons stock at the end of the turn
    regen: jax.Array  # float[], change of the stock by the dynamics this turn (stock units)
    reserve_drawn: jax.Array  # float[], units drawn from the hidden reserve
    collapsed: jax.Array  # bool[], collapsed at the end of this turn
    requested: jax.Array  # float[N], requests as submitted (after sanitising)
    actual: jax.Array  # float[N], what each player received
    wealth: jax.Array  # float[N], privateResource at the end of the turn
    announced: jax.Array  # float[N], announced intended harvest, NaN when none
    sanction: jax.Array  # float[N], sanction amount deducted this turn
    invalid: jax.Array  # bool[N], request was NaN, infinite or negative and was treated as 0
    strategy: jax.Array  # int32[N], decision function in force
    sanctioned: jax.Array  # bool[N], a sanction fired on the player this turn (even one the wealth floor emptied)
    share_defined: jax.Array  # bool[], whether regen / N was a sustainable share this turn (kernels/metrics.py)
    engine_extra: dict  # name -> float[], engine observables recorded each turn (capital, ...)
    extra: dict  # optional layers' per-turn records

    @property
    def metrics(self) -> dict[str, Any]:
        """name -> float[], the five governance metrics of these records (NaN where the seed
        says null): derived from the record when asked, never stored (kernels/metrics.py)."""
        return record_metrics(self.actual, self.announced, self.sanctioned, self.regen, self.played, self.share_defined)
