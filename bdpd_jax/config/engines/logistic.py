"""Config model of the logistic engine (kernels/engines/logistic.py): the seed's payload."""

from __future__ import annotations

from pydantic import Field, model_validator

from ...kernels.engines.logistic import DIE_DEFAULTS
from ..base import ConfigModel
from ..limits import MAX_DIE_SIDES, check_at_most
from .base import STRICT, EngineConfig, check_threshold_within_capacity, register_engine_config


class CollapseDie(ConfigModel):
    """The collapse die of the hidden reserve: a roll <= successThreshold draws one unit."""

    model_config = STRICT
    sides: int = Field(DIE_DEFAULTS["sides"], ge=1, le=MAX_DIE_SIDES)
    success_threshold: int = Field(DIE_DEFAULTS["successThreshold"], ge=0)

    @model_validator(mode="after")
    def _threshold_within_sides(self) -> CollapseDie:
        check_at_most(self.success_threshold, "collapseDie.successThreshold", self.sides, "sides")
        return self


class LogisticConfig(EngineConfig):
    """r S (1 - S/K) regrowth, collapse below ``threshold``, hidden reserve and collapse die
    (004_* A.2.1). Defaults are the seed's logistic example."""

    commons_initial: float = Field(150.0, ge=0)
    commons_capacity: float = Field(150.0, gt=0)
    regen_rate: float = Field(0.12, ge=0)
    threshold: float = Field(10.0, ge=0)
    use_hidden_reserve: bool = True
    hidden_reserve_initial: float = Field(20.0, ge=0)
    collapse_die: CollapseDie = Field(default_factory=CollapseDie)

    @model_validator(mode="after")
    def _threshold_below_capacity(self) -> LogisticConfig:
        check_threshold_within_capacity(self)
        return self


register_engine_config("logistic", LogisticConfig)
