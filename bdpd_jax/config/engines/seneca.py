"""Config model of the Seneca engine (kernels/engines/seneca.py): Bardi's R-C-P parameters."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ...kernels.engines.seneca import DEFAULTS as SENECA
from ...kernels.engines.seneca import HARVEST_SCALE, SOLVERS
from ...kernels.observe import capacity
from ..base import ConfigModel
from ..limits import Label
from .base import STRICT, EngineConfig, register_engine_config


def _known(where: str, v: str, registry: dict) -> str:
    if v not in registry:
        raise ValueError(f"{where}: unknown solver {v!r}; known: {sorted(registry)}")
    return v


class SenecaBlock(ConfigModel):
    """Bardi (2011) R-C-P parameters; defaults reproduce the seed's peak timing (docs/semantics.md)."""

    model_config = STRICT
    k1: float = Field(SENECA["k1"], ge=0)
    k2: float = Field(SENECA["k2"], ge=0)
    l1: float = Field(SENECA["l1"], ge=0)
    l2: float = Field(SENECA["l2"], ge=0)
    l3: float = Field(SENECA["l3"], ge=0)
    capital_seed: float = Field(SENECA["capitalSeed"], ge=0)
    pollution_seed: float = Field(SENECA["pollutionSeed"], ge=0)
    dt: float = Field(SENECA["dt"], gt=0)
    substeps: int = Field(SENECA["substeps"], ge=1, le=1000)
    solver: Label = SENECA["solver"]  # one of kernels.engines.seneca.SOLVERS (checked below)
    collapse_fraction: float = Field(SENECA["collapseFraction"], ge=0, lt=1)
    # R units per unit of the heuristics' capacity(w): requests, harvests and wealth are in
    # R units; a built-in player asks up to harvestScale x capacity(w) (docs/semantics.md §9).
    harvest_scale: float = Field(SENECA["harvestScale"], gt=0)
    # How constant steps are taken: diffrax solver steps, diffrax's Butcher tableau unrolled
    # (fast for RK solvers), or a full diffeqsolve per turn (docs/semantics.md §9).
    integrator: Literal["steps", "tableau", "diffeqsolve"] = SENECA["integrator"]
    adaptive: bool = SENECA["adaptive"]  # diffeqsolve with a PID controller (rtol/atol); else constant steps
    rtol: float = Field(SENECA["rtol"], gt=0)
    atol: float = Field(SENECA["atol"], gt=0)
    max_steps: int = Field(SENECA["maxSteps"], ge=1, le=100000)

    @field_validator("solver")
    @classmethod
    def _known_solver(cls, v: str) -> str:
        return _known("seneca.solver", v, SOLVERS)

    @model_validator(mode="after")
    def _adaptive_needs_error_estimate(self) -> SenecaBlock:
        import diffrax

        if self.adaptive and not issubclass(SOLVERS[self.solver], diffrax.AbstractAdaptiveSolver):
            ok = [k for k, v in SOLVERS.items() if issubclass(v, diffrax.AbstractAdaptiveSolver)]
            raise ValueError(
                f"seneca.solver: adaptive step control needs a solver with an error estimate, "
                f"got {self.solver!r} with adaptive=true; use one of {ok}"
            )
        return self


class SenecaConfig(EngineConfig):
    """The Seneca engine's part of the ``model`` block: R0 and the ``seneca`` block. It has
    no hidden reserve, no collapse die, no capacity, regeneration rate or threshold (004_* A.2.1)."""

    commons_initial: float = Field(1.0, ge=0)
    seneca: SenecaBlock = Field(default_factory=SenecaBlock)

    def check_players(self, players: list[Any]) -> None:
        """The players' first-turn capacities, in R units, must leave some of R0.

        harvestScale x capacity(privateResource) summed over the players (``idle`` ones never
        harvest) is what capacity-bound heuristics take on turn 1; at or above commonsInitial the
        commons is gone at turn 1 whatever the strategies (the failure docs/semantics.md §9 is
        designed against)."""
        scale = self.seneca.harvest_scale
        total = scale * sum(float(capacity(p.private_resource)) for p in players if p.strategy_name != "idle")
        if total >= self.commons_initial:
            raise ValueError(
                f"model.seneca.harvestScale: {scale!r} lets the {len(players)} players' capacities take "
                f"{total:.4g} R units on turn 1, >= commonsInitial={self.commons_initial!r}: the commons would "
                f"collapse at once; harvestScale is R units per unit of capacity(w) = 1 + 0.05 w "
                f"(default {HARVEST_SCALE})"
            )


register_engine_config("seneca", SenecaConfig)
