"""A live player's fallback harvest is scaled to the engine's stock units (semantics §9)."""

from __future__ import annotations

import copy

import pytest
from payloads import SEED_SENECA

from bdpd_jax.host.agents.base import fallback_harvest
from bdpd_jax.host.live.arena import Arena


@pytest.mark.parametrize("scale", [1e-4, 2.5e-3])
def test_seneca_fallback_is_in_R_units(scale: float) -> None:
    cfg = copy.deepcopy(SEED_SENECA)
    cfg["model"]["seneca"]["harvestScale"] = scale
    arena = Arena(cfg, seed=3)
    arena.join({"agentType": "scripted", "name": "quiet", "privateResource": 30.0, "script": [{}]})
    arena.join({"strategy": "conservative", "privateResource": 30.0})
    arena.start()
    rec = arena.tick()
    d = next(d for d in rec["decisions"] if d["playerId"] == "quiet")
    assert d["fallback"] is True
    assert d["harvest"] == pytest.approx(fallback_harvest(30.0) * scale, rel=1e-6)
    assert d["actual"] <= d["harvest"] * (1 + 1e-6)
