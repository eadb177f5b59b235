"""Seeds in [0, 2**32): every entry point accepts them, and the arena keys read all 32 bits."""

from __future__ import annotations

import copy
import json

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from payloads import MIXED_PLAYERS, SEED_LOGISTIC

import bdpd_jax
from bdpd_jax.kernels import rng
from bdpd_jax.run.runner import arena_keys

BIG = 3_000_000_000  # >= 2**31: int32 cannot hold it
HIGH = [2**31, BIG, 2**32 - 1]


def _cfg(turns: int = 6) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    cfg["observability"]["commonsStock"]["noise"] = 0.2
    cfg["model"]["maxTurns"] = turns
    return cfg


def _reference_key(seed: int, arena: int) -> tuple[int, int]:
    """The key by the documented hash in plain Python integers (kernels/rng.py)."""
    m = 0xFFFFFFFF

    def mix(x):
        x ^= x >> 16
        x = (x * 0x7FEB352D) & m
        x ^= x >> 15
        x = (x * 0x846CA68B) & m
        return x ^ (x >> 16)

    def absorb(h, w):
        return mix(h ^ ((w + 0x9E3779B9 + (h << 6) + (h >> 2)) & m))

    return absorb(absorb(0x243F6A88, seed), arena), absorb(absorb(0x85A308D3, arena), seed)


@pytest.mark.parametrize("seed", [0, 7, 2**31 - 1] + HIGH)
def test_arena_key_reads_all_32_bits(seed):
    for arena in (0, 5):
        want = _reference_key(seed, arena)
        assert tuple(int(x) for x in np.asarray(rng.arena_key(seed, arena))) == want
        # the array path (a uint32 array, as under vmap) gives the same words
        assert tuple(int(x) for x in np.asarray(rng.arena_key(jnp.asarray(np.uint32(seed)), arena))) == want
    keys = np.asarray(arena_keys(seed, np.arange(3)))
    assert [tuple(int(v) for v in keys[:, a]) for a in range(3)] == [_reference_key(seed, a) for a in range(3)]


def test_top_bit_changes_the_keys():
    low, high = np.asarray(arena_keys(BIG - 2**31, np.arange(64))), np.asarray(arena_keys(BIG, np.arange(64)))
    assert np.mean(low == high) < 0.05


@pytest.fixture(scope="module")
def high3():
    """Three arenas at a seed >= 2**31, with history: one program for the tests below."""
    return bdpd_jax.simulate(_cfg(), n_arenas=3, seed=BIG)


def test_simulate_and_sweep_accept_high_seeds(high3):
    cfg = _cfg()
    res = high3
    low = bdpd_jax.simulate(cfg, n_arenas=3, seed=BIG - 2**31)
    wealth = [f"wealth_{i}" for i in range(4)]
    assert not np.array_equal(res.summary[wealth].to_numpy(), low.summary[wealth].to_numpy())
    sw = bdpd_jax.sweep(cfg, grid={"model.regenRate": [0.12]}, replicates=3, seed=BIG, progress=False)
    cols = ["survived", "turns_played"] + wealth
    pd.testing.assert_frame_equal(sw.arenas[cols].reset_index(drop=True), res.summary[cols], check_exact=True)
    with pytest.raises(ValueError, match="seed"):
        bdpd_jax.simulate(cfg, seed=2**32)


def test_cli_run_accepts_a_high_seed(high3, tmp_path):
    from typer.testing import CliRunner

    from bdpd_jax.cli import app

    path = tmp_path / "c.json"
    path.write_text(json.dumps(_cfg()))
    out = CliRunner().invoke(app, ["run", str(path), "--arenas", "3", "--seed", str(BIG), "--out", str(tmp_path / "o")])
    assert out.exit_code == 0, out.output
    got = bdpd_jax.Results.from_parquet(tmp_path / "o").summary
    np.testing.assert_array_equal(got.wealth_3.to_numpy(), high3.summary.wealth_3.to_numpy())


def test_live_arena_with_a_high_seed_equals_simulate(high3):
    """The server draws seeds in [0, 2**32) and builds an Arena with it (arena index 0)."""
    from bdpd_jax.host.live.arena import Arena

    arena = Arena(_cfg(), seed=BIG)
    arena.run()
    got = np.asarray([[d["requested"] for d in r["decisions"]] for r in arena.records], np.float32)
    players = high3.players[high3.players.arena == 0]
    want = players.requested.to_numpy().reshape(len(arena.records), 4)
    np.testing.assert_array_equal(got, want)
    assert jax.numpy.asarray(arena.key).dtype == jnp.uint32


def test_server_creates_arenas_with_high_seeds(tmp_path):
    """The issue's 500: a create whose drawn seed was >= 2**31 crashed in the arena key."""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from bdpd_jax.host.server import create_app

    body = {**_cfg(), "players": [{"strategy": "conservative"}, {"strategy": "aggressive"}]}
    with TestClient(create_app(tmp_path)) as client:
        for seed in HIGH:
            r = client.post("/api/arenas", json={**body, "seed": seed})
            assert r.status_code == 200, r.text
            assert r.json()["seed"] == seed
