"""Logistic commons: r S (1 - S/K) growth, threshold collapse, hidden reserve and collapse die."""

from __future__ import annotations

from typing import Any, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ..params import farr
from .base import CappedStock, register

# The collapse die's defaults (000_* "a six-sided die; 1-4 draws a unit"), read by the engine and the config.
DIE_DEFAULTS: dict[str, int] = {"sides": 6, "successThreshold": 4}


class LogisticParams(eqx.Module):
    regen_rate: jax.Array  # float[], r
    capacity: jax.Array  # float[], K
    threshold: jax.Array  # float[], collapse when the stock falls below it
    initial: jax.Array  # float[], S0
    use_reserve: jax.Array  # bool[], hidden reserve and collapse die on/off
    reserve0: jax.Array  # float[], hidden reserve at start
    die_sides: jax.Array  # float[], faces of the collapse die
    die_success: jax.Array  # float[], rolls at or below this draw a unit; above collapse


class LogisticState(eqx.Module):
    stock: jax.Array  # float[], S
    reserve: jax.Array  # float[], hidden reserve left


def die_draw(excess, reserve, u, sides, success):
    """Roll the collapse die for each excess unit, without a loop over units.

    Rolls are i.i.d. with success probability p = success/sides; the number of successes
    before the first failure is geometric, so one uniform ``u`` decides the whole sequence:
    K = floor(log u / log p). The rolls needed are ceil(min(excess, reserve)) (each success
    takes one unit, the last one possibly a fraction). Returns (drawn, collapsed).
    """
    p = jnp.clip(success / jnp.maximum(sides, 1.0), 0.0, 1.0)
    need = jnp.maximum(jnp.minimum(excess, reserve), 0.0)
    n_rolls = jnp.ceil(need)
    k = jnp.where(p >= 1.0, jnp.inf, jnp.where(p <= 0.0, 0.0, jnp.floor(jnp.log(u) / jnp.log(p))))
    fails = k < n_rolls
    drawn = jnp.where(fails, k, need)
    return drawn, fails & (n_rolls > 0)


class Logistic(CappedStock):
    name = "logistic"
    recorded = ("reserve",)
    features = frozenset({"hidden_reserve", "die", "capacity", "threshold", "regen_rate", "stock"})

    def params_from_model(self, model: Any) -> LogisticParams:
        die = model.collapse_die
        return LogisticParams(
            **self.capped_params(model),
            use_reserve=cast(jax.Array, np.asarray(bool(model.use_hidden_reserve))),
            reserve0=farr(model.hidden_reserve_initial),
            die_sides=farr(die.sides),
            die_success=farr(die.success_threshold),
        )

    def sustainable_yield(self, model: Any) -> float:
        """Maximum sustainable yield of logistic growth: r K / 4 (at stock K / 2)."""
        return float(model.regen_rate) * float(model.commons_capacity) / 4.0

    def sustainability_threshold(self, stock: jax.Array, params: LogisticParams) -> jax.Array:
        """The remainder x = s - h restores s when x + r x (1 - x/K) = s; its smaller root,
        written 2 s / ((1 + r) + sqrt((1 + r)^2 - 4 r s / K)) so that r = 0 needs no division."""
        r, s = params.regen_rate, jnp.maximum(stock, 0.0)
        k = jnp.maximum(params.capacity, jnp.finfo(s.dtype).tiny)
        disc = (1.0 + r) ** 2 - 4.0 * r * s / k
        x = 2.0 * s / jnp.maximum((1.0 + r) + jnp.sqrt(jnp.maximum(disc, 0.0)), jnp.finfo(s.dtype).tiny)
        # no remainder regrows to s (disc < 0, far above K): nothing can be taken sustainably
        return jnp.where(disc >= 0, jnp.maximum(s - x, 0.0), 0.0)

    def init(self, params: LogisticParams) -> LogisticState:
        reserve = jnp.where(params.use_reserve, params.reserve0, 0.0)
        return LogisticState(stock=jnp.maximum(params.initial, 0.0), reserve=farr(reserve))

    def step_one(self, state: LogisticState, demand, u, params: LogisticParams):
        from_stock = jnp.minimum(demand, state.stock)
        excess = demand - from_stock
        drawn, died = die_draw(excess, state.reserve, u, params.die_sides, params.die_success)
        drawn = jnp.where(params.use_reserve, drawn, 0.0)
        died = params.use_reserve & died
        new = LogisticState(
            stock=jnp.maximum(state.stock - from_stock, 0.0), reserve=jnp.maximum(state.reserve - drawn, 0.0)
        )
        return new, from_stock + drawn, died, drawn

    def step(self, state: LogisticState, params: LogisticParams):
        s = state.stock
        k = jnp.maximum(params.capacity, jnp.finfo(s.dtype).tiny)
        # max(regen, -s) keeps the stock >= 0 and, standing between the product and the sum,
        # keeps XLA from contracting s + r*s*(1 - s/K) into an FMA in some programs and not
        # in others (a live turn split in two programs would drift from a batched one).
        regen = jnp.maximum(params.regen_rate * s * (1.0 - s / k), -s)
        new_stock = s + regen
        return LogisticState(stock=new_stock, reserve=state.reserve), new_stock - s

    def recorded_values(self, state: LogisticState) -> dict[str, jax.Array]:
        return {"reserve": state.reserve}


LOGISTIC = register(Logistic())
