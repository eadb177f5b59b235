"""What the create box and the join forms offer (issue 41), read from the library when asked:
``GET /api/presets`` (GovSim's 3 x 4 cells from :func:`bdpd_jax.scenarios.govsim`, and three
governance presets on the default commons: a harvest-cap pact with a graduated ladder,
voluntary sanctions, the built-in governance agent) and ``GET /api/builtins`` (every
registered built-in strategy, ``kernels.policies.BUILTINS``). The page restates none of them.

The governance presets' numbers are illustrative, not from a paper: a cap of 2 per turn on a
commons of 150 regrowing at 0.12 is under the regrowth four players can sustain, and the
ladder ``[1, 3, 10]`` is the one the issue's trial used (docs/semantics/live/server.md "Presets").
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from fastapi import APIRouter

from bdpd_jax.config.game import default_config
from bdpd_jax.host.server import models as M
from bdpd_jax.kernels.policies import BUILTINS
from bdpd_jax.scenarios import EXPERIMENTS, GOVSIM_SCENARIOS, govsim

router = APIRouter(tags=["create"], responses=M.ERRORS)
#: the four built-ins of the governance presets (the default config's mix, named)
PRESET_PLAYERS = ("conservative", "aggressive", "adaptive", "random")
LADDER = [1.0, 3.0, 10.0]
CAP = 2.0


def _base(name: str) -> dict[str, Any]:
    """The default commons (its numbers, defaults left out), 30 turns, four named built-ins."""
    cfg = default_config().model_dump(mode="json", by_alias=True, exclude_defaults=True)
    cfg["model"].update(name=name, maxTurns=30)
    cfg["players"] = [{"strategy": s, "name": f"{s[:3]}{k}"} for k, s in enumerate(PRESET_PLAYERS)]
    return cfg


def _pact_ladder() -> dict[str, Any]:
    cfg = _base("pact_ladder")
    cfg["pacts"] = [{"parties": [0, 1, 2, 3], "terms": {"type": "harvest_cap", "maxHarvest": CAP}}]
    cfg["perturbations"] = [
        {
            "id": "ladder",
            "type": "sanction_graduated",
            "trigger": {"kind": "pact_violation"},
            "payload": {"ladder": LADDER},
        }
    ]
    return cfg


def _voluntary() -> dict[str, Any]:
    cfg = _base("voluntary_sanctions")
    cfg["plugins"] = [{"type": "voluntary_sanction", "id": "vs", "cost": 0.5, "fine": 2.0, "sanctioner": "reciprocal"}]
    return cfg


def _governor() -> dict[str, Any]:
    cfg = _base("governance_agent")
    cfg["perturbations"] = [
        {"id": "fine", "type": "sanction", "trigger": {"kind": "pact_violation"}, "payload": {"amount": 1.0}}
    ]
    cfg["plugins"] = [{"type": "governance_agent", "id": "governor", "cap": CAP, "tighten": 2.0, "cooldown": 3}]
    return cfg


@cache
def presets() -> tuple[dict[str, Any], ...]:
    """Every preset: ``{id, group, label, payload}`` (built once; callers get copies)."""
    out = [
        {"id": f"govsim/{s}/{e}", "group": "GovSim cells", "label": f"GovSim {s}: {e}", "payload": govsim(s, e)}
        for s in GOVSIM_SCENARIOS
        for e in EXPERIMENTS
    ]
    out += [
        {
            "id": "pact_ladder",
            "group": "Governance",
            "label": "Harvest-cap pact + sanction ladder",
            "payload": _pact_ladder(),
        },
        {"id": "voluntary_sanctions", "group": "Governance", "label": "Voluntary sanctions", "payload": _voluntary()},
        {"id": "governance_agent", "group": "Governance", "label": "Governance agent", "payload": _governor()},
    ]
    return tuple(out)


@router.get("/api/presets", summary="Create-box presets: GovSim's 3 x 4 cells and governance presets")
def list_presets():
    return {"presets": copy.deepcopy(list(presets()))}


@router.get("/api/builtins", summary="Every registered built-in strategy (for the join form)")
def list_builtins():
    return {"strategies": sorted(BUILTINS)}


__all__ = ["presets", "router"]
