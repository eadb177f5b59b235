"""Pacts and talk without any sanction spec: violations are recorded, nothing is deducted."""

from __future__ import annotations

import copy

from payloads import MIXED_PLAYERS, SEED_LOGISTIC

import bdpd_jax


def test_pacts_without_sanctions_run_and_record_violations():
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    cfg["pacts"] = [{"parties": [0, 1], "terms": {"type": "harvest_cap", "maxHarvest": 0.5}, "status": "active"}]
    r = bdpd_jax.simulate(cfg, n_arenas=4, seed=0)
    assert (r.players.sanction == 0).all() and (r.turns.sanction_rate == 0).all()
    v = r.extra["violations"]
    assert len(v) > 0 and set(v.player.unique()) <= {0, 1}
