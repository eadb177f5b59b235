"""Results frames, parquet round trip and the CLI."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

import bdpd_jax
from bdpd_jax.cli import app
from bdpd_jax.results.frames import PLAYER_COLUMNS, TURN_COLUMNS, Results


@pytest.fixture(scope="module")
def run3() -> Results:
    """One run for the whole file (one compiled program): the CLI's run below plays the same."""
    return bdpd_jax.simulate(bdpd_jax.default_config(), n_arenas=3, seed=2)


def test_frames_have_the_contract_columns(run3):
    r = run3
    assert set(TURN_COLUMNS) <= set(r.turns.columns)
    assert set(PLAYER_COLUMNS) <= set(r.players.columns)
    for c in ("arena", "survived", "collapse_turn", "turns_played", "wealth_0", "rank_3"):
        assert c in r.summary.columns
    assert len(r.players) == 4 * len(r.turns)
    assert r.players.announced.isna().all() and (r.players.sanction == 0).all()


def test_parquet_round_trip_is_unchanged(run3, tmp_path):
    r = run3
    r.to_parquet(tmp_path / "out")
    back = Results.from_parquet(tmp_path / "out")
    for name in ("summary", "turns", "players"):
        pd.testing.assert_frame_equal(getattr(r, name), getattr(back, name), check_exact=True)
    assert back.meta["seed"] == 2 and back.meta["n_arenas"] == 3


def test_cli_runs_default_and_writes_parquet(run3, tmp_path):
    out = tmp_path / "res"
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(bdpd_jax.default_config().model_dump(mode="json")))
    r = CliRunner().invoke(app, ["run", str(cfg), "--arenas", "3", "--seed", "2", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "survival rate" in r.stdout and "aggressive" in r.stdout
    written = Results.from_parquet(out)  # the CLI's run is simulate's, row for row
    pd.testing.assert_frame_equal(written.summary, run3.summary, check_exact=True)


def test_cli_bad_config_is_a_clear_error(tmp_path):
    cfg = tmp_path / "bad.json"
    cfg.write_text(json.dumps({"model": {"regenRate": -1}, "players": [{"strategy": "idle"}] * 2}))
    r = CliRunner().invoke(app, ["run", str(cfg), "--arenas", "2"])
    # errors go to stderr (issue 14: "error: ..." with exit code 2 and no traceback)
    assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.exception
    assert r.stderr.startswith("error:") and "regenRate" in r.stderr and r.stdout == ""
