"""Observation fixes (issue 17): ``resolution: "sign"`` is the sign of the true change plus the
reading's noise, 0 on turn 1; ``othersHarvest`` is null on turn 1 (no harvest yet)."""

from __future__ import annotations

import copy

from payloads import SEED_LOGISTIC

from bdpd_jax.host.live.arena import Arena


def _arena(noise: float, harvests: list[float]) -> Arena:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxPlayers=2, minPlayers=2, maxTurns=4, commonsInitial=150, commonsCapacity=150)
    cfg["observability"]["commonsStock"] = {"visible": True, "noise": noise, "resolution": "sign"}
    cfg["observability"]["othersHarvest"] = {"visible": True}
    cfg["players"] = [{"strategy": "idle", "name": "i"}]
    arena = Arena(cfg, seed=1)
    arena.join({"agentType": "scripted", "name": "s", "script": [{"harvest": h} for h in harvests]})
    arena.run()
    return arena


def test_sign_reads_zero_on_turn_one_and_the_true_change_after():
    seen = _arena(0.0, [0.0, 20.0, 0.0, 0.0]).agents[1].seen
    # full stock, nobody harvests on turn 1: flat (0); turn 2 sees turn 1's flat stock: 0;
    # turn 3 sees the 20 taken on turn 2 (regrowth is smaller): -1; turn 4 sees regrowth: +1
    assert [o["commonsStock"] for o in seen] == [0, 0, -1, 1]


def test_sign_with_noise_is_zero_on_turn_one():
    for seed_noise in (0.1, 0.3):
        seen = _arena(seed_noise, [0.0] * 4).agents[1].seen
        assert seen[0]["commonsStock"] == 0 and all(o["commonsStock"] in (-1, 0, 1) for o in seen)


def test_others_harvest_is_null_on_turn_one():
    seen = _arena(0.0, [1.0] * 4).agents[1].seen
    assert seen[0]["othersHarvest"] == {"i": None}  # no harvest yet: null, not 0
    assert seen[1]["othersHarvest"]["i"] == 0.0  # idle harvested 0 on turn 1: 0, not null
