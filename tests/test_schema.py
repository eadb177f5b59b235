"""One schema per record layer (bdpd_jax/results/schema.py): the frames, the live turn
record and the docs' column tables all follow it; history frames are built lazily, column
by column, and equal the records they come from."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bdpd_jax
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.registry import nums, pact_id
from bdpd_jax.kernels.metrics import METRICS
from bdpd_jax.results import schema as S
from bdpd_jax.results.frames import Frames
from bdpd_jax.run import runner

DOCS = Path(__file__).resolve().parents[1] / "docs" / "semantics" / "records.md"
SNAKE = re.compile(r"^[a-z][a-z0-9_]*(\{i\})?$")
CAMEL = re.compile(r"^[a-z][a-zA-Z0-9]*$")


def _gov_cfg(turns: int = 8) -> dict:
    """The seed payload with a harvest cap every player breaks now and then, and both seed
    sanction specs: rows in every governance layer."""
    d = bdpd_jax.default_config().model_dump()
    d["model"]["maxTurns"] = turns
    d["pacts"] = [{"parties": [0, 1, 2, 3], "terms": {"type": "harvest_cap", "maxHarvest": 1.0}}]
    d["perturbations"] = [
        {
            "id": "fine",
            "type": "sanction",
            "trigger": {"kind": "pact_violation", "termType": "harvest_cap"},
            "payload": {"amount": 0.5, "reason": "cap"},
        },
        {"id": "shock", "type": "regen_shock", "trigger": {"kind": "turn", "turn": 2}, "payload": {"factor": 0.9}},
    ]
    return d


@pytest.fixture(scope="module")
def gov_run() -> bdpd_jax.Results:
    return bdpd_jax.simulate(_gov_cfg(), n_arenas=3, seed=5)


@pytest.fixture(scope="module")
def live_gov(tmp_path_factory) -> Arena:
    """gov_run's arena 0 played live (one run shared by the live == batch checks)."""
    arena = Arena(_gov_cfg(), seed=5, out_dir=tmp_path_factory.mktemp("live_gov"))
    arena.run()
    return arena


def test_every_column_is_declared_well() -> None:
    for layer in S.LAYERS.values():
        names = [c.name for c in layer]
        assert len(names) == len(set(names))
        wires = [c.wire for c in layer if c.wire]
        assert len(wires) == len(set(wires))
        for c in layer:
            assert SNAKE.match(c.name), c.name
            # the metrics keep the seed's Table 2.1 names on the wire (000_* section 2.3)
            assert c.wire is None or CAMEL.match(c.wire) or (layer is S.METRICS and c.wire == c.name), c.wire
            assert c.meaning and c.dtype
            assert c.frame or c.wire, f"{c.name}: a live-only column must be on the wire"
    assert S.names(S.METRICS) == METRICS  # the kernels' metric names, in the kernels' order


def test_the_docs_tables_are_the_generated_ones() -> None:
    text = DOCS.read_text()
    for name, layer in S.LAYERS.items():
        marker = f"<!-- generated: schema.{name} -->\n"
        assert marker in text, f"docs/semantics/records.md: no table for schema.{name}"
        got = text.split(marker, 1)[1].split("\n\n", 1)[0].rstrip("\n")
        assert got == S.markdown_table(layer), f"docs/semantics/records.md: schema.{name} table is stale"


