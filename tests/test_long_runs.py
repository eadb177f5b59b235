"""Long runs: chunked == unchunked bit for bit, history_every thinned inside the scan, out=
streaming to parquet, and (heavy) 3000+ turns of 4096 arenas with bounded memory."""

from __future__ import annotations

import pandas as pd
import pytest
from payloads import size

import bdpd_jax as bj

SEN = {
    "model": {"engineMode": "seneca", "maxTurns": 240, "seneca": {"harvestScale": 2e-4}},
    "observability": {
        "commonsStock": {"visible": True},
        "capitalStock": {"visible": True},
        "pollutionLevel": {"visible": True, "noise": 0.1},
    },
    "players": [{"strategy": s} for s in ("rcp", "conservative", "aggressive", "random")],
}


@pytest.fixture(scope="module")
def whole():
    return bj.simulate(SEN, n_arenas=3, progress=False)


def test_chunked_equals_unchunked(whole):
    part = bj.simulate(SEN, n_arenas=3, chunk_turns=70, max_batch=2, progress=False)
    pd.testing.assert_frame_equal(whole.turns, part.turns)
    pd.testing.assert_frame_equal(whole.players, part.players)
    pd.testing.assert_frame_equal(whole.summary, part.summary)


def test_history_every_keeps_every_kth_turn(whole):
    thin = bj.simulate(SEN, n_arenas=3, chunk_turns=70, history_every=8, progress=False)
    assert (thin.turns.turn % 8 == 0).all()
    want = whole.turns[whole.turns.turn % 8 == 0].reset_index(drop=True)
    pd.testing.assert_frame_equal(want, thin.turns)
    pd.testing.assert_frame_equal(
        whole.summary.drop(columns=["ex_post_over_usage"]), thin.summary.drop(columns=["ex_post_over_usage"])
    )
    with pytest.raises(ValueError, match="history_every"):
        bj.simulate(SEN, history_every=0)


def test_out_streams_parquet_parts(whole, tmp_path):
    # (the chunk layout of the chunked test above: its programs)
    res = bj.simulate(SEN, n_arenas=3, chunk_turns=70, max_batch=2, out=tmp_path, progress=False)
    assert res.history_turns is None  # nothing kept in memory
    assert len(list((tmp_path / "turns.parquet").glob("part-*.parquet"))) == 2 * 4  # arena chunks x turn chunks
    pd.testing.assert_frame_equal(whole.turns, res.turns)
    pd.testing.assert_frame_equal(whole.players, res.players, check_dtype=False)
    back = bj.Results.from_parquet(tmp_path)
    pd.testing.assert_frame_equal(whole.turns, back.turns)
    # the ex-post over-usage needs every turn in memory (kernels/outcomes.py); the catches are tallied
    gov = ["ex_post_over_usage"]
    pd.testing.assert_frame_equal(
        whole.summary.drop(columns=gov, errors="ignore"),
        back.summary.drop(columns=gov, errors="ignore"),
        check_dtype=False,
    )


@pytest.mark.heavy
def test_long_seneca_run_bounded():
    """3000+ turns x many arenas with history every 100th turn (full size: 4096 x 3000)."""
    b, t = size(64, 4096), size(1000, 3000)
    cfg = {**SEN, "model": {**SEN["model"], "maxTurns": t}}
    res = bj.simulate(cfg, n_arenas=b, history_every=100, progress=False)
    assert len(res.turns) <= b * t // 100
    assert res.turns.turn.max() <= t and (res.turns.turn % 100 == 0).all()
