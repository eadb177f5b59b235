"""Results of a batch as tidy pandas frames, with parquet persistence.

``turns``: one row per (arena, turn) played; ``players``: one row per (arena, turn, player);
``summary``: one row per arena. Turns after the game ended (collapse, or maxTurns) are not
rows: the scan runs them as frozen no-ops, and the frames drop them.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..kernels.metrics import METRICS
from .governance import SANCTION_COLUMNS, VIOLATION_COLUMNS
from .perturbations import COLUMNS as PERTURBATION_COLUMNS
from .plugins import COLUMNS as ACTION_COLUMNS
from .victory import evaluate

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

    def report(self) -> pd.DataFrame:
        """The victory evaluation of every arena (bdpd_jax/results/victory.py, the rule of a live
        arena's summary.json): ``arena, outcome, collapse_turn, turns_played, winners`` (player
        indices, comma-separated) and per player ``gain_i``, ``gain_rank_i``, ``compliant_i``."""
        s = self.summary
        n = len([c for c in s.columns if c.startswith("wealth_")])
        initial = np.asarray([p["privateResource"] for p in self.meta["players"]], np.float64)
        gain = s[[f"wealth_{i}" for i in range(n)]].to_numpy(np.float64).T - initial[:, None]
        viol = np.zeros_like(gain, dtype=np.int64)
        v = self.extra.get("violations")
        if v is not None and len(v):
            pos = pd.Index(s["arena"]).get_indexer(v["arena"])
            np.add.at(viol, (v["player"].to_numpy(), pos), 1)
        ev = evaluate(s["survived"].to_numpy(), s["turns_played"].to_numpy(), int(self.meta["turns"]), gain, viol)
        out = pd.DataFrame({"arena": s["arena"], "outcome": ev["outcome"], "collapse_turn": s["collapse_turn"],
                            "turns_played": s["turns_played"],
                            "winners": [",".join(str(i) for i in np.flatnonzero(w)) for w in ev["winner"].T]})
        for i in range(n):
            out[f"gain_{i}"] = gain[i]
            out[f"gain_rank_{i}"] = ev["rank"][i]
            out[f"compliant_{i}"] = ev["compliant"][i]
        return out

    @property
    def violations(self) -> pd.DataFrame:
        """One row per pact violation event: arena, turn, player, pact, termType, ordinal
        (bdpd_jax/results/governance.py; also ``extra["violations"]``); empty without
        governance or history."""
        return self._frame("violations")

    @property
    def sanctions(self) -> pd.DataFrame:
        """One row per sanction fired, with its provenance: arena, turn, id (spec), type,
        player, pact, termType, ordinal, amount, reason, payer, cost
        (bdpd_jax/results/governance.py); empty without governance or history."""
        return self._frame("sanctions")

    def _frame(self, name: str) -> pd.DataFrame:
        df = self.extra.get(name)
        if df is None:
            cols = VIOLATION_COLUMNS if name == "violations" else SANCTION_COLUMNS
            return pd.DataFrame({c: pd.Series(dtype=object) for c in cols})
        return df

    @property
    def perturbations(self) -> pd.DataFrame:
        """One row per perturbation firing: arena, turn, id, type, target, value, strategy
        (bdpd_jax/results/perturbations.py); empty when the config has no Table A.1 specs."""
        df = self.extra.get("perturbations")
        if df is None:
            return pd.DataFrame({c: pd.Series(dtype=object) for c in PERTURBATION_COLUMNS})
        return df

    @property
    def governance_actions(self) -> pd.DataFrame:
        """One row per action a governance agent applied: arena, turn, id, type, action
        (``cap`` | ``ladder_scale`` | ``regen``), value (bdpd_jax/results/plugins.py); empty
        without a governance agent or history."""
        df = self.extra.get("governance_actions")
        if df is None:
            return pd.DataFrame({c: pd.Series(dtype=object) for c in ACTION_COLUMNS})
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
    def from_parquet(cls, directory: str | Path) -> Results:
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


def _gather(leaves: dict[str, np.ndarray], flat: np.ndarray) -> dict[str, np.ndarray]:
    """The values at flat indices of same-shape leaves: the leaves of one dtype are stacked
    and gathered in one operation (the columns are rows of its result)."""
    groups: dict[np.dtype, list[str]] = {}
    for name, x in leaves.items():
        groups.setdefault(x.dtype, []).append(name)
    out: dict[str, np.ndarray] = {}
    for names in groups.values():
        taken = np.take(np.stack([leaves[n].reshape(-1) for n in names]), flat, axis=1)
        out.update(zip(names, taken, strict=True))
    return {name: out[name] for name in leaves}


def _str_column(codes: np.ndarray, labels: list[str]) -> Any:
    """labels[codes] as pandas' str dtype, without a Python string object per row (an
    arrow take) where pandas keeps strings in arrow; else through an object array."""
    dtype = pd.Series(labels[:1] or [""]).dtype
    if getattr(dtype, "storage", None) == "pyarrow":
        import pyarrow as pa  # start-up time: only where pandas keeps strings in arrow

        values = pa.array(labels, pa.large_string()).take(pa.array(codes))
        return pd.arrays.ArrowStringArray(values, dtype=dtype)
    return pd.array(np.asarray(labels, dtype=object)[codes], dtype=dtype)


def turns_frame(rec: dict[str, Any], arenas: np.ndarray) -> pd.DataFrame:
    """rec leaves have shape (T, B) (scalars per arena and turn)."""
    t, b = _played_index(rec["played"])
    flat = t * rec["played"].shape[1] + b
    leaves = {"turn": rec["turn"], **{n: rec[n] for n in ("stock", "regen", "reserve_drawn", "collapsed")},
              **rec["engine_extra"], **{n: rec["metrics"][n] for n in METRICS}, **rec.get("turn_extra", {})}
    cols: dict[str, Any] = {"arena": np.asarray(arenas)[b], **_gather(leaves, flat)}
    return pd.DataFrame(cols, copy=False)  # (fresh arrays: no copy into 2-D blocks)


def players_frame(rec: dict[str, Any], arenas: np.ndarray, strategy_names: list[str]) -> pd.DataFrame:
    """Per-player leaves have shape (T, N, B)."""
    t, b = _played_index(rec["played"])
    n, nb = rec["actual"].shape[1], rec["played"].shape[1]
    rows = len(t)
    # flat index of (turn, player, arena) in a (T, N, B) leaf, rows ordered by arena, turn, player
    flat = ((t * (n * nb) + b)[:, None] + np.arange(n) * nb).reshape(-1)
    leaves = {"strategy": rec["strategy"],
              **{k: rec[k] for k in ("requested", "actual", "wealth", "announced", "sanction", "invalid")},
              **rec.get("player_extra", {})}
    got = _gather(leaves, flat)
    cols: dict[str, Any] = {
        "arena": np.repeat(np.asarray(arenas)[b], n),
        "turn": np.repeat(rec["turn"][t, b], n),
        "player": np.tile(np.arange(n, dtype=np.int32), rows),
        "strategy": _str_column(got.pop("strategy"), list(strategy_names)),
        **got,
    }
    return pd.DataFrame(cols, copy=False)


def summary_frame(final: dict[str, Any], arenas: np.ndarray, player_labels: list[str],
                  more: dict[str, np.ndarray] | None = None) -> pd.DataFrame:
    """final: survived[B], collapse_turn[B], turns_played[B], wealth[N, B]; ``more``: further
    columns (the GovSim outcomes), appended last."""
    wealth = np.array(final["wealth"])  # (a copy: the frame's columns are views of it)
    n, b = wealth.shape
    # rank 1 = richest; ties share the better rank: 1 + how many players have more
    ranks = 1 + (wealth[None, :, :] > wealth[:, None, :]).sum(axis=1, dtype=np.int32)
    survived = np.array(final["survived"], bool)  # (a copy, as the other columns: not a view of final)
    collapse = pd.arrays.IntegerArray(np.where(survived, 0, final["collapse_turn"]).astype(np.int64), survived.copy())
    cols: dict[str, Any] = {
        "arena": np.array(arenas),
        "survived": survived,
        "collapse_turn": collapse,
        "turns_played": final["turns_played"].astype(np.int32),
    }
    for i in range(n):
        cols[f"wealth_{i}"] = wealth[i]
    for i in range(n):
        cols[f"rank_{i}"] = ranks[i]
    for i, label in enumerate(player_labels):
        cols[f"strategy_{i}"] = _constant_str(label, b).copy()
    for name, v in final.get("extra", {}).items():
        cols[name] = np.array(v)
    cols.update(more or {})
    # every column is an array of its own (no copy into 2-D blocks: ~1/3 of the frame's cost)
    return pd.DataFrame(cols, copy=False)


@functools.lru_cache(maxsize=64)
def _constant_str(label: str, n: int) -> pd.api.extensions.ExtensionArray:
    """A column of n copies of one string, as pandas' str dtype (immutable buffers: the
    callers take a ``.copy()``, which shares them)."""
    return pd.Series(label, index=pd.RangeIndex(n)).array  # the dtype pandas gives a scalar column