def test_frames_have_the_declared_columns_and_dtypes(gov_run) -> None:
    r = gov_run
    turn_cols = list(S.names(S.TURNS))
    assert list(r.turns.columns[: len(turn_cols)]) == turn_cols
    assert set(S.names(S.METRICS)) <= set(r.turns.columns)
    assert list(r.players.columns[: len(S.names(S.PLAYERS))]) == list(S.names(S.PLAYERS))
    for df, layer in ((r.violations, S.VIOLATIONS), (r.sanctions, S.SANCTIONS), (r.perturbations, S.PERTURBATIONS)):
        assert len(df) > 0
        assert list(df.columns) == list(S.names(layer))
    assert list(r.summary.columns[-len(S.GOVSIM) :]) == list(S.names(S.GOVSIM))
    for df, layer in ((r.turns, S.TURNS + S.METRICS), (r.players, S.PLAYERS), (r.violations, S.VIOLATIONS)):
        for c in layer:
            if c.frame and c.dtype not in ("str", "object"):
                assert df[c.name].dtype == np.dtype(c.dtype), (c.name, df[c.name].dtype)
    # (the default game as a dict on 5 arenas: the program of the column-wise frames test below;
    # the ArenaConfig object itself builds another)
    empty = bdpd_jax.simulate(bdpd_jax.default_config().model_dump(), n_arenas=5, seed=0)
    for name in ("violations", "sanctions", "perturbations", "governance_actions"):
        assert list(getattr(empty, name).columns) == list(S.names(S.LAYERS[name])) and len(getattr(empty, name)) == 0


def test_live_record_keys_are_the_wire_aliases(live_gov) -> None:
    arena = live_gov
    wire = {k: set(S.wire(layer).values()) for k, layer in S.LAYERS.items()}
    seen = {"violations": 0, "sanctions": 0, "perturbations": 0}
    for rec in arena.records:
        assert set(S.wire(S.TURNS).values()) <= set(rec)
        assert set(rec["metrics"]) == wire["metrics"]
        for d in rec["decisions"]:
            assert set(d) <= wire["players"] and {"playerId", "actual", "wealth"} <= set(d)
        for name in seen:
            for row in rec[name]:
                assert set(row) <= wire[name], (name, set(row) - wire[name])
                seen[name] += 1
    assert all(seen.values()), seen  # every layer had rows to check


def test_live_and_batch_rows_agree_by_schema(gov_run, live_gov) -> None:
    """The same arena live and batched: each sanction row, read through the schema's
    aliases, is the frame's row (ids on the wire, indices in the frame)."""
    arena = live_gov
    batch = gov_run.sanctions[gov_run.sanctions.arena == 0]
    alias = S.wire(S.SANCTIONS)
    live = []
    for rec in arena.records:
        for row in rec["sanctions"]:
            v = {n: row[alias[n]] for n in ("turn", "id", "type", "term_type", "ordinal", "reason")}
            v["player"] = arena.players.index(row[alias["player"]])
            v["amount"] = row[alias["amount"]]
            live.append(v)
    cols = ["turn", "id", "type", "player", "term_type", "ordinal", "reason"]
    got = sorted(tuple(d[c] for c in cols) for d in live)
    want = sorted(batch[cols].itertuples(index=False, name=None))
    assert got == want and len(got) > 0


def test_live_event_rows_are_the_frames_rows_through_the_one_decoder(gov_run, live_gov) -> None:
    """Each live turn's violations, sanctions and perturbations are, key for key, value for
    value and in order, the batch frame's rows of that arena and turn written by the schema
    (schema.wire_rows: index -> id by the column's ref); the live-only columns aside."""
    arena, seen = live_gov, 0
    ids = {"player": arena.players.__getitem__, "pact": lambda s: pact_id(5, 0, s)}
    number = lambda a: nums(np.float32(a))  # noqa: E731  (a frame widens the kernel's float32 to float64)
    for name in ("violations", "sanctions", "perturbations"):
        layer, df = S.LAYERS[name], getattr(gov_run, name)
        live_only = {c.wire for c in layer if not c.frame}
        omit = ("turn",) if name == "perturbations" else ()  # (a firing's turn is its record's)
        for rec in arena.records:
            rows = df[(df.arena == 0) & (df.turn == rec["turn"])]
            want = S.wire_rows(layer, {c: rows[c].to_numpy() for c in rows}, ids, number, omit)
            got = [{k: v for k, v in r.items() if k not in live_only} for r in rec[name]]
            assert [list(r.items()) for r in got] == [list(r.items()) for r in want], (name, rec["turn"])
            seen += len(got)
    assert seen > 0


