"""``bdpd_jax.load``: one loader for a run, a sweep, a search and a live arena's folder; a live
arena's frames equal a batch run's for the same actions and key (issue 40)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import bdpd_jax
from bdpd_jax.cli import app
from bdpd_jax.host.live.arena import Arena

sys.path.insert(0, str(Path(__file__).parent / "host"))
from test_host_arena import GOVERNED, _cfg  # noqa: E402  (the live == batch configs of tests/host)

FRAMES = ("turns", "players", "summary", "violations", "sanctions", "perturbations", "discussion")


def _equal_where_shared(live: pd.DataFrame, batch: pd.DataFrame, name: str) -> None:
    cols = [c for c in batch.columns if c in live.columns]
    assert cols and len(cols) >= len(batch.columns) - 5, (name, list(live.columns))
    a, b = live[cols].reset_index(drop=True), batch[cols].reset_index(drop=True)
    numeric = [c for c in cols if b[c].dtype.kind in "biuf"]
    assert (a[numeric].dtypes == b[numeric].dtypes).all(), (name, a[numeric].dtypes, b[numeric].dtypes)
    text = [c for c in cols if c not in numeric]  # strings: object or str in a batch's frames, None or NaN
    a[text], b[text] = (f[text].astype(object).where(f[text].notna(), None) for f in (a, b))
    pd.testing.assert_frame_equal(a, b, obj=name, check_dtype=False)


# the configs, seeds and batch sizes of tests/host/test_host_arena.py's live == batch tests, so
# that the suite's compilation cache holds these programs already
CASES = {"mixed": (False, 11, 1), "governed": (True, 4, 3)}


@pytest.mark.parametrize("case", list(CASES))
def test_a_live_folder_loads_into_the_frames_a_batch_run_gives(case, tmp_path) -> None:
    governed, seed, n_arenas = CASES[case]
    cfg = _cfg()
    if governed:
        cfg.update(copy.deepcopy(GOVERNED))
    batch = bdpd_jax.simulate(cfg, n_arenas=n_arenas, seed=seed)
    arena = Arena(cfg, seed=seed, out_dir=tmp_path / "a")  # arena index 0
    arena.run()
    arena.close()
    live = bdpd_jax.load(tmp_path / "a")
    assert isinstance(live, bdpd_jax.Results) and len(live.turns) == (batch.turns.arena == 0).sum() > 3
    for name in FRAMES:
        frame = getattr(batch, name)
        _equal_where_shared(getattr(live, name), frame[frame.arena == 0], name)
    if governed:  # the governed arena fires sanctions and perturbations: rows are compared, not just empty frames
        assert len(live.sanctions) and len(live.perturbations) and len(live.violations)
    r = CliRunner().invoke(app, ["show", str(tmp_path / "a")])
    assert r.exit_code == 0 and "survival rate" in r.output and "final wealth by strategy" in r.output, r.output


def test_run_and_sweep_folders_round_trip(tmp_path) -> None:
    # the governed case's config and batch size above: its program (the seed is data)
    res = bdpd_jax.simulate({**_cfg(), **copy.deepcopy(GOVERNED)}, n_arenas=3, seed=2)
    res.to_parquet(tmp_path / "run")
    back = bdpd_jax.load(tmp_path / "run")
    for name in ("summary", "turns", "players"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(res, name), obj=name)
    sw = bdpd_jax.sweep(_cfg(maxTurns=4), grid={"model.regenRate": [0.05, 0.2]}, replicates=2, seed=0)
    sw.to_parquet(tmp_path / "sweep")
    got = bdpd_jax.load(tmp_path / "sweep")
    assert isinstance(got, bdpd_jax.SweepResults)
    pd.testing.assert_frame_equal(got.points, sw.points)


def test_a_search_folder_loads(tmp_path) -> None:
    pytest.importorskip("evosax")
    cfg = _cfg(maxTurns=3)
    res = bdpd_jax.search(
        cfg,
        space={"model.regenRate": (0.05, 0.3)},
        objective=("survived_mean", "max"),
        population=2,
        generations=1,
        replicates=1,
        seed=0,
        out=tmp_path / "s",
    )
    got = bdpd_jax.load(tmp_path / "s")
    assert isinstance(got, bdpd_jax.SearchResults)
    pd.testing.assert_frame_equal(got.history, res.history)
    r = CliRunner().invoke(app, ["show", str(tmp_path / "s")])
    assert r.exit_code == 0 and "best (generation" in r.output, r.output


def test_an_unknown_folder_says_what_it_looks_for(tmp_path) -> None:
    with pytest.raises(ValueError, match="summary.parquet"):
        bdpd_jax.load(tmp_path)
    with pytest.raises(ValueError, match="no folder"):
        bdpd_jax.load(tmp_path / "nope")
