"""Sweeps at scale: the arena axis sharded over local devices (two forced CPU devices,
tests/conftest.py), chunks sized from a memory budget, and chunks dispatched to a Dask
cluster of two local worker processes; every result bit-identical to one device, one
process."""

from __future__ import annotations

import copy
import resource
import time

import jax
import numpy as np
import pandas as pd
import pytest

import bdpd_jax
from bdpd_jax.run.options import RunOptions
from bdpd_jax.run.simulate import TRACES
from bdpd_jax.sweeps.sweep import SweepPlan, grid_points, sweep  # noqa: F401

GRID = {"model.regenRate": [0.05, 0.12, 0.2], "players[1].intensity": [0.3, 0.9]}


@pytest.fixture(scope="module")
def cfg():
    from payloads import sweep_config

    return sweep_config()


@pytest.fixture(scope="module")
def one_device(cfg):
    return sweep(cfg, grid=GRID, replicates=5, seed=4, devices=1, history=True, max_batch=7)


NDEV = len(jax.local_devices())


def test_two_forced_devices_bit_identical_to_one(cfg, one_device):
    """On the suite's two forced CPU devices (tests/conftest.py sets jax_num_cpu_devices before
    the backend starts), in this process, so the one-device reference and the chunk programs are
    the other tests' compiled programs: every width gives the one-device numbers, odd widths
    padded to a multiple of the devices; the arenas are sharded; no cross-device communication."""
    import re

    from bdpd_jax.run.simulate import arena_keys, compiled_init, compiled_run

    assert len(jax.local_devices()) == 2
    assert one_device.meta["n_devices"] == 1
    for mb in (7, 30, 131072):  # odd widths are padded to a multiple of the 2 devices
        r = sweep(cfg, grid=GRID, replicates=5, seed=4, history=True, max_batch=mb)
        assert r.meta["n_devices"] == 2 and r.meta["chunk_arenas"] % 2 == 0, r.meta
        pd.testing.assert_frame_equal(r.arenas, one_device.arenas, check_exact=True)
        pd.testing.assert_frame_equal(r.points, one_device.points, check_exact=True)
    plan = SweepPlan(bdpd_jax.lab.prepare(cfg), grid_points(GRID), RunOptions(replicates=5, seed=4))
    x = plan.put(np.zeros((3, plan.run_width), np.float32))
    assert len(x.sharding.device_set) == 2
    assert {s.data.shape for s in x.addressable_shards} == {(3, plan.run_width // 2)}
    # the partitioned program has no cross-device communication (each device runs its arenas)
    pt = np.arange(plan.run_width) // 5
    params = jax.tree_util.tree_unflatten(plan.treedef, [plan.put(x[..., pt]) for x in plan.stacked])
    keys = plan.put(arena_keys(4, np.arange(plan.run_width)))
    state = compiled_init(plan.game)(keys, params)
    hlo = compiled_run(plan.game, plan.chunk_turns, False, 1).lower(keys, state, params).compile().as_text()
    assert not re.findall("all-gather|all-reduce|collective-permute|all-to-all", hlo)
    assert state.wealth.sharding.spec[-1] == "arenas"


@pytest.mark.parametrize("max_batch", [7, 131072])
def test_all_local_devices_equal_one_device(cfg, one_device, max_batch):
    """Default = every local device of this process (1 or 2 here)."""
    r = sweep(cfg, grid=GRID, replicates=5, seed=4, history=True, max_batch=max_batch)
    assert r.meta["n_devices"] == NDEV and r.meta["chunk_arenas"] % NDEV == 0
    pd.testing.assert_frame_equal(r.arenas, one_device.arenas, check_exact=True)
    pd.testing.assert_frame_equal(r.points, one_device.points, check_exact=True)
    with pytest.raises(ValueError, match="devices"):
        sweep(cfg, grid=GRID, devices=NDEV + 1)


def test_memory_budget_sizes_chunks(cfg, one_device):
    plan = SweepPlan(
        bdpd_jax.lab.prepare(cfg),
        grid_points(GRID),
        RunOptions(replicates=5, seed=4, history=True, memory_budget=10**9),
    )
    per = plan.arena_bytes
    assert per > 0
    budget = 7 * per + per // 2  # room for 7 arenas -> chunks of 7 (6 on 2 devices)
    r = sweep(cfg, grid=GRID, replicates=5, seed=4, history=True, memory_budget=budget)
    width = 7 // NDEV * NDEV
    assert r.meta["chunk_arenas"] == width and r.meta["n_chunks"] == -(-30 // width)
    assert r.meta["chunk_arenas"] * per <= budget
    pd.testing.assert_frame_equal(r.arenas, one_device.arenas, check_exact=True)
    with pytest.raises(ValueError, match="memory_budget"):
        sweep(cfg, grid=GRID, memory_budget=0)


@pytest.mark.heavy
def test_many_arenas_with_summaries_only(cfg):
    """1 000 000 arenas with BDPD_HEAVY=1 (20 000 in CI): chunks from a 256 MB budget, one
    compilation, bounded memory."""
    from payloads import size

    n = size(20_000, 1_000_000)
    c = copy.deepcopy(cfg)
    c["model"]["maxTurns"] = 30
    grid = {"model.regenRate": [0.05, 0.1, 0.15, 0.2], "players[1].intensity": [0.3, 0.6, 0.9, 1.0]}
    reps = n // 16
    budget = 256 * 2**20
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    before = TRACES["run"]
    r = sweep(c, grid=grid, replicates=reps, seed=1, memory_budget=budget, progress=False)
    wall = time.perf_counter() - t0
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    assert len(r.arenas) == 16 * reps and len(r.points) == 16
    assert r.meta["chunk_arenas"] * r.meta["arena_bytes_estimate"] <= budget
    assert TRACES["run"] - before <= 1
    assert (r.points["replicates"] == reps).all()
    print(
        f"{len(r.arenas)} arenas in {wall:.1f} s, {r.meta['n_chunks']} chunk(s) of {r.meta['chunk_arenas']}, "
        f"peak RSS grew {(rss1 - rss0) / 2**20:.0f} MiB"
    )


def test_dask_two_workers_equal_single_process(cfg, one_device, tmp_path):
    """Two worker processes on loopback: every worker compiles once, results identical."""
    pytest.importorskip("dask.distributed")
    from dask.distributed import Client, LocalCluster

    from bdpd_jax.sweeps.distributed import sweep_on_cluster
    from bdpd_jax.sweeps.sweep_file import run_sweep_file

    spec = {"config": cfg, "grid": GRID, "replicates": 5, "seed": 4, "history": True, "max_batch": 7}
    with (
        LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        info: list = []
        r = sweep_on_cluster(client, cfg, grid=GRID, replicates=5, seed=4, history=True, max_batch=7, info=info)
        pids = {i["pid"] for i in info}
        assert len(info) == r.meta["n_chunks"] and len(pids) == 2, info
        for pid in pids:  # each worker traced (compiled) the chunk program once
            assert max(i["traces"]["run"] for i in info if i["pid"] == pid) == 1
        info2: list = []
        out = run_sweep_file(spec, tmp_path / "dask", client=cluster.scheduler_address, info=info2)  # by address
        assert sorted(out.computed) == list(range(out.n_chunks))
        assert max(i["traces"]["run"] for i in info2) == 1  # the plan is new, the program is not
    pd.testing.assert_frame_equal(r.arenas, one_device.arenas, check_exact=True)
    pd.testing.assert_frame_equal(r.points, one_device.points, check_exact=True)
    from bdpd_jax.sweeps.sweep import SweepResults

    back = SweepResults.from_parquet(tmp_path / "dask")
    pd.testing.assert_frame_equal(back.arenas, one_device.arenas, check_exact=True)


def test_separable_build_equals_per_point_build(cfg, monkeypatch):
    """Many points: one build per distinct value of each parameter, composed, equals a
    build of every point (and is checked against full builds of a spread of points)."""
    from bdpd_jax.sweeps import plan as sw

    grid = {
        "model.regenRate": [0.05, 0.1, 0.2, 0.3],
        "players[1].intensity": [0.3, 0.6, 0.9],
        "model.maxTurns": [6, 12],
        "observability.commonsStock.noise": [0.1, 0.3],
        "model.commonsCapacity": [100.0, 150.0, 200.0],
    }
    fast = sweep(cfg, grid=grid, replicates=2, seed=7)
    assert fast.meta["build"] == "separable"
    monkeypatch.setattr(sw, "SEPARABLE_MIN_POINTS", 10**9)
    slow = sweep(cfg, grid=grid, replicates=2, seed=7)
    assert slow.meta["build"] == "per point"
    pd.testing.assert_frame_equal(fast.arenas, slow.arenas, check_exact=True)
    monkeypatch.undo()
    box = {"model.regenRate": (0.05, 0.3), "players[1].intensity": (0.2, 1.0)}
    before = TRACES["run"]  # all values distinct: per point; 144 x 2 arenas, the grid's program
    assert sweep(cfg, samples=box, n_samples=144, replicates=2, seed=1).meta["build"] == "per point"
    assert TRACES["run"] == before


def test_sensitivity_transform_and_gini(cfg):
    from bdpd_jax import sensitivity

    def to_paths(f):
        return pd.DataFrame({"model.regenRate": f["r"], "players[0].intensity": f["i"], "players[1].intensity": f["i"]})

    X = np.array([[0.05, 0.3], [0.2, 0.9]])
    f = sensitivity.model(cfg, ["r", "i"], outputs=("gini", "equality"), replicates=2, seed=1, transform=to_paths)
    y = f(X)
    np.testing.assert_allclose(y[:, 0], 1 - y[:, 1], rtol=1e-12)
    ref = sweep(cfg, points=to_paths(pd.DataFrame(X, columns=["r", "i"])), replicates=2, seed=1, common_random=True)
    np.testing.assert_allclose(
        y[:, 1],
        ref.points.get("equality_mean", ref.arenas.groupby("point")["equality"].mean()).to_numpy(float),
        rtol=1e-12,
    )
    assert sensitivity.scale_list([1, 3, 10], np.array([0.0, 2.0])) == [[0.0, 0.0, 0.0], [2.0, 6.0, 20.0]]
