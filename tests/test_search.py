"""bdpd_jax.search: a known answer against a fine grid with one compile, the ranking and
Pareto logic against plain-Python references, determinism and resuming, the CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import bdpd_jax
from bdpd_jax.run.runner import TRACES
from bdpd_jax.searches import SearchResults, search
from bdpd_jax.searches.ranking import constraints_of, front_mask, minimised, objectives_of, order, violation
from bdpd_jax.searches.space import Space

SPACE = {"model.regenRate": (0.01, 0.6)}
SPACE_NAME = "model.regenRate"
GRID_STEP = 0.01
# the known problem: the least regenRate keeping >= 90 % of arenas alive, 8 generations of 16
# candidates x 8 replicates (the fixture ``known`` runs it; other tests rerun it in part)
KNOWN = dict(
    objective=("model.regenRate", "min"),
    constraints={"survived_mean": (">=", 0.9)},
    population=16,
    generations=8,
    replicates=8,
    seed=0,
)


@pytest.fixture(scope="module")
def config() -> dict:
    return bdpd_jax.default_config().model_dump()  # the seed's payload: 2 conservative + 2 aggressive


@pytest.fixture(scope="module")
def known(config):
    """The least regenRate keeping >= 90 % of arenas alive: CMA-ES and a fine grid."""
    before = TRACES["run"]
    res = search(config, SPACE, **KNOWN)
    compiles = TRACES["run"] - before
    values = list(np.round(np.arange(0.01, 0.6 + 1e-9, GRID_STEP), 4))
    # in chunks of the search's width, so the grid can run the search's compiled program (a
    # sweep's numbers do not depend on its chunking)
    grid = bdpd_jax.sweep(
        config, grid={"model.regenRate": values}, replicates=8, seed=1, common_random=True, max_batch=16 * 8
    )
    ok = grid.points[grid.points["survived_mean"] >= 0.9]
    return res, compiles, float(ok["model.regenRate"].min())


def test_search_finds_the_grid_answer_within_its_resolution_with_one_compile(known):
    res, compiles, grid_min = known
    best = res.best
    assert best["metrics"]["feasible"] and best["metrics"]["survived_mean"] >= 0.9
    assert abs(best["point"]["model.regenRate"] - grid_min) <= GRID_STEP + 1e-9
    assert res.history["generation"].nunique() == 8
    assert compiles <= 1  # eight generations of 16 x 8 arenas: one compiled program (or one already cached)


def test_the_reported_best_is_confirmed_feasible_on_fresh_keys(known):
    """``best`` is judged on fresh replicates drawn from keys no generation used: feasible on
    confirmation, with its interval; the history keeps both estimates."""
    from bdpd_jax.run.runner import arena_keys
    from bdpd_jax.searches.confirm import CONFIRM_REPLICATES
    from bdpd_jax.searches.search import generation_seed

    res = known[0]
    best = res.best
    m = best["metrics"]
    assert best["confirmed"] and m["replicates"] == CONFIRM_REPLICATES == res.meta["confirm"]
    assert m["feasible"] and m["survived_mean"] >= 0.9
    assert m["survived_ci_low"] <= m["survived_mean"] <= m["survived_ci_high"]
    assert best["in_sample"]["replicates"] == 8 and best["in_sample"]["feasible"]
    h = res.history
    confirmed = h[h["confirm_violation"].notna()]
    assert confirmed[SPACE_NAME].nunique() == 8  # the top 8 distinct candidates
    row = h[(h["generation"] == best["generation"]) & (h["candidate"] == best["candidate"])].iloc[0]
    assert (
        row["confirm_survived_mean"] == m["survived_mean"]
        and row["survived_mean"] == best["in_sample"]["survived_mean"]
    )

    def keys(seed: int, n: int) -> set[tuple[int, int]]:
        k = np.asarray(arena_keys(seed, np.arange(n)))
        return set(zip(k[0].tolist(), k[1].tolist(), strict=True))

    searched = set().union(*(keys(generation_seed(0, g), 8) for g in range(8)))
    fresh = keys(res.meta["confirm_seed"], CONFIRM_REPLICATES)
    assert len(fresh) == CONFIRM_REPLICATES and not fresh & searched


def test_confirmation_meets_candidates_inside_the_feasible_set():
    """Many lucky candidates crowd the boundary: half the confirmed are the search's best,
    half spread over the feasible ones, denser near the best."""
    from bdpd_jax.searches.confirm import chosen

    x = np.r_[np.linspace(0.30, 0.301, 40), np.linspace(0.31, 0.6, 30)]
    h = pd.DataFrame({"r": x, "violation": np.r_[np.zeros(40), np.zeros(30)]})
    pts = chosen(h, ["r"], [("r", "min")], 8, 64)["r"].to_numpy()
    assert len(pts) == 8 and list(pts[:4]) == list(x[:4])  # the search's first four
    assert pts.max() == x.max() and (pts[4:] > 0.301).sum() >= 3  # the others inside, to the far end


def test_confidence_bounds_are_constraints(config):
    from bdpd_jax.searches.search import needs_history

    assert not needs_history(["survived_ci_low", "efficiency_ci_high"], ("model.regenRate",))
    with pytest.raises(ValueError, match="confirm"):
        search(config, SPACE, ("survived_mean", "max"), confirm=-1)


LOWERING = "/jax/core/compile/jaxpr_to_mlir_module_duration"  # each program made (compiled or loaded)


def test_a_warm_second_search_compiles_nothing(config, known):
    """The optimiser's programs are cached by method, dimension and population, the run's by
    shape: a second search of the known problem's shapes (other seed, other candidates)
    traces, lowers and compiles nothing."""
    import jax

    from bdpd_jax.searches.methods import TRACES as ES_TRACES

    made: list[str] = []

    def listen(event: str, duration: float, **_: object) -> None:
        if event == LOWERING:
            made.append(event)

    before = (dict(ES_TRACES), dict(TRACES))
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        res = search(config, SPACE, **{**KNOWN, "seed": 7})
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert len(res.history) == 128 and res.meta["loop"] == "device"
    assert (dict(ES_TRACES), dict(TRACES)) == before
    assert made == []


def test_the_device_loop_equals_the_host_loop(config, known):
    """The known problem ran its generations on the device (one scan); the host loop (one
    sweep per generation, reusing the confirmation's compiled program) gives the same history
    bit for bit: same candidates, values, outcomes, ranks. Except GovSim's efficiency: its
    f(0) is floored to whole units, and the two programs' fused multiply-adds put a threshold
    an ulp either side of an integer for a few candidates (docs/semantics/sweeps.md)."""
    res = known[0]
    assert res.meta["loop"] == "device"
    host = search(config, SPACE, **KNOWN, confirm=0, loop="host")
    assert host.meta["loop"] == "host"
    floored = [c for c in host.history.columns if c.startswith("govsim_efficiency_")]
    mine = res.history[[c for c in res.history.columns if not c.startswith("confirm_")]]
    pd.testing.assert_frame_equal(mine.drop(columns=floored), host.history.drop(columns=floored))
    differ = (mine[floored[0]].fillna(-1) != host.history[floored[0]].fillna(-1)).mean()
    assert differ <= 0.05


def test_a_search_resumed_on_the_device_continues_the_same_search(config, known, tmp_path):
    """Four generations written by the host loop, resumed to twelve: the stored four are
    replayed through the optimiser, the device loop continues from its state (one block of
    eight: the known problem's program), and the first eight equal the uninterrupted run's."""
    kw = {**KNOWN, "out": tmp_path / "r", "confirm": 0, "progress": False}
    search(config, SPACE, **{**kw, "generations": 4}, loop="host")
    resumed = search(config, SPACE, **{**kw, "generations": 12})
    assert resumed.meta["loop"] == "device"
    whole = known[0].history
    floored = [c for c in whole.columns if c.startswith(("govsim_efficiency_", "confirm_"))]
    first = resumed.history[resumed.history["generation"] < 8].drop(columns=floored, errors="ignore")
    pd.testing.assert_frame_equal(first, whole.drop(columns=floored))


def test_the_device_loop_says_why_it_cannot_run(config):
    with pytest.raises(ValueError, match="loop: the device loop cannot run this search: its method"):
        search(config, SPACE, generations=1, loop="device", **PARETO)
    with pytest.raises(ValueError, match="integer field"):
        search(config, {"model.maxTurns": (5, 30)}, ("survived_mean", "max"), population=16, loop="device")
    with pytest.raises(ValueError, match="loop"):
        search(config, SPACE, ("survived_mean", "max"), loop="gpu")


def test_best_config_and_parquet_round_trip(known, tmp_path):
    res = known[0]
    cfg = res.config_at(res.best)
    assert cfg.model.engine.regen_rate == pytest.approx(res.best["point"]["model.regenRate"])
    back = SearchResults.from_parquet(res.to_parquet(tmp_path / "s"))
    pd.testing.assert_frame_equal(back.history, res.history)
    assert back.best["point"] == res.best["point"]
    assert back.config_at(back.best).model.engine.regen_rate == cfg.model.engine.regen_rate


def test_history_ranks_match_the_ranking_rule(known):
    h = known[0].history
    for _, gen in h.groupby("generation"):
        feasible = gen[gen["feasible"]].sort_values("rank")
        infeasible = gen[~gen["feasible"]].sort_values("rank")
        if len(feasible) and len(infeasible):
            assert feasible["rank"].max() < infeasible["rank"].min()  # feasible first
        assert feasible["model.regenRate"].is_monotonic_increasing  # then by the objective (min)
        assert infeasible["violation"].is_monotonic_increasing  # infeasible by violation
        assert np.allclose(gen["violation"], np.maximum(0.9 - gen["survived_mean"], 0.0))


# ----------------------------------------------------------------------------- ranking units


def test_order_feasible_first_then_by_violation():
    pts = pd.DataFrame({"x": [5.0, 1.0, 3.0, 2.0, 4.0], "s": [0.95, 0.5, 0.99, 0.7, 0.9]})
    cons = constraints_of({"s": (">=", 0.9)})
    f = minimised(pts, objectives_of(("x", "min")))[:, 0]
    v = violation(pts, cons)
    assert np.allclose(v, [0.0, 0.4, 0.0, 0.2, 0.0])
    assert list(order(f, v)) == [2, 4, 0, 3, 1]  # feasible by x (3, 4, 5), then violation 0.2, 0.4


def test_nan_scores_worst():
    pts = pd.DataFrame({"x": [np.nan, 1.0], "s": [1.0, np.nan]})
    f = minimised(pts, [("x", "max")])[:, 0]
    assert np.isinf(f[0]) and f[1] == -1.0
    assert np.isinf(violation(pts, [("s", ">=", 0.5)])[1])


def _dominated(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all(b <= a) and np.any(b < a))


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.booleans()), min_size=1, max_size=12))
def test_front_is_the_non_dominated_feasible_set(rows):
    f = np.asarray([[a, b] for a, b, _ in rows], float)
    v = np.asarray([0.0 if ok else 1.0 + i for i, (_, _, ok) in enumerate(rows)])
    got = front_mask(f, v)
    feas = np.flatnonzero(v == 0)
    if feas.size == 0:
        assert list(np.flatnonzero(got)) == [int(np.argmin(v))]
        return
    want = np.zeros(len(rows), bool)
    for i in feas:
        want[i] = not any(_dominated(f[i], f[j]) for j in feas if j != i)
    assert np.array_equal(got, want)


def test_bad_arguments_name_the_field(config):
    with pytest.raises(ValueError, match="space"):
        search(config, {"model.regenRate": (0.5, 0.1)}, ("survived_mean", "max"))
    with pytest.raises(ValueError, match="model.nope"):
        search(config, {"model.nope": (0.0, 1.0)}, ("survived_mean", "max"))
    with pytest.raises(ValueError, match="unknown column"):
        search(config, SPACE, ("survival_mean", "max"))
    with pytest.raises(ValueError, match="constraints"):
        search(config, SPACE, ("survived_mean", "max"), constraints={"survived_mean": ("=", 1)})
    with pytest.raises(ValueError, match="nsga2"):
        search(config, SPACE, [("survived_mean", "max"), ("gini_mean", "min")])
    with pytest.raises(ValueError, match="population"):
        search(config, SPACE, ("survived_mean", "max"), population=1)


def test_integer_fields_are_rounded_inside_their_bounds(config):
    from bdpd_jax.config.game import ArenaConfig

    sp = Space.of(ArenaConfig.load(config), {"model.maxTurns": (2.6, 9.4), "model.regenRate": (0.1, 0.2)})
    t = sp.values(np.asarray([[0.0, 0.0], [1.0, 1.0], [0.5, 2.0], [-1.0, 0.5]]))
    assert t["model.maxTurns"].tolist() == [3, 9, 6, 3]
    assert t["model.regenRate"].tolist() == pytest.approx([0.1, 0.2, 0.2, 0.15])


# ----------------------------------------------------------------------------- Pareto, resume, CLI

# the known problem's width (16 candidates x 8 replicates): the generations run its compiled program
PARETO = dict(
    objective=[("survived_mean", "max"), ("model.regenRate", "min")],
    method="nsga2",
    population=16,
    replicates=8,
    seed=3,
)


def test_pareto_search_is_deterministic_and_resumes(config, tmp_path):
    whole = search(config, SPACE, generations=3, **PARETO)
    part = search(config, SPACE, generations=2, out=tmp_path / "r", progress=False, **PARETO)
    assert part.history["generation"].max() == 1
    resumed = search(config, SPACE, generations=3, out=tmp_path / "r", progress=False, **PARETO)
    pd.testing.assert_frame_equal(resumed.history, whole.history)  # same key -> same numbers, resumed or not
    front = whole.front
    assert len(front) >= 1 and front["confirm_feasible"].all()  # judged on fresh replicates
    f = minimised(whole.history, whole.objectives)
    for _, r in front.iterrows():  # no evaluated feasible candidate dominates a front member
        a = np.asarray([-r["survived_mean"], r["model.regenRate"]])
        assert not any(_dominated(a, b) for b in f[whole.history["violation"].to_numpy() <= 0])
    with pytest.raises(ValueError, match="different search"):
        search(config, SPACE, generations=3, out=tmp_path / "r", progress=False, **{**PARETO, "seed": 4})


def test_cli_search_writes_and_resumes(config, tmp_path):
    import json

    from typer.testing import CliRunner

    from bdpd_jax.cli import app

    (tmp_path / "arena.json").write_text(json.dumps(bdpd_jax.default_config().model_dump(mode="json")))
    (tmp_path / "s.toml").write_text(
        'config = "arena.json"\nobjective = [["survived_mean", "max"], ["model.regenRate", "min"]]\n'
        'method = "nsga2"\npopulation = 16\ngenerations = 2\nreplicates = 8\nseed = 3\n'
        '[space]\n"model.regenRate" = [0.01, 0.6]\n'
    )
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["search", str(tmp_path / "s.toml"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "best" in r.output and (out / "history.parquet").is_file()
    assert len(list((out / "generations").glob("gen-*.parquet"))) == 2
    first = SearchResults.from_parquet(out).history
    r = CliRunner().invoke(app, ["search", str(tmp_path / "s.toml"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    pd.testing.assert_frame_equal(SearchResults.from_parquet(out).history, first)
    r = CliRunner().invoke(app, ["search", str(tmp_path / "missing.toml"), "--out", str(out)])
    assert r.exit_code == 2 and "no file" in r.output
