"""Results of a batch as tidy pandas frames, with parquet persistence.

``turns``: one row per (arena, turn) played; ``players``: one row per (arena, turn, player);
``summary``: one row per arena. Turns after the game ended (collapse, or maxTurns) are not
rows: the scan runs them as frozen no-ops, and the frames drop them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .kernels.metrics import METRICS

TURN_COLUMNS = ("arena", "turn", "stock", "regen", "reserve_drawn", "collapsed") + METRICS
PLAYER_COLUMNS = (
    "arena", "turn", "player", "strategy", "requested", "actual", "wealth", "announced", "sanction", "invalid",
)


@dataclass
class Results:
    """Frames of one run. ``turns``/``players`` exist only when the run kept history."""

    summary: pd.DataFrame
    history_turns: pd.DataFrame | None = None
    history_players: pd.DataFrame | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, pd.DataFrame] = field(default_factory=dict)

    def _streamed(self, name: str, keys: list[str]) -> pd.DataFrame | None:
        """Frames a run streamed to ``out/<name>.parquet/part-*.parquet`` (simulate(out=)),
        loaded on first use and ordered like an in-memory run's (by arena, turn[, player])."""
        out = self.meta.get("out")
        d = Path(out) / f"{name}.parquet" if out else None
        if d is None or not d.is_dir():
            return None
        parts = sorted(d.glob("part-*.parquet"))
        if not parts:
            return None
        df = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
        return df.sort_values(keys, kind="stable", ignore_index=True)

    @property
    def turns(self) -> pd.DataFrame:
        if self.history_turns is None:
            self.history_turns = self._streamed("turns", ["arena", "turn"])
        if self.history_turns is None:
            raise ValueError("Results.turns: this run kept no history (history=False); use Results.summary")
        return self.history_turns

    @property
    def players(self) -> pd.DataFrame:
        if self.history_players is None:
            self.history_players = self._streamed("players", ["arena", "turn", "player"])
        if self.history_players is None:
            raise ValueError("Results.players: this run kept no history (history=False); use Results.summary")
        return self.history_players

    @property
    def violations(self) -> pd.DataFrame:
        """One row per pact violation event: arena, turn, player, pact, termType, ordinal
        (bdpd_jax/governance_results.py; also ``extra["violations"]``); empty without
        governance or history."""
        return self._frame("violations")

    @property
    def sanctions(self) -> pd.DataFrame:
        """One row per sanction fired, with its provenance: arena, turn, id (spec), type,
        player, pact, termType, ordinal, amount, reason, payer, cost
        (bdpd_jax/governance_results.py); empty without governance or history."""
        return self._frame("sanctions")

    def _frame(self, name: str) -> pd.DataFrame:
        df = self.extra.get(name)
        if df is None:
            from . import governance_results as g

            cols = g.VIOLATION_COLUMNS if name == "violations" else g.SANCTION_COLUMNS
            return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
        return df

    @property
    def perturbations(self) -> pd.DataFrame:
        """One row per perturbation firing: arena, turn, id, type, target, value, strategy
        (bdpd_jax/perturb_results.py); empty when the config has no Table A.1 specs."""
        df = self.extra.get("perturbations")
        if df is None:
            from .perturb_results import COLUMNS

            return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
        return df

    def to_parquet(self, directory: str | Path) -> Path:
        """Write summary/turns/players (and any extra frames) as parquet plus meta.json."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        frames = {"summary": self.summary, "turns": self.history_turns, "players": self.history_players}
        frames.update(self.extra)
        for name, df in frames.items():
            if df is not None:
                df.to_parquet(d / f"{name}.parquet", index=False)
        (d / "meta.json").write_text(json.dumps(self.meta, indent=2, default=str))
        return d

    @classmethod
    def from_parquet(cls, directory: str | Path) -> "Results":
        d = Path(directory)
        if not (d / "summary.parquet").is_file():
            raise ValueError(f"directory: no summary.parquet in {str(d)!r}")

        def read(name: str) -> pd.DataFrame | None:
            p = d / f"{name}.parquet"
            return pd.read_parquet(p) if p.is_file() else None

        meta = json.loads((d / "meta.json").read_text()) if (d / "meta.json").is_file() else {}
        if (d / "turns.parquet").is_dir():
            meta["out"] = str(d)  # streamed parts (simulate(out=)): loaded lazily from here
        extra = {
            p.stem: pd.read_parquet(p)
            for p in sorted(d.glob("*.parquet"))
            if p.stem not in ("summary", "turns", "players") and p.is_file()
        }
        return cls(read("summary"), read("turns"), read("players"), meta, extra)


def _played_index(played: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """played: bool[T, B] -> (turn idx, arena idx) of played rows, ordered by arena then turn."""
    b_idx, t_idx = np.nonzero(played.T)
    return t_idx, b_idx


def turns_frame(rec: dict[str, np.ndarray], arenas: np.ndarray) -> pd.DataFrame:
    """rec leaves have shape (T, B) (scalars per arena and turn)."""
    t, b = _played_index(rec["played"])
    cols: dict[str, Any] = {"arena": arenas[b], "turn": rec["turn"][t, b]}
    for name in ("stock", "regen", "reserve_drawn", "collapsed"):
        cols[name] = rec[name][t, b]
    for name, v in rec["engine_extra"].items():
        cols[name] = v[t, b]
    for name in METRICS:
        cols[name] = rec["metrics"][name][t, b]
    for name, v in rec.get("turn_extra", {}).items():
        cols[name] = v[t, b]
    return pd.DataFrame(cols)


def players_frame(rec: dict[str, np.ndarray], arenas: np.ndarray, strategy_names: list[str]) -> pd.DataFrame:
    """Per-player leaves have shape (T, N, B)."""
    t, b = _played_index(rec["played"])
    n = rec["actual"].shape[1]
    rows = len(t)
    tt = np.repeat(t, n)
    bb = np.repeat(b, n)
    pp = np.tile(np.arange(n), rows)
    names = np.asarray(strategy_names, dtype=object)
    cols: dict[str, Any] = {
        "arena": arenas[bb],
        "turn": rec["turn"][tt, bb],
        "player": pp.astype(np.int32),
        "strategy": names[rec["strategy"][tt, pp, bb]],
    }
    for name in ("requested", "actual", "wealth", "announced", "sanction", "invalid"):
        cols[name] = rec[name][tt, pp, bb]
    for name, v in rec.get("player_extra", {}).items():
        cols[name] = v[tt, pp, bb]
    return pd.DataFrame(cols)


def summary_frame(final: dict[str, np.ndarray], arenas: np.ndarray, player_labels: list[str]) -> pd.DataFrame:
    """final: survived[B], collapse_turn[B], turns_played[B], wealth[N, B]."""
    wealth = final["wealth"]
    n = wealth.shape[0]
    # rank 1 = richest; ties share the better rank
    ranks = (wealth[None, :, :] > wealth[:, None, :]).sum(axis=1) + 1  # ranks[j, b]
    collapse = pd.array(np.where(final["survived"], 0, final["collapse_turn"]), dtype="Int64")
    collapse[final["survived"]] = pd.NA
    cols: dict[str, Any] = {
        "arena": arenas,
        "survived": final["survived"].astype(bool),
        "collapse_turn": collapse,
        "turns_played": final["turns_played"].astype(np.int32),
    }
    for i in range(n):
        cols[f"wealth_{i}"] = wealth[i]
    for i in range(n):
        cols[f"rank_{i}"] = ranks[i].astype(np.int32)
    for i, label in enumerate(player_labels):
        cols[f"strategy_{i}"] = label
    for name, v in final.get("extra", {}).items():
        cols[name] = v
    return pd.DataFrame(cols)
