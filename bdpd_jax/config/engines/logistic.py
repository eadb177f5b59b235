"""Config model of the logistic engine (kernels/engines/logistic.py): the seed's payload."""

from __future__ import annotations

from pydantic import BaseModel, Field, model_validator

from ...kernels.engines.logistic import DIE_DEFAULTS
from ..limits import MAX_DIE_SIDES
from . import STRICT, EngineConfig, register_engine_config


class CollapseDie(BaseModel):
    """The collapse die of the hidden reserve: a roll <= successThreshold draws one unit."""

    model_config = STRICT
    sides: int = Field(DIE_DEFAULTS["sides"], ge=1, le=MAX_DIE_SIDES)
    successThreshold: int = Field(DIE_DEFAULTS["successThreshold"], ge=0)

    @model_validator(mode="after")
    def _threshold_within_sides(self) -> CollapseDie:
        if self.successThreshold > self.sides:
            raise ValueError(f"collapseDie.successThreshold: {self.successThreshold} exceeds sides={self.sides}")
        return self


class LogisticConfig(EngineConfig):
    """r S (1 - S/K) regrowth, collapse below ``threshold``, hidden reserve and collapse die
    (004_* A.2.1). Defaults are the seed's logistic example."""

    commonsInitial: float = Field(150.0, ge=0)
    commonsCapacity: float = Field(150.0, gt=0)
    regenRate: float = Field(0.12, ge=0)
    threshold: float = Field(10.0, ge=0)
    useHiddenReserve: bool = True
    hiddenReserveInitial: float = Field(20.0, ge=0)
    collapseDie: CollapseDie = Field(default_factory=CollapseDie)

    @model_validator(mode="after")
    def _threshold_below_capacity(self) -> LogisticConfig:
        if self.threshold > self.commonsCapacity:
            raise ValueError(
                f"model.threshold: {self.threshold} is above commonsCapacity={self.commonsCapacity} "
                "(the commons would count as collapsed at any stock it can hold)"
            )
        return self


register_engine_config("logistic", LogisticConfig)
