"""GovSim's commons (Piatti et al. 2024, "Cooperate or Collapse"): the remainder regrows to
min(K, (1 + r) s) after the harvest; the run ends when fewer than ``threshold`` units remain
after the harvest. No hidden reserve, no collapse die. With r = 1 the pool doubles (GovSim's
rule), so the sustainability threshold is f(h) = h r / (1 + r) = h / 2 (h // 2 in whole units).
"""

from __future__ import annotations

from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp

from .base import CappedStock, register

#: GovSim's numbers (its code and paper), read by the engine's config model as defaults.
DEFAULTS: dict[str, float] = {"commonsInitial": 100.0, "commonsCapacity": 100.0, "regenRate": 1.0, "threshold": 5.0}


class GovSimParams(eqx.Module):
    regen_rate: jax.Array  # float[], r: the remainder grows by the factor 1 + r
    capacity: jax.Array  # float[], K: the cap of the regrown pool
    threshold: jax.Array  # float[], collapse when the stock after the harvest is below it
    initial: jax.Array  # float[], the pool at the start


class GovSimState(eqx.Module):
    stock: jax.Array  # float[], the pool


class GovSim(CappedStock):
    name = "govsim"
    features = frozenset({"capacity", "threshold", "regen_rate", "stock"})
    #: GovSim's table: what the paper reports of a run (bdpd_jax/results/schema.py GOVSIM)
    metric_family = (
        "govsim_survived",
        "govsim_survival_time",
        "govsim_gain",
        "govsim_efficiency",
        "govsim_equality",
        "govsim_over_usage",
    )

    def params_from_model(self, model: Any) -> GovSimParams:
        return GovSimParams(**self.capped_params(model))

    def sustainable_yield(self, model: Any) -> float:
        """The largest harvest the capped growth sustains: K r / (1 + r), at stock K."""
        r = float(model.regen_rate)
        return float(model.commons_capacity) * r / (1.0 + r)

    def sustainability_threshold(self, stock: jax.Array, params: GovSimParams) -> jax.Array:
        # (1 + r)(s - h) >= s  <=>  h <= s r / (1 + r); above the cap nothing restores s
        r = jnp.maximum(params.regen_rate, 0.0)
        return jnp.where(stock <= params.capacity, jnp.maximum(stock, 0.0) * r / (1.0 + r), 0.0)

    def init(self, params: GovSimParams) -> GovSimState:
        return GovSimState(stock=jnp.maximum(params.initial, 0.0))

    def step_one(self, state: GovSimState, demand, u, params: GovSimParams):
        got = jnp.clip(demand, 0.0, state.stock)
        left = jnp.where(got >= state.stock, 0.0, state.stock - got)  # taking all leaves exactly 0
        no = jnp.zeros((), bool)
        return GovSimState(stock=left), got, no, jnp.zeros_like(got)

    def step(self, state: GovSimState, params: GovSimParams):
        s = state.stock
        new = jnp.minimum(params.capacity, (1.0 + params.regen_rate) * s)
        return GovSimState(stock=new), new - s


GOVSIM = register(GovSim())
