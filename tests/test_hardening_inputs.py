"""Issue 35, the library's inputs: the run budget (checked from the counts before anything is
allocated), bounded config reads, user numbers too large for a float, env actions checked at
the edge, and damaged or foreign files named in their errors. Nothing here compiles a run."""

from __future__ import annotations

import json
import os
import tracemalloc
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import bdpd_jax
from bdpd_jax.config.budget import BUDGET_ENV, DEFAULT_RUN_BUDGET, check_budget, run_budget
from bdpd_jax.config.files import MAX_CONFIG_BYTES, write_json
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.results.frames import Results
from bdpd_jax.searches import SearchResults, search
from bdpd_jax.searches.spec import load_search_spec
from bdpd_jax.sweeps.points import grid_points
from bdpd_jax.sweeps.results import SweepResults
from bdpd_jax.sweeps.sweep_file import load_sweep_file, run_sweep_file

SPACE = {"model.regenRate": (0.01, 0.6)}
# a peak this small means the refused run allocated nothing in proportion to its size
SMALL_PEAK = 64 << 20


@pytest.fixture(scope="module")
def config() -> dict:
    return bdpd_jax.default_config().model_dump(mode="json", by_alias=True)


def _refused(call: Callable[[], Any], match: str) -> str:
    """``call()`` raises a ValueError matching ``match`` with a small Python peak; its message."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match) as err:
            call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < SMALL_PEAK, peak
    return str(err.value)


# --------------------------------------------------------------------------- the run budget


def test_search_replicates_past_the_budget_are_refused_before_anything_is_allocated(config):
    msg = _refused(lambda: search(config, SPACE, ("survived_mean", "max"), replicates=10**12), "replicates")
    # the field, its value, the product and the budget
    assert "1000000000000" in msg and "64 population" in msg and f"{DEFAULT_RUN_BUDGET:,}" in msg
    assert "1,000,000,000,000 replicates x 30 turns x 4 players" in msg


def test_a_grid_past_the_budget_is_refused_before_its_product_is_made(config):
    grid = {p: [0.1 + i * 1e-4 for i in range(1000)] for p in ("a.b", "c.d", "e.f", "g.h")}
    msg = _refused(lambda: grid_points(grid), "grid")
    assert "1000 x 1000 x 1000 x 1000 values" in msg and "1,000,000,000,000 points" in msg
    paths = ["model.regenRate", "model.commonsCapacity", "model.initialStock", "players[0].intensity"]
    grid = {p: v for p, v in zip(paths, grid.values(), strict=True)}
    _refused(lambda: bdpd_jax.sweep(config, grid=grid), "grid: .* over the run budget")


def test_n_samples_past_the_budget_is_refused_before_any_is_drawn(config):
    samples = {"model.regenRate": (0.01, 0.5)}
    msg = _refused(lambda: bdpd_jax.sweep(config, samples=samples, n_samples=10**12), "n_samples")
    assert "1,000,000,000,000 points x 1 replicates x 30 turns x 4 players" in msg


def test_sensitivity_sample_sizes_and_explicit_points_are_checked_too(config, monkeypatch):
    from bdpd_jax.sweeps import sensitivity

    problem = {"names": ["model.regenRate"], "bounds": [[0.01, 0.5]]}
    msg = _refused(lambda: sensitivity.sobol(config, problem, n=2**40), "n: 1099511627776 makes a run of")
    assert "3,298,534,883,328 points" in msg  # n (D + 2)
    _refused(lambda: sensitivity.morris(config, problem, n=2**40), "n: 1099511627776")
    monkeypatch.setenv(BUDGET_ENV, "1000")
    points = pd.DataFrame({"model.regenRate": [0.1, 0.2, 0.3]})
    with pytest.raises(ValueError, match="replicates: 10 makes a run of 3 points x 10 replicates x 30 turns"):
        bdpd_jax.sweep(config, points=points, replicates=10)


def test_the_budget_counts_replicates_turns_and_players_and_is_raised_by_the_environment(config, monkeypatch):
    grid = {"model.regenRate": [0.1, 0.2]}
    monkeypatch.setenv(BUDGET_ENV, str(2 * 10 * 30 * 4 - 1))
    assert run_budget() == 2399
    with pytest.raises(ValueError, match="2 points x 10 replicates x 30 turns x 4 players = 2,400"):
        bdpd_jax.sweep(config, grid=grid, replicates=10)
    with pytest.raises(ValueError, match="n_arenas: 100 .* over the run budget of 2,399"):
        bdpd_jax.simulate(config, n_arenas=100, turns=10)
    monkeypatch.setenv(BUDGET_ENV, "lots")
    with pytest.raises(ValueError, match=BUDGET_ENV):
        run_budget()
    monkeypatch.delenv(BUDGET_ENV)
    assert check_budget("x", 1, {"arenas": 10, "turns": 10}, budget=100) == 100
    with pytest.raises(ValueError, match="budget"):
        check_budget("x", 1, {"arenas": 10}, budget=0)


# --------------------------------------------------------------------------- damaged or foreign files


def _cut(path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data[: len(data) // 2])


def test_a_cut_generation_part_is_named(config, tmp_path):
    frame = pd.DataFrame({"generation": [0], "candidate": [0]})
    gens = tmp_path / "generations"
    gens.mkdir()
    frame.to_parquet(gens / "gen-00000.parquet")
    _cut(gens / "gen-00001.parquet", (gens / "gen-00000.parquet").read_bytes())
    with pytest.raises(ValueError, match=r"gen-00001\.parquet'?: not a readable parquet file"):
        search(config, SPACE, ("survived_mean", "max"), out=tmp_path)


def test_a_cut_manifest_is_named(config, tmp_path):
    _cut(tmp_path / "manifest.json", json.dumps({"digest": "0" * 64}).encode())
    with pytest.raises(ValueError, match=r"manifest\.json'?: not valid JSON"):
        search(config, SPACE, ("survived_mean", "max"), out=tmp_path)
    sweep_out = tmp_path / "sweep"
    _cut(sweep_out / "manifest.json", json.dumps({"digest": "0" * 64, "chunk_arenas": 8}).encode())
    spec = {"config": config, "grid": {"model.regenRate": [0.1]}}
    with pytest.raises(ValueError, match=r"manifest\.json'?: not valid JSON"):
        run_sweep_file(spec, sweep_out)
    (sweep_out / "manifest.json").write_text(json.dumps({"digest": 3, "chunk_arenas": 8}))
    with pytest.raises(ValueError, match=r"manifest\.json'?: digest: .*got 3"):
        run_sweep_file(spec, sweep_out)


def _search_dir(tmp_path, **meta: Any):
    pd.DataFrame({"generation": [0], "candidate": [0], "violation": [0.0]}).to_parquet(tmp_path / "history.parquet")
    body = {"names": ["model.regenRate"], "objectives": [["survived_mean", "max"]], "constraints": [], "config": None}
    (tmp_path / "meta.json").write_text(json.dumps({**body, **meta}))
    return tmp_path


def test_search_results_never_follow_a_path_in_their_meta(config, tmp_path):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(config))  # a valid config: taking the string as a path would load it
    (tmp_path / "s").mkdir()
    d = _search_dir(tmp_path / "s", config=str(elsewhere))
    with pytest.raises(ValueError, match=r"meta\.json'?: config: Input should be an object, got '/"):
        SearchResults.from_parquet(d)
    assert SearchResults.from_parquet(_search_dir(d, config=config)).config is not None  # an object is fine


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("names", "abc"),
        ("objectives", 3),
        ("objectives", [["survived_mean", "most"]]),
        ("constraints", [["x", ">=", None]]),
    ],
)
def test_search_results_validate_their_meta(tmp_path, field, value):
    with pytest.raises(ValueError, match=rf"meta\.json'?: {field}"):
        SearchResults.from_parquet(_search_dir(tmp_path, **{field: value}))


def test_sweep_and_run_results_name_their_damaged_files(tmp_path):
    pd.DataFrame({"arena": [0]}).to_parquet(tmp_path / "summary.parquet")
    (tmp_path / "meta.json").write_text(json.dumps({"names": "abc"}))
    (tmp_path / "arenas").mkdir()
    _cut(tmp_path / "points.parquet", (tmp_path / "summary.parquet").read_bytes())
    with pytest.raises(ValueError, match=r"meta\.json'?: names"):
        SweepResults.from_parquet(tmp_path)
    (tmp_path / "meta.json").write_text('{"names": [')
    with pytest.raises(ValueError, match=r"meta\.json'?: not valid JSON"):
        Results.from_parquet(tmp_path)
    (tmp_path / "meta.json").write_text(json.dumps({"names": []}))
    with pytest.raises(ValueError, match=r"arenas'?: not a sweep's arena rows"):
        SweepResults.from_parquet(tmp_path)
    (tmp_path / "arenas" / "chunk=0").mkdir()
    (tmp_path / "summary.parquet").rename(tmp_path / "arenas" / "chunk=0" / "part-0.parquet")
    with pytest.raises(ValueError, match=r"points\.parquet'?: not a readable parquet file"):
        SweepResults.from_parquet(tmp_path)


def test_run_results_never_follow_an_out_path_in_their_meta(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "turns.parquet").mkdir(parents=True)
    pd.DataFrame({"arena": [7], "turn": [1]}).to_parquet(elsewhere / "turns.parquet" / "part-0.parquet")
    d = tmp_path / "run"
    d.mkdir()
    pd.DataFrame({"arena": [0]}).to_parquet(d / "summary.parquet")
    (d / "meta.json").write_text(json.dumps({"out": str(elsewhere)}))
    res = Results.from_parquet(d)
    assert "out" not in res.meta
    with pytest.raises(ValueError, match="kept no history"):  # not the rows of elsewhere/
        _ = res.turns


def test_metadata_is_written_atomically(tmp_path, monkeypatch):
    target = tmp_path / "manifest.json"
    write_json(target, {"digest": "old"})

    def fail(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="disk full"):
        write_json(target, {"digest": "new"})
    assert json.loads(target.read_text()) == {"digest": "old"}  # the old file, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]  # no temp left behind


# --------------------------------------------------------------------------- numbers past a float


HUGE = 10**400  # float(HUGE) raises OverflowError


def test_space_and_constraint_bounds_past_a_float_name_their_field(config):
    with pytest.raises(ValueError, match=r"space\['model.regenRate'\]\[1\]: an integer of ~401 digits is too large"):
        search(config, {"model.regenRate": (0.01, HUGE)}, ("survived_mean", "max"))
    with pytest.raises(ValueError, match=r"constraints\['survived_mean'\]: an integer of ~401 digits is too large"):
        search(config, SPACE, ("survived_mean", "max"), constraints={"survived_mean": (">=", HUGE)})
    with pytest.raises(ValueError, match=r"samples\['model.regenRate'\]\[0\]: .* too large"):
        bdpd_jax.sweep(config, samples={"model.regenRate": (-HUGE, 0.5)}, n_samples=2)


def test_other_user_numbers_past_a_float_are_value_errors():
    from bdpd_jax.config.limits import check_tick_interval, to_float
    from bdpd_jax.config.terms import parse_terms
    from bdpd_jax.sweeps.sweep_file import parse_bytes

    for call, field in [
        (lambda: parse_bytes("1e400GB"), "memory_budget"),
        (lambda: parse_bytes(1e308 * 10), "memory_budget"),
        (lambda: check_tick_interval(HUGE), "tickIntervalMs"),
        (lambda: to_float(-HUGE, "x"), "x"),
        (lambda: to_float(10**5000, "x"), "x"),  # (its repr alone would raise past 4300 digits)
    ]:
        with pytest.raises(ValueError, match=field):
            call()
    with pytest.raises(ValueError, match=r"terms\.tolerance: an integer of ~401 digits"):
        parse_terms({"type": "no_aggression", "tolerance": HUGE})


# --------------------------------------------------------------------------- config files, bounded


@pytest.fixture
def huge_config(tmp_path):
    """A 4 GiB config file that costs no disk (sparse: a seek past the end, one byte written)."""
    p = tmp_path / "huge.json"
    with open(p, "wb") as fh:
        fh.seek(4 << 30)
        fh.write(b"}")
    return p


def test_a_huge_config_file_is_refused_without_being_read(huge_config, tmp_path):
    msg = _refused(lambda: ArenaConfig.load(str(huge_config)), r"config: .*huge\.json.* larger than the limit")
    assert f"{MAX_CONFIG_BYTES:,} bytes" in msg
    _refused(lambda: bdpd_jax.simulate(str(huge_config), n_arenas=1), r"huge\.json.* larger than the limit")
    sweep_spec = tmp_path / "sweep.toml"
    sweep_spec.write_text('config = "huge.json"\n[grid]\n"model.regenRate" = [0.1]\n')
    _refused(lambda: load_sweep_file(sweep_spec), r"huge\.json.* larger than the limit")
    search_spec = tmp_path / "search.toml"
    search_spec.write_text(
        'config = "huge.json"\nobjective = ["survived_mean", "max"]\n[space]\n"model.regenRate" = [0.1, 0.5]\n'
    )
    _refused(lambda: load_search_spec(search_spec), r"huge\.json.* larger than the limit")
    (tmp_path / "big.toml").symlink_to(huge_config)
    _refused(lambda: load_sweep_file(tmp_path / "big.toml"), r"spec: .*big\.toml.* larger than the limit")


def test_a_cut_config_file_is_named(config, tmp_path):
    p = tmp_path / "cut.json"
    _cut(p, json.dumps(config).encode())
    with pytest.raises(ValueError, match=r"config: .*cut\.json' is not valid JSON"):
        ArenaConfig.load(str(p))
    p.write_bytes(b"\xff\xfe{}")
    with pytest.raises(ValueError, match=r"config: .*cut\.json' is not UTF-8"):
        ArenaConfig.load(str(p))
