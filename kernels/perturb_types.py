"""The eight perturbation types of 004_* Table A.1, each one function plus one register call.

Each ``apply`` returns what the arena would be if the slot fired (kernels/perturb_registry.py);
the layer keeps it only where the slot fires. The value logged is the acted-on quantity
after the change (docs/semantics.md §10).
"""

from __future__ import annotations

import jax.numpy as jnp

from .params import OBS_VARS
from .perturb_registry import View, register_perturbation


def _value(view: View, slot):
    return slot.value.astype(view.wealth.dtype)


def _regen_shock(game, view: View, slot, who):
    r = jnp.maximum(view.engine["regen_rate"] * _value(view, slot), 0.0)
    return {"engine": {"regen_rate": r}}, r, None


def _regen_set(game, view: View, slot, who):
    r = jnp.maximum(_value(view, slot), 0.0)
    return {"engine": {"regen_rate": r}}, r, None


def _capacity_shock(game, view: View, slot, who):
    k = jnp.maximum(view.engine["capacity"] * _value(view, slot), 0.0)
    return {"engine": {"capacity": k}}, k, None


def _threshold_shift(game, view: View, slot, who):
    v = _value(view, slot)
    th = jnp.maximum(jnp.where(slot.mode == 1, v, view.engine["threshold"] + v), 0.0)
    return {"engine": {"threshold": th}}, th, None


def _commons_shock(game, view: View, slot, who):
    s = jnp.maximum(game.engine.stock(view.engine_state) + _value(view, slot), 0.0)
    return {"engine_state": game.engine.with_stock(view.engine_state, s)}, s, None


def _wealth_shock(game, view: View, slot, who):
    v = _value(view, slot)
    w = jnp.maximum(jnp.where(slot.mode == 1, view.wealth + v, view.wealth * v), 0.0)
    wealth = jnp.where(who, w, view.wealth)
    return {"wealth": wealth}, jnp.sum(jnp.where(who, wealth, 0.0)), slot.player


def _strategy_override(game, view: View, slot, who):
    strategy = jnp.where(who, slot.index, view.strategy).astype(jnp.int32)
    return {"strategy": strategy}, slot.index, slot.player


def _observability_flip(game, view: View, slot, who):
    i = jnp.clip(slot.index, 0, len(OBS_VARS) - 1)
    old = view.visible[i]
    new = jnp.select([slot.mode == 1, slot.mode == 2], [True, False], ~old)
    return {"visible": view.visible.at[i].set(new)}, new, slot.index


register_perturbation(
    "regen_shock", _regen_shock, requires="regen_rate", engine_field="regen_rate", description="r <- r x value"
)
register_perturbation(
    "regen_set", _regen_set, requires="regen_rate", engine_field="regen_rate", description="r <- value"
)
register_perturbation(
    "commons_shock", _commons_shock, requires="stock", label="stock", description="S <- max(S + value, 0)"
)
register_perturbation(
    "capacity_shock", _capacity_shock, requires="capacity", engine_field="capacity", description="K <- K x value"
)
register_perturbation(
    "wealth_shock",
    _wealth_shock,
    target="player",
    label="wealth",
    description="w <- max(w x value, 0) (mode 0) or max(w + value, 0) (mode 1)",
)
register_perturbation(
    "strategy_override",
    _strategy_override,
    target="player",
    label="strategy",
    description="the player's decision function <- Game.policies[index]",
)
register_perturbation(
    "observability_flip",
    _observability_flip,
    target="variable",
    label="visible",
    description="visible[index] <- not visible (0), True (1), False (2)",
)
register_perturbation(
    "threshold_shift",
    _threshold_shift,
    requires="threshold",
    engine_field="threshold",
    description="T <- max(T + value, 0) (mode 0) or value (mode 1)",
)