def test_wire_row_refuses_an_unknown_column() -> None:
    with pytest.raises(ValueError, match="playerId"):
        S.wire_row(S.SANCTIONS, playerId="p")
    assert list(S.wire_row(S.SANCTIONS, payer=None, id="s")) == ["specId", "paidBy"]  # the layer's order


def test_history_frames_are_built_on_first_access_only() -> None:
    r = bdpd_jax.simulate(_gov_cfg(), n_arenas=3, seed=1)  # gov_run's program
    assert isinstance(r.history, Frames) and not r.history.built("players") and r.history_players is None
    assert not r.extra.built("sanctions") and "sanctions" in r.extra
    p = r.players
    assert r.history_players is p and r.players is p and "players" not in r.history
    assert r.extra["sanctions"] is r.sanctions


def _reference_players(rec, arenas: np.ndarray) -> pd.DataFrame:
    """Plain loops over (arena, turn, player) of records (T, N, B)."""
    rows = []
    for b in range(len(arenas)):
        for t in range(rec["played"].shape[0]):
            if rec["played"][t, b]:
                for i in range(rec["actual"].shape[1]):
                    rows.append(
                        (
                            int(arenas[b]),
                            int(rec["turn"][t, b]),
                            i,
                            float(rec["actual"][t, i, b]),
                            float(rec["wealth"][t, i, b]),
                        )
                    )
    return pd.DataFrame(rows, columns=["arena", "turn", "player", "actual", "wealth"])


def test_column_wise_frames_equal_plain_loops_and_the_chunked_path() -> None:
    """The one-program history run (records in the scan's layout) and the chunked runner
    give the same frames, equal to plain loops over the records; the program compiles once."""
    cfg = bdpd_jax.default_config().model_dump()
    cfg["model"]["maxTurns"] = 30
    one = bdpd_jax.simulate(cfg, n_arenas=5, seed=3, arena_offset=7)
    before = runner.TRACES["run"]
    again = bdpd_jax.simulate(cfg, n_arenas=5, seed=3, arena_offset=7)
    assert runner.TRACES["run"] == before  # no recompile
    chunked = bdpd_jax.simulate(cfg, n_arenas=5, seed=3, arena_offset=7, chunk_turns=7)
    for name in ("summary", "turns", "players"):
        pd.testing.assert_frame_equal(getattr(one, name), getattr(chunked, name), check_exact=True)
        pd.testing.assert_frame_equal(getattr(one, name), getattr(again, name), check_exact=True)
    assert one.turns.groupby("arena").size().nunique() > 1  # some arenas ended early: rows were masked
    from bdpd_jax.prepare.prepared import prepare
    from bdpd_jax.results.stream import flatten_record
    from bdpd_jax.run.simulate import run_whole_history

    prep = prepare(cfg)
    params = prep.params_for(30)
    arenas = np.arange(7, 12)
    _, rec = run_whole_history(prep.game, 30, 1, 3, arenas, params, prep.max_yield)
    ref = _reference_players(flatten_record(rec), arenas)
    got = one.players[["arena", "turn", "player", "actual", "wealth"]].astype(
        {"player": np.int64, "turn": np.int64, "actual": float, "wealth": float}
    )
    pd.testing.assert_frame_equal(
        got.reset_index(drop=True), ref.astype({"turn": np.int64, "player": np.int64}), check_exact=True
    )


def test_results_pickle_with_their_frames_built() -> None:
    import pickle

    r = bdpd_jax.simulate(_gov_cfg(), n_arenas=3, seed=4)  # gov_run's program
    back = pickle.loads(pickle.dumps(r))
    for name in ("turns", "players", "violations", "sanctions"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(r, name), check_exact=True)
