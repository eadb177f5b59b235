"""``bdpd sweep SPEC.toml --out DIR``: TOML specs, chunk parts written atomically, resume
(only missing chunks recomputed), a different spec refused, results equal ``sweep()``."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from bdpd_jax.cli import app
from bdpd_jax.sweeps.sweep import SweepResults, sweep
from bdpd_jax.sweeps.sweep_file import load_sweep_file, parse_bytes, run_sweep_file

SPEC = """
seed = 3
replicates = 5
max_batch = 8
config = "arena.json"

[grid]
"model.regenRate" = [0.05, 0.2]
"players[0].intensity" = [0.3, 0.9]
"""


@pytest.fixture
def spec_dir(tmp_path):
    from payloads import MIXED_PLAYERS, SEED_LOGISTIC

    c = copy.deepcopy(SEED_LOGISTIC)
    c["players"] = copy.deepcopy(MIXED_PLAYERS)
    c["model"]["maxTurns"] = 10
    (tmp_path / "arena.json").write_text(json.dumps(c))
    (tmp_path / "spec.toml").write_text(SPEC)
    return tmp_path, c


def test_cli_sweep_then_resume_recomputes_only_the_missing_part(spec_dir):
    d, c = spec_dir
    out = d / "out"
    runner = CliRunner()
    r = runner.invoke(app, ["sweep", str(d / "spec.toml"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "computed 3, already written 0" in r.output
    parts = sorted(out.glob("arenas/chunk=*/part-0.parquet"))
    assert len(parts) == 3 and not list(out.glob("arenas/**/*.tmp"))
    first = SweepResults.from_parquet(out)
    ref = sweep(
        c, grid={"model.regenRate": [0.05, 0.2], "players[0].intensity": [0.3, 0.9]}, replicates=5, seed=3, max_batch=8
    )
    pd.testing.assert_frame_equal(first.arenas, ref.arenas, check_exact=True)
    pd.testing.assert_frame_equal(first.points, ref.points, check_exact=True)
    mtimes = {p: p.stat().st_mtime_ns for p in parts}
    parts[1].unlink()
    computed = []
    res = run_sweep_file(load_sweep_file(d / "spec.toml"), out, on_chunk=computed.append)
    assert computed == [1] and res.skipped == [0, 2]
    assert parts[0].stat().st_mtime_ns == mtimes[parts[0]] and parts[2].stat().st_mtime_ns == mtimes[parts[2]]
    again = SweepResults.from_parquet(out)
    pd.testing.assert_frame_equal(again.arenas, first.arenas, check_exact=True)
    r = runner.invoke(app, ["sweep", str(d / "spec.toml"), "--out", str(out)])
    assert r.exit_code == 0 and "computed 0, already written 3" in r.output


def test_a_different_spec_is_refused_unless_overwrite(spec_dir):
    d, _ = spec_dir
    out = d / "out"
    run_sweep_file(d / "spec.toml", out, progress=False)
    (d / "other.toml").write_text(SPEC.replace("seed = 3", "seed = 4"))
    r = CliRunner().invoke(app, ["sweep", str(d / "other.toml"), "--out", str(out)])
    assert r.exit_code == 2 and "different sweep" in r.output
    r = CliRunner().invoke(app, ["sweep", str(d / "other.toml"), "--out", str(out), "--overwrite"])
    assert r.exit_code == 0 and "computed 3" in r.output
    assert SweepResults.from_parquet(out).meta["seed"] == 4


def test_inline_config_samples_and_points(spec_dir, tmp_path):
    d, c = spec_dir
    inline = """
seed = 1
replicates = 2
n_samples = 3
memory_budget = "64MB"
[config.model]
maxTurns = 6
[[config.players]]
strategy = "aggressive"
[[config.players]]
strategy = "conservative"
[samples]
"model.regenRate" = [0.05, 0.3]
"model.maxTurns" = [3, 6]
"""
    (d / "s.toml").write_text(inline)
    sp = load_sweep_file(d / "s.toml")
    assert sp.options.round_ints and sp.options.memory_budget == 64_000_000 and len(sp.table) == 3
    res = run_sweep_file(sp, d / "s_out", progress=False)
    back = SweepResults.from_parquet(d / "s_out")
    assert len(back.arenas) == 6 and res.n_chunks == 1
    assert back.arenas["turns_played"].max() <= 6
    pts = """
config = "arena.json"
replicates = 2
[points]
"model.regenRate" = [0.05, 0.1, 0.3]
"""
    (d / "p.toml").write_text(pts)
    sp = load_sweep_file(d / "p.toml")
    assert list(sp.table["model.regenRate"]) == [0.05, 0.1, 0.3]


@pytest.mark.parametrize(
    "text,match",
    [
        ("replicates = 2\n[grid]\n'model.regenRate' = [0.1]\n", "config"),
        ("config = 'arena.json'\n", "exactly one"),
        ("config = 'arena.json'\nfoo = 1\n[grid]\n'model.regenRate' = [0.1]\n", "unknown key"),
        ("config = 'arena.json'\nreplicates = 'x'\n[grid]\n'model.regenRate' = [0.1]\n", "replicates"),
        ("config = 'arena.json'\n[grid]\n'model.regenRat' = [0.1]\n", r"model\.regenRat"),
        ("config = 'nope.json'\n[grid]\n'model.regenRate' = [0.1]\n", "no file"),
        (
            "config = 'arena.json'\n[points]\n'model.regenRate' = [0.1]\n'model.commonsCapacity' = [1.0, 2.0]\n",
            "length",
        ),
    ],
)
def test_spec_errors(spec_dir, text, match):
    d, _ = spec_dir
    (d / "bad.toml").write_text(text)
    with pytest.raises(ValueError, match=match):
        run_sweep_file(load_sweep_file(d / "bad.toml"), d / "bad_out", progress=False)
    r = CliRunner().invoke(app, ["sweep", str(d / "bad.toml"), "--out", str(d / "bad_out")])
    assert r.exit_code == 2 and "error" in r.output


def test_parse_bytes():
    assert parse_bytes("2GB") == 2 * 10**9 and parse_bytes("512MiB") == 512 * 2**20 and parse_bytes(100) == 100
    with pytest.raises(ValueError, match="memory_budget"):
        parse_bytes("lots")


def test_points_aggregated_part_by_part_equal_sweep(spec_dir):
    """A point spanning several parts (replicates > chunk width): the streamed aggregation
    equals sweep()'s."""
    d, c = spec_dir
    spec = {"config": c, "grid": {"model.regenRate": [0.05, 0.1, 0.2]}, "replicates": 13, "seed": 2, "max_batch": 4}
    res = run_sweep_file(spec, d / "many", progress=False)
    assert res.n_chunks == 10
    ref = sweep(c, grid=spec["grid"], replicates=13, seed=2, max_batch=4)
    back = SweepResults.from_parquet(d / "many")
    pd.testing.assert_frame_equal(back.points, ref.points, check_exact=True)
    pd.testing.assert_frame_equal(back.arenas, ref.arenas, check_exact=True)
