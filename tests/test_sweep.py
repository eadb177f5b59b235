"""bdpd_jax.sweep / bdpd_jax.sweeps.sensitivity: one compiled program per sweep, arenas equal to
simulate() bit for bit, replicate aggregation, path errors, SALib bridge."""

from __future__ import annotations

import copy

import jax
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bdpd_jax
from bdpd_jax import sensitivity
from bdpd_jax.run.options import RunOptions
from bdpd_jax.run.simulate import TRACES, run_whole
from bdpd_jax.sweeps.sweep import SweepResults, aggregate, apply_values, config_base, parse_path, sweep

GRID = {"model.regenRate": [0.05, 0.2], "players[1].intensity": [0.3, 0.9]}
REPS = 3
SEED = 5


@pytest.fixture(scope="module")
def cfg():
    from payloads import sweep_config

    return sweep_config()


@pytest.fixture(scope="module")
def grid_run(cfg):
    return sweep(cfg, grid=GRID, replicates=REPS, seed=SEED)


def _at(cfg, row):
    c = copy.deepcopy(cfg)
    c["model"]["regenRate"] = float(row["model.regenRate"])
    c["players"][1]["intensity"] = float(row["players[1].intensity"])
    return c


def test_grid_layout(grid_run):
    a = grid_run.arenas
    assert len(a) == 4 * REPS and list(a.columns[:5]) == ["point", "replicate", *GRID, "arena"]
    np.testing.assert_array_equal(a["arena"], np.arange(12))
    np.testing.assert_array_equal(a["point"], np.arange(12) // REPS)
    np.testing.assert_array_equal(a["replicate"], np.arange(12) % REPS)
    assert list(zip(grid_run.points["model.regenRate"], grid_run.points["players[1].intensity"], strict=True)) == [
        (0.05, 0.3),
        (0.05, 0.9),
        (0.2, 0.3),
        (0.2, 0.9),
    ]


def test_compiles_once_for_any_values(cfg, grid_run):
    before = dict(TRACES)
    other = sweep(
        cfg, grid={"model.regenRate": [0.08, 0.3], "players[1].intensity": [0.5, 1.0]}, replicates=REPS, seed=SEED + 1
    )
    assert dict(TRACES) == before
    assert not other.arenas["wealth_0"].equals(grid_run.arenas["wealth_0"])


def assert_same_summary(got: pd.DataFrame, ref: pd.DataFrame, ignore=()):
    """Bit for bit, every column (the outcome columns are computed per arena inside the run's
    program: kernels/outcomes.py)."""
    cols = [c for c in ref.columns if c not in ignore]
    got = got.reset_index(drop=True)
    pd.testing.assert_frame_equal(got[cols], ref[cols].reset_index(drop=True), check_exact=True)


@pytest.mark.parametrize("i", [0, 4, 11])
def test_arena_equals_simulate(cfg, grid_run, i):
    row = grid_run.arenas.iloc[i]
    ref = bdpd_jax.simulate(_at(cfg, row), n_arenas=1, seed=SEED, arena_offset=i, history=False).summary
    assert_same_summary(grid_run.arenas.iloc[[i]], ref)


def test_a_leaf_the_same_at_every_point_is_broadcast_with_the_same_numbers(cfg):
    """regenRate swept over one value: its params leaf is placed once and broadcast in the
    program (the intensity's is taken at each arena's point); every arena still equals
    simulate bit for bit, and the program differs from the grid's only by that shape."""
    from bdpd_jax.sweeps.plan import SweepPlan
    from bdpd_jax.sweeps.points import grid_points

    grid = {"model.regenRate": [0.2], "players[1].intensity": [0.3, 0.9]}
    r = sweep(cfg, grid=grid, replicates=REPS, seed=SEED, devices=1)  # (one device: the one-program path)
    plan = SweepPlan(bdpd_jax.lab.prepare(cfg), grid_points(grid), RunOptions(replicates=REPS, seed=SEED, devices=1))
    shapes = {x.shape[-1] for x in jax.tree_util.tree_leaves(plan.placed)}
    assert shapes == {1, 2}  # shared leaves once, the intensity's per point
    for i in (0, 5):
        ref = bdpd_jax.simulate(_at(cfg, r.arenas.iloc[i]), n_arenas=1, seed=SEED, arena_offset=i, history=False)
        assert_same_summary(r.arenas.iloc[[i]], ref.summary)
    before = dict(TRACES)
    grid = {"model.regenRate": [0.3], "players[1].intensity": [0.1, 0.5]}
    sweep(cfg, grid=grid, replicates=REPS, seed=SEED, devices=1)
    assert dict(TRACES) == before  # the same leaves varied: the same program


def test_history_and_chunks(cfg, grid_run):
    """max_batch chunks (the last padded) change nothing; history adds metric means and
    the summary still equals simulate(history=True)."""
    h = sweep(cfg, grid=GRID, replicates=REPS, seed=SEED, history=True, max_batch=5)
    assert h.meta["n_chunks"] == 3
    cols = list(grid_run.arenas.columns)  # every outcome from the kernel's tally: the same with history
    pd.testing.assert_frame_equal(h.arenas[cols], grid_run.arenas[cols], check_exact=True)
    i = 7
    ref = bdpd_jax.simulate(_at(cfg, h.arenas.iloc[i]), n_arenas=1, seed=SEED, arena_offset=i)
    assert_same_summary(h.arenas.iloc[[i]], ref.summary)
    turns = ref.turns
    for m in ("cooperation_index", "silent_defection"):
        assert h.arenas[f"mean_{m}"].iloc[i] == pytest.approx(turns[m].astype(float).mean(), rel=1e-12)
        assert f"mean_{m}_ci_low" in h.points


def test_replicate_aggregation_by_hand(grid_run):
    a, p = grid_run.arenas, grid_run.points
    for k in range(4):
        x = a.loc[a.point == k, "wealth_mean"].to_numpy()
        m, sd = x.mean(), x.std(ddof=1)
        row = p.loc[p.point == k].iloc[0]
        assert row["replicates"] == REPS and row["wealth_mean_n"] == REPS
        assert row["wealth_mean_mean"] == pytest.approx(m, rel=1e-12)
        assert row["wealth_mean_sd"] == pytest.approx(sd, rel=1e-12)
        assert row["wealth_mean_ci_low"] == pytest.approx(m - 1.96 * sd / np.sqrt(REPS), rel=1e-12)
        assert row["wealth_mean_ci_high"] == pytest.approx(m + 1.96 * sd / np.sqrt(REPS), rel=1e-12)
        s = a.loc[a.point == k, "survived"].to_numpy(float)
        assert row["survived_mean"] == pytest.approx(s.mean())
    w = a[[f"wealth_{j}" for j in range(4)]].to_numpy(float).mean(axis=1)
    np.testing.assert_allclose(a["wealth_mean"], w, rtol=1e-12)


def test_points_from_dataframe_equal_grid(cfg, grid_run):
    pts = grid_run.points[list(GRID)]
    before = dict(TRACES)
    r = sweep(cfg, points=pts, replicates=REPS, seed=SEED)
    assert dict(TRACES) == before
    pd.testing.assert_frame_equal(r.arenas, grid_run.arenas, check_exact=True)
    r2 = sweep(cfg, points=pts.to_numpy(), names=list(GRID), replicates=REPS, seed=SEED)
    pd.testing.assert_frame_equal(r2.points, grid_run.points, check_exact=True)


def test_bad_path_and_value_errors(cfg):
    with pytest.raises(ValueError, match=r"model\.regenRat"):
        sweep(cfg, grid={"model.regenRat": [0.1]})
    with pytest.raises(ValueError, match=r"players\[9\]\.intensity"):
        sweep(cfg, grid={"players[9].intensity": [0.5]})
    with pytest.raises(ValueError, match=r"observability\.commonsStock\.nois"):
        sweep(cfg, grid={"observability.commonsStock.nois": [0.5]})
    with pytest.raises(ValueError, match=r"model\.regenRate=-1\.0"):
        sweep(cfg, grid={"model.regenRate": [0.1, -1.0]})
    with pytest.raises(ValueError, match="exactly one"):
        sweep(cfg, grid=GRID, points=pd.DataFrame({"model.regenRate": [0.1]}))


def test_structural_change_is_rejected(cfg):
    with pytest.raises(ValueError, match=r"players\[0\]\.strategy.*static structure"):
        sweep(cfg, grid={"model.regenRate": [0.1], "players[0].strategy": ["conservative", "aggressive"]})


def test_paths_select_by_id_and_name(cfg):
    assert parse_path("perturbations[g].payload.ladder") == [
        ("key", "perturbations"),
        ("select", "g"),
        ("key", "payload"),
        ("key", "ladder"),
    ]
    c = copy.deepcopy(cfg)
    c["players"][2]["name"] = "ada"
    c["perturbations"] = [
        {"id": "g", "type": "sanction_graduated", "trigger": {"kind": "pact_violation"}, "payload": {"ladder": [1, 3]}}
    ]
    base = config_base(bdpd_jax.ArenaConfig.model_validate(c))
    out = apply_values(
        base,
        ["perturbations[g].payload.ladder", "players[ada].reductionFactor", "observability.commonsStock.noise"],
        [[2.0, 4.0, 8.0], 0.25, 0.3],
    )
    assert out.perturbations[0].payload.ladder == [2.0, 4.0, 8.0]
    assert out.players[2].reduction_factor == 0.25 and out.observability["commonsStock"].noise == 0.3
    assert base.given["perturbations"][0]["payload"]["ladder"] == [1.0, 3.0]  # the base is untouched
    # only the swept fields are added to the user's fields (model_fields_set is kept)
    assert out.observability["regenRate"].model_fields_set == {"visible"}
    assert out.players[2].model_fields_set == {"strategy", "reduction_factor", "private_resource", "name"}
    with pytest.raises(ValueError, match=r"perturbations\[nope\]"):
        apply_values(base, ["perturbations[nope].payload.ladder"], [[1.0]])


def test_samples_are_seeded_and_in_bounds(cfg):
    box = {"model.regenRate": (0.05, 0.25), "players[1].intensity": (0.2, 1.0)}
    a = sweep(cfg, samples=box, n_samples=4, replicates=REPS, seed=3)
    b = sweep(cfg, samples=box, n_samples=4, replicates=REPS, seed=3)
    pd.testing.assert_frame_equal(a.arenas, b.arenas, check_exact=True)
    for k, (lo, hi) in box.items():
        assert a.points[k].between(lo, hi).all()


def test_parquet_round_trip(grid_run, tmp_path):
    grid_run.to_parquet(tmp_path / "sw")
    assert (tmp_path / "sw" / "arenas" / "chunk=0").is_dir()
    back = SweepResults.from_parquet(tmp_path / "sw")
    pd.testing.assert_frame_equal(back.arenas, grid_run.arenas, check_exact=True)
    pd.testing.assert_frame_equal(back.points, grid_run.points, check_exact=True)
    assert back.names == list(GRID) and back.meta["replicates"] == REPS


def test_sensitivity_model_shape_and_determinism(cfg, grid_run):
    names = list(GRID)
    X = grid_run.points[names].to_numpy()
    f = sensitivity.model(
        cfg, names, outputs=("survived", "wealth_mean"), replicates=REPS, seed=SEED, common_random=False
    )
    y1, y2 = f(X), f(X)
    assert y1.shape == (4, 2)
    np.testing.assert_array_equal(y1, y2)
    np.testing.assert_array_equal(y1[:, 1], grid_run.points["wealth_mean_mean"].to_numpy())
    # common random numbers (the default): replicate r of every point draws from (seed, r)
    g = sensitivity.model(cfg, names, outputs=("wealth_mean",), replicates=REPS, seed=SEED)
    crn = sweep(cfg, points=grid_run.points[names], replicates=REPS, seed=SEED, common_random=True)
    np.testing.assert_array_equal(g(X)[:, 0], crn.points["wealth_mean_mean"].to_numpy())
    i = 10  # point 3, replicate 1
    ref = bdpd_jax.simulate(_at(cfg, crn.arenas.iloc[i]), n_arenas=1, seed=SEED, arena_offset=1, history=False)
    assert_same_summary(crn.arenas.iloc[[i]], ref.summary, ignore=("arena",))
    with pytest.raises(ValueError, match="outputs"):
        sensitivity.model(cfg, names, outputs=("nope",))(X)


def test_tiny_sobol_and_morris(cfg):
    # (an aggressive player's intensity is moot here: its harvest is capped by its capacity)
    problem = {"names": ["model.regenRate", "players[1].privateResource"], "bounds": [[0.02, 0.3], [5, 80]]}
    s = sensitivity.sobol(cfg, problem, n=16, outputs=("wealth_mean",), seed=1)
    assert list(s["parameter"]) == problem["names"] and (s["output"] == "wealth_mean").all()
    vals = s[["S1", "S1_conf", "ST", "ST_conf"]].to_numpy()
    assert np.isfinite(vals).all()
    assert ((s["S1"] > -0.5) & (s["S1"] < 1.5) & (s["ST"] > -0.1) & (s["ST"] < 1.5)).all()
    assert s["ST"].iloc[1] > s["ST"].iloc[0]  # initial wealth drives mean wealth, not regen
    m = sensitivity.morris(cfg, problem, n=4, outputs=("wealth_mean",), seed=1)
    assert len(m) == 2 and np.isfinite(m[["mu", "mu_star", "sigma"]].to_numpy()).all()
    assert (m["mu_star"] >= 0).all() and m["mu_star"].iloc[1] > m["mu_star"].iloc[0]


def test_one_program_sweep_equals_the_chunked_run(cfg, monkeypatch):
    """A sweep of one turn chunk without history on one device runs as simulate's one program
    (run.simulate.run_whole, params taken at each arena's point inside it, the leaves equal at
    every point broadcast); the same sweep in several turn chunks goes through run_batch, and
    on the test processes' two devices through the sharded chunks: every arena row and point
    is the same, with points differing in turns (per-arena efficiency) and common random
    numbers; and each arena equals simulate's (its point's turns and efficiency). (devices=1:
    this process has two CPU devices, tests/conftest.py.)"""
    from bdpd_jax.sweeps import plan as plan_mod
    from bdpd_jax.sweeps import sweep as sweep_mod

    whole = []
    monkeypatch.setattr(plan_mod, "run_whole", lambda *a, **k: whole.append(1) or run_whole(*a, **k))
    table = pd.DataFrame({"model.regenRate": [0.05, 0.2, 0.3], "model.maxTurns": [12, 12, 9]})
    kw = RunOptions(replicates=3, seed=SEED, turns=None, common_random=True, progress=False)
    one = sweep_mod.run_points(cfg, table, kw.replace(devices=1))
    assert whole == [1]  # the one-program path
    sharded = sweep_mod.run_points(cfg, table, kw)
    assert whole == [1] and sharded.meta["n_devices"] == 2
    monkeypatch.setattr(plan_mod, "default_chunk", lambda n: 5)
    chunked = sweep_mod.run_points(cfg, table, kw.replace(devices=1, memory_budget=1 << 40))  # a new plan (3 chunks)
    assert whole == [1]
    for other in (sharded, chunked):
        pd.testing.assert_frame_equal(one.arenas, other.arenas, check_exact=True)
        pd.testing.assert_frame_equal(one.points, other.points, check_exact=True)
    # points with different maxTurns share one scan (the longest; shorter games freeze) and each
    # keeps its own turns and GovSim efficiency (f0 = r K / 4 of its regenRate): as simulate
    a = one.arenas
    assert (a["turns_played"] <= a["model.maxTurns"]).all() and (
        a.loc[a["model.maxTurns"] == 9, "turns_played"] <= 9
    ).all()
    for i in (1, 7):  # point 0 (12 turns), point 2 (9 turns); common random numbers: the replicate's key
        c = copy.deepcopy(cfg)
        c["model"]["maxTurns"] = int(a["model.maxTurns"].iloc[i])
        c["model"]["regenRate"] = float(a["model.regenRate"].iloc[i])
        ref = bdpd_jax.simulate(c, n_arenas=1, seed=SEED, arena_offset=i % 3, history=False).summary
        assert_same_summary(a.iloc[[i]], ref, ignore=("arena",))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_aggregate_equals_a_groupby_reference(data):
    """Per-point statistics against pandas' groupby: shuffled points, unequal replicates, NaN
    and NA (a nullable Int64 column), points with no value, one replicate (NaN sd)."""
    reps = data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=5))
    pts = np.repeat(np.arange(len(reps)), reps)
    order = data.draw(st.permutations(range(len(pts))))
    n = len(pts)
    floats = st.one_of(st.floats(-1e6, 1e6), st.just(float("nan")))
    x = np.asarray(data.draw(st.lists(floats, min_size=n, max_size=n)), float)
    ints = data.draw(st.lists(st.one_of(st.integers(0, 50), st.none()), min_size=n, max_size=n))
    frame = pd.DataFrame({"point": pts, "model.regenRate": pts * 0.1, "x": x, "i": pd.array(ints, dtype="Int64")})
    frame = frame.iloc[list(order)].reset_index(drop=True)
    got = aggregate(frame, ["model.regenRate"], ["x", "i"]).set_index("point")
    for m in ("x", "i"):
        g = frame[m].astype(float).groupby(frame["point"])
        np.testing.assert_array_equal(got[f"{m}_n"].to_numpy(), g.count().to_numpy())
        np.testing.assert_allclose(got[f"{m}_mean"].to_numpy(), g.mean().to_numpy(), rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(got[f"{m}_sd"].to_numpy(), g.std(ddof=1).to_numpy(), rtol=1e-9, atol=1e-6)
    np.testing.assert_array_equal(got["replicates"].to_numpy(), reps)
