"""Results frames, parquet round trip and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd

import bdpd_jax
from bdpd_jax.results.frames import PLAYER_COLUMNS, TURN_COLUMNS, Results


def test_frames_have_the_contract_columns():
    r = bdpd_jax.simulate(bdpd_jax.default_config(), n_arenas=3, seed=0)
    assert set(TURN_COLUMNS) <= set(r.turns.columns)
    assert set(PLAYER_COLUMNS) <= set(r.players.columns)
    for c in ("arena", "survived", "collapse_turn", "turns_played", "wealth_0", "rank_3"):
        assert c in r.summary.columns
    assert len(r.players) == 4 * len(r.turns)
    assert r.players.announced.isna().all() and (r.players.sanction == 0).all()


def test_parquet_round_trip_is_unchanged(tmp_path):
    r = bdpd_jax.simulate(bdpd_jax.default_config(), n_arenas=5, seed=2)
    r.to_parquet(tmp_path / "out")
    back = Results.from_parquet(tmp_path / "out")
    for name in ("summary", "turns", "players"):
        pd.testing.assert_frame_equal(getattr(r, name), getattr(back, name), check_exact=True)
    assert back.meta["seed"] == 2 and back.meta["n_arenas"] == 5


def test_cli_runs_default_and_writes_parquet(tmp_path):
    out = tmp_path / "res"
    cfg = tmp_path / "c.json"
    d = bdpd_jax.default_config().model_dump(mode="json")
    d["model"]["maxTurns"] = 10
    cfg.write_text(json.dumps(d))
    p = subprocess.run(
        [sys.executable, "-m", "bdpd_jax", "run", str(cfg), "--arenas", "64", "--seed", "1", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert "survival rate" in p.stdout and "aggressive" in p.stdout
    assert Results.from_parquet(out).summary.shape[0] == 64


def test_cli_bad_config_is_a_clear_error(tmp_path):
    cfg = tmp_path / "bad.json"
    cfg.write_text(json.dumps({"model": {"regenRate": -1}, "players": [{"strategy": "idle"}] * 2}))
    p = subprocess.run(
        [sys.executable, "-m", "bdpd_jax", "run", str(cfg), "--arenas", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    # errors go to stderr (issue 14: "error: ..." with exit code 2 and no traceback)
    assert p.returncode == 2 and "regenRate" in p.stderr and "Traceback" not in p.stderr
