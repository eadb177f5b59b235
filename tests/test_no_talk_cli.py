"""``bdpd run --no-talk`` (003_*): the batch run without any scripted talk; pacts stay."""

from __future__ import annotations

import copy
import json

import pandas as pd
from payloads import SEED_LOGISTIC
from typer.testing import CliRunner

from bdpd_jax.cli import app


def test_run_no_talk_drops_scripted_talk(tmp_path):
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"]["maxTurns"] = 5
    cfg["players"] = [
        {"strategy": "aggressive", "talk": {"announce": "honest", "pledge": {"turn": 1, "maxHarvest": 0.5}}},
        {"strategy": "conservative", "talk": {"announce": "biased"}},
        {"strategy": "aggressive"},
        {"strategy": "random"},
    ]
    cfg["pacts"] = [{"parties": [2, 3], "terms": {"type": "harvest_cap", "maxHarvest": 0.5}}]
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(cfg))
    frames = {}
    for flag in ([], ["--no-talk"]):
        out = tmp_path / ("quiet" if flag else "talk")
        r = CliRunner().invoke(app, ["run", str(path), "-n", "4", "--out", str(out), *flag])
        assert r.exit_code == 0, r.output
        frames[bool(flag)] = (pd.read_parquet(out / "players.parquet"), pd.read_parquet(out / "turns.parquet"))
    (p_talk, t_talk), (p_quiet, t_quiet) = frames[False], frames[True]
    assert p_talk.announced.notna().any() and (t_talk.announce_frequency > 0).all()
    assert p_quiet.announced.isna().all() and (t_quiet.announce_frequency == 0).all()
    # the pledge is gone, the config's pact still binds: violations only by players 2 and 3
    assert (t_quiet.violations > 0).any() and (p_quiet[p_quiet.player.isin([0, 1])].violations == 0).all()
    assert (p_talk[p_talk.player == 0].violations > 0).any()  # the aggressive pledger breaks its pledge
