"""A new engine as one file: a toy engine (constant regrowth) and its config model, registered
here with one call and no edit anywhere else, runs in ``simulate``, ``sweep`` (its own
parameter swept, one compile), a live ``Arena`` and the server (create, join, tick, summary);
tests/host/test_dashboard_toy_engine.py draws it on the dashboard in a real browser."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from fastapi.testclient import TestClient
from pydantic import Field

import bdpd_jax as bj
from bdpd_jax.config.engines import EngineConfig, register_engine, unregister_engine
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.kernels.engines import Engine
from bdpd_jax.kernels.params import farr
from bdpd_jax.run.simulate import TRACES


class ConstParams(eqx.Module):
    initial: jax.Array  # float[]
    regrowth: jax.Array  # float[], units added after every harvest
    floor: jax.Array  # float[], collapse below it


class ConstState(eqx.Module):
    stock: jax.Array  # float[]
    regrown: jax.Array  # float[], units regrown so far (the engine's own recorded variable)


class ConstantRegrowth(Engine):
    """The stock gains ``regrowth`` units a turn; f(s) = regrowth (it restores any stock)."""

    name = "toy_constant"
    variables = ("commonsStock", "sustainabilityThreshold")
    recorded = ("regrown",)
    features = frozenset({"stock"})
    stock_label = "biomass"

    def params_from_model(self, model):
        return ConstParams(farr(model.commons_initial), farr(model.regrowth), farr(model.floor))

    def sustainable_yield(self, model):
        return float(model.regrowth)

    def sustainability_threshold(self, stock, params):
        return jnp.broadcast_to(params.regrowth, jnp.shape(stock))

    def init(self, p):
        return ConstState(stock=p.initial, regrown=jnp.zeros_like(p.initial))

    def stock(self, s):
        return s.stock

    def step_one(self, s, demand, u, p):
        got = jnp.clip(demand, 0.0, s.stock)
        return ConstState(stock=s.stock - got, regrown=s.regrown), got, jnp.zeros((), bool), jnp.zeros_like(got)

    def step(self, s, p):
        return ConstState(stock=s.stock + p.regrowth, regrown=s.regrown + p.regrowth), p.regrowth

    def check_end(self, s, p):
        return s.stock < p.floor

    def reference(self, s, p):
        return p.initial

    def extra_observations(self, s, p):
        return {"commonsStock": s.stock}

    def recorded_values(self, s):
        return {"regrown": s.regrown}


class ConstantConfig(EngineConfig):
    commons_initial: float = Field(50.0, ge=0)
    regrowth: float = Field(4.0, ge=0, le=1000)
    floor: float = Field(1.0, ge=0)


@pytest.fixture(scope="module")
def toy():
    eng = register_engine(ConstantRegrowth(), ConstantConfig)  # the one registration line
    yield eng
    unregister_engine(eng.name)


def config(**model) -> dict:
    return {
        "model": {"engineMode": "toy_constant", "maxTurns": 6, "maxPlayers": 2, **model},
        "observability": {"sustainabilityThreshold": {"visible": True}},
        "players": [{"strategy": "threshold_taker"}, {"strategy": "idle"}],
    }


def test_config_is_validated_by_the_engine_model(toy):
    m = bj.ArenaConfig.load(config(regrowth=6.0)).model
    assert (m.engine.regrowth, m.engine.commons_initial, m.engine.floor) == (6.0, 50.0, 1.0)
    with pytest.raises(ValueError, match="model.regrowth"):
        bj.ArenaConfig.load(config(regrowth=-1.0))
    with pytest.raises(ValueError, match="model.regenRate: not a field of engineMode='toy_constant'"):
        bj.ArenaConfig.load(config(regenRate=0.1))


def test_simulate(toy):
    res = bj.simulate(config(regrowth=6.0), n_arenas=2, seed=0)
    # the threshold taker takes its share f/N = 3 each turn; the stock stays at 50 - 3 + 6 ...
    assert (res.players[res.players.player == 0].actual == 3.0).all()
    s = res.summary
    assert (s.govsim_total_gain == 18.0).all() and (s.govsim_over_usage == 0).all()
    assert (s.govsim_efficiency == 18.0 / (6 * 6.0)).all()


def test_sweep_of_its_own_parameter_compiles_once(toy):
    bj.sweep(config(), grid={"model.regrowth": [2.0, 4.0, 6.0, 7.0]}, replicates=2, seed=0)  # warm (same shape)
    before = dict(TRACES)
    sw = bj.sweep(config(), grid={"model.regrowth": [1.0, 3.0, 5.0, 8.0]}, replicates=2, seed=0)
    assert dict(TRACES) == before  # no new trace: the swept parameter is a dynamic leaf
    p = sw.points.set_index("model.regrowth")
    np.testing.assert_allclose(p.govsim_total_gain_mean.to_numpy(), np.asarray([1.0, 3.0, 5.0, 8.0]) / 2 * 6)


def test_live_arena_equals_simulate(toy):
    cfg = config(regrowth=5.0)
    arena = Arena(cfg, seed=3)
    arena.run()
    res = bj.simulate(cfg, n_arenas=1, seed=3)
    assert [r["stock"] for r in arena.records] == pytest.approx(res.turns.stock.tolist())
    assert [r["engine"]["regrown"] for r in arena.records] == pytest.approx(res.turns.regrown.tolist())
    assert arena.summary()["govsim"]["govsim_total_gain"] == res.summary.govsim_total_gain.iloc[0]


def test_server_create_join_tick_summary(toy, tmp_path):
    from bdpd_jax.host.server import create_app

    body = {**config(), "players": [{"strategy": "threshold_taker", "name": "t0"}], "seed": 1}
    body["model"]["minPlayers"] = 2
    with TestClient(create_app(tmp_path)) as client:
        r = client.post("/api/arenas", json=body)
        assert r.status_code == 200, r.text
        created = r.json()
        aid = created["arenaId"]
        owner, akey = {"X-Owner-Key": created["ownerKey"]}, {"X-Arena-Key": created["arenaKey"]}
        r = client.post(
            f"/api/arenas/{aid}/join", headers=akey, json={"agentType": "builtin", "name": "i1", "strategy": "idle"}
        )
        assert r.status_code == 200, r.text
        assert client.post(f"/api/arenas/{aid}/start", headers=owner, json={}).status_code == 200
        for _ in range(6):
            assert client.post(f"/api/arenas/{aid}/tick", headers=owner).status_code == 200
        summ = client.get(f"/api/arenas/{aid}/summary", headers=owner).json()
        assert summ["turnsPlayed"] == 6 and summ["govsim"]["govsim_total_gain"] == 12.0
