"""Config model of the GovSim engine (kernels/engines/govsim.py): GovSim's pool, cap, growth and
collapse threshold; its defaults are GovSim's (pool and cap 100, doubling, collapse below 5)."""

from __future__ import annotations

from pydantic import Field, model_validator

from ...kernels.engines.govsim import DEFAULTS
from ..limits import check_at_most
from .base import EngineConfig, check_threshold_within_capacity, register_engine_config


class GovSimConfig(EngineConfig):
    """The pool starts at ``commonsInitial``; after each harvest the remainder s grows to
    min(commonsCapacity, (1 + regenRate) s); fewer than ``threshold`` units left after a
    harvest end the run. No hidden reserve, no collapse die."""

    commons_initial: float = Field(DEFAULTS["commonsInitial"], ge=0)
    commons_capacity: float = Field(DEFAULTS["commonsCapacity"], gt=0)
    regen_rate: float = Field(DEFAULTS["regenRate"], ge=0)
    threshold: float = Field(DEFAULTS["threshold"], ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> GovSimConfig:
        check_threshold_within_capacity(self)
        check_at_most(
            self.commons_initial,
            "model.commonsInitial",
            self.commons_capacity,
            "commonsCapacity",
            " (the pool starts at most full)",
        )
        return self


register_engine_config("govsim", GovSimConfig)
