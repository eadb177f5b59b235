"""Results of a batch as tidy pandas frames, with parquet persistence.

``turns``: one row per (arena, turn) played; ``players``: one row per (arena, turn, player);
``summary``: one row per arena. Turns after the game ended (collapse, or maxTurns) are not
rows: the scan runs them as frozen no-ops, and the frames drop them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..config.files import Meta, load_meta, read_parquet, write_json
from . import schema
from .victory import evaluate

# the frames' leading columns (schema.py declares them; these names are kept for callers)
TURN_COLUMNS = schema.names(schema.TURNS) + schema.names(schema.METRICS)
PLAYER_COLUMNS = schema.names(schema.PLAYERS)


class Frames(MutableMapping[str, pd.DataFrame]):
    """Frames by name; one given as a builder is built on its first access, then kept.

    ``simulate`` hands a run's record frames over as builders: building a frame of millions
    of rows costs more than the run itself, so a run pays for the frames it reads."""

    def __init__(
        self,
        frames: Mapping[str, pd.DataFrame] | None = None,
        builders: Mapping[str, Callable[[], pd.DataFrame]] | None = None,
    ) -> None:
        self._frames: dict[str, pd.DataFrame] = dict(frames or {})
        self._builders: dict[str, Callable[[], pd.DataFrame]] = dict(builders or {})

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._frames and name in self._builders:
            self._frames[name] = self._builders.pop(name)()
        return self._frames[name]

    def __setitem__(self, name: str, df: pd.DataFrame) -> None:
        self._builders.pop(name, None)
        self._frames[name] = df

    def __delitem__(self, name: str) -> None:
        if self._builders.pop(name, None) is None:
            del self._frames[name]
        else:
            self._frames.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._frames or name in self._builders  # (without building it)

    def __iter__(self) -> Iterator[str]:
        return iter([*self._frames, *(n for n in self._builders if n not in self._frames)])

    def __len__(self) -> int:
        return len(self._frames.keys() | self._builders.keys())

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with every frame built (a builder is a closure over the run's records)."""
        return {"_frames": dict(self.items()), "_builders": {}}

    def built(self, name: str) -> bool:
        """Whether ``name`` is held as a frame (not a builder still to run)."""
        return name in self._frames

    def __repr__(self) -> str:
        return f"Frames({sorted(self)})"


@dataclass
class Results:
    """Frames of one run. ``turns``/``players`` exist only when the run kept history; a run
    in memory builds them (and the layers' frames in ``extra``) on first access."""

    summary: pd.DataFrame
    history_turns: pd.DataFrame | None = None
    history_players: pd.DataFrame | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    extra: MutableMapping[str, pd.DataFrame] = field(default_factory=Frames)
    # the run's own record frames, built on first access (``turns``, ``players``)
    history: Frames = field(default_factory=Frames, repr=False, compare=False)

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
        df = pd.concat([read_parquet(p) for p in parts], ignore_index=True)
        return df.sort_values(keys, kind="stable", ignore_index=True)

    @property
    def turns(self) -> pd.DataFrame:
        if self.history_turns is None and "turns" in self.history:
            self.history_turns = self.history.pop("turns")
        if self.history_turns is None:
            self.history_turns = self._streamed("turns", ["arena", "turn"])
        if self.history_turns is None:
            raise ValueError("Results.turns: this run kept no history (history=False); use Results.summary")
        return self.history_turns

    @property
    def players(self) -> pd.DataFrame:
        if self.history_players is None and "players" in self.history:
            self.history_players = self.history.pop("players")
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
        out = pd.DataFrame(
            {
                "arena": s["arena"],
                "outcome": ev["outcome"],
                "collapse_turn": s["collapse_turn"],
                "turns_played": s["turns_played"],
                "winners": [",".join(str(i) for i in np.flatnonzero(w)) for w in ev["winner"].T],
            }
        )
        for i in range(n):
            out[f"gain_{i}"] = gain[i]
            out[f"gain_rank_{i}"] = ev["rank"][i]
            out[f"compliant_{i}"] = ev["compliant"][i]
        return out

    @property
    def violations(self) -> pd.DataFrame:
        """One row per pact violation event (schema.VIOLATIONS: arena, turn, player, pact,
        term_type, ordinal; bdpd_jax/results/governance.py; also ``extra["violations"]``);
        empty without governance or history."""
        return self._frame("violations")

    @property
    def sanctions(self) -> pd.DataFrame:
        """One row per sanction fired, with its provenance (schema.SANCTIONS: arena, turn, id,
        type, player, pact, term_type, ordinal, amount, reason, payer, cost;
        bdpd_jax/results/governance.py); empty without governance or history."""
        return self._frame("sanctions")

    @property
    def perturbations(self) -> pd.DataFrame:
        """One row per perturbation firing (schema.PERTURBATIONS: arena, turn, id, type,
        target, value, strategy; bdpd_jax/results/perturbations.py); empty when the config has
        no Table A.1 specs."""
        return self._frame("perturbations")

    @property
    def discussion(self) -> pd.DataFrame:
        """One row per utterance of a live arena's discussion phase: arena, turn, order,
        speaker, text, next_speaker, named, error (bdpd_jax/results/discussion.py); empty for
        a batch run (no speakers) or an arena without a discussion."""
        df = self.extra.get("discussion")
        if df is None:
            from .discussion import COLUMNS

            return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})
        return df

    @property
    def governance_actions(self) -> pd.DataFrame:
        """One row per action a governance agent applied (schema.GOVERNANCE_ACTIONS: arena,
        turn, id, type, action (``cap`` | ``ladder_scale`` | ``regen``), value;
        bdpd_jax/results/plugins.py); empty without a governance agent or history."""
        return self._frame("governance_actions")

    def _frame(self, name: str) -> pd.DataFrame:
        df = self.extra.get(name)
        return schema.empty_frame(schema.LAYERS[name]) if df is None else df

    def _kept(self, name: str) -> pd.DataFrame | None:
        """The run's turns or players frame held in memory (built now if still to build)."""
        if name in self.history:
            return getattr(self, name)
        return self.history_turns if name == "turns" else self.history_players

    def to_parquet(self, directory: str | Path) -> Path:
        """Write summary/turns/players (and any extra frames) as parquet plus meta.json."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        frames = {"summary": self.summary, "turns": self._kept("turns"), "players": self._kept("players")}
        frames.update(self.extra)
        for name, df in frames.items():
            if df is not None:
                df.to_parquet(d / f"{name}.parquet", index=False)
        write_json(d / "meta.json", self.meta)
        return d

    @classmethod
    def from_parquet(cls, directory: str | Path) -> Results:
        d = Path(directory)
        if not (d / "summary.parquet").is_file():
            raise ValueError(f"directory: no summary.parquet in {str(d)!r}")

        def read(name: str) -> pd.DataFrame | None:
            p = d / f"{name}.parquet"
            return read_parquet(p) if p.is_file() else None

        meta = load_meta(d / "meta.json", Meta).model_dump() if (d / "meta.json").is_file() else {}
        meta.pop("out", None)  # a path written in the file is never followed: the parts are read from d
        if (d / "turns.parquet").is_dir():
            meta["out"] = str(d)  # streamed parts (simulate(out=)): loaded lazily from here
        extra = {
            p.stem: read_parquet(p)
            for p in sorted(d.glob("*.parquet"))
            if p.stem not in ("summary", "turns", "players") and p.is_file()
        }
        return cls(read("summary"), read("turns"), read("players"), meta, extra)


def _by_arena(x: np.ndarray, at: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """A record leaf (T, ..., B) -> its played rows ordered by arena, then turn (then the
    leaf's own axes): one strided copy of the leaf as (B, T, ...), or one gather of its played
    rows at their (turn, arena) indices (a third faster than a boolean mask over the strided
    view; bench/README.md, "History on the seed's payload")."""
    if at is None:
        return np.moveaxis(x, -1, 0).reshape(-1)  # (B, T, ...): a view, copied by reshape
    played: np.ndarray = x[at[0], ..., at[1]]  # (R, ...): the advanced axis first
    return played.reshape(-1)


def _played(rec: dict[str, Any]) -> tuple[tuple[np.ndarray, np.ndarray] | None, np.ndarray]:
    """(the played rows' (turn, arena) indices ordered by arena, then turn, None when every
    turn was played; played turns per arena)."""
    mask = np.asarray(rec["played"]).T  # (B, T)
    if mask.all():
        return None, np.full(mask.shape[0], mask.shape[1])
    arena, turn = np.nonzero(mask)
    return (turn, arena), mask.sum(axis=1)


def _str_column(codes: np.ndarray, labels: list[str]) -> Any:
    """labels[codes] as pandas' str dtype, without a Python string object per row (an
    arrow take) where pandas keeps strings in arrow; else through an object array."""
    dtype = pd.Series(labels[:1] or [""]).dtype
    if getattr(dtype, "storage", None) == "pyarrow":
        import pyarrow as pa  # start-up time: only where pandas keeps strings in arrow

        values = pa.array(labels, pa.large_string()).take(pa.array(codes))
        return pd.arrays.ArrowStringArray(values, dtype=dtype)
    return pd.array(np.asarray(labels, dtype=object)[codes], dtype=dtype)


def flat_metrics(rec: dict[str, Any]) -> dict[str, np.ndarray]:
    """The five governance metrics of flattened records (numpy leaves, batch axis last),
    derived when a frame asks for them (kernels/metrics.py: never stored by the run).
    Imported here, not at the top: reading a saved folder (``bdpd show``) never starts jax."""
    from ..kernels.metrics import record_metrics

    keys = ("actual", "announced", "sanctioned", "regen", "played", "share_defined")
    return record_metrics(*(np.asarray(rec[k]) for k in keys))


def turns_frame(rec: dict[str, Any], arenas: np.ndarray) -> pd.DataFrame:
    """rec leaves have shape (T, B) (scalars per arena and turn); built column by column
    (schema.TURNS, the engine's observables, schema.METRICS, the layers' turn columns)."""
    at, counts = _played(rec)
    metrics = flat_metrics(rec)
    leaves = {
        **{c.name: rec[c.name] for c in schema.TURNS[1:]},
        **rec["engine_extra"],
        **{c.name: metrics[c.name] for c in schema.METRICS},
        **rec.get("turn_extra", {}),
    }
    cols: dict[str, Any] = {"arena": np.repeat(np.asarray(arenas), counts)}
    cols.update({name: _by_arena(np.asarray(x), at) for name, x in leaves.items()})
    return pd.DataFrame(cols, copy=False)  # (fresh arrays: no copy into 2-D blocks)


def players_frame(rec: dict[str, Any], arenas: np.ndarray, strategy_names: list[str]) -> pd.DataFrame:
    """Per-player leaves have shape (T, N, B); rows by arena, turn, player (schema.PLAYERS,
    then the layers' player columns), built column by column."""
    at, counts = _played(rec)
    n = rec["actual"].shape[1]
    rows = int(counts.sum())
    cols: dict[str, Any] = {
        "arena": np.repeat(np.asarray(arenas), counts * n),
        "turn": np.repeat(_by_arena(np.asarray(rec["turn"]), at), n),
        "player": np.tile(np.arange(n, dtype=np.int32), rows),
        "strategy": _str_column(_by_arena(np.asarray(rec["strategy"]), at), list(strategy_names)),
    }
    leaves = {**{n: rec[n] for n in schema.names(schema.PLAYERS)[4:]}, **rec.get("player_extra", {})}
    cols.update({name: _by_arena(np.asarray(x), at) for name, x in leaves.items()})
    return pd.DataFrame(cols, copy=False)


def summary_frame(final: dict[str, Any], arenas: np.ndarray, player_labels: list[str]) -> pd.DataFrame:
    """final (``final_numbers``, numpy): survived[B], collapse_turn[B], turns_played[B],
    wealth[N, B], ranks[N, B], the engine's ``extra`` and the ``outcomes`` columns."""
    # every column is an array of its own (no copy into 2-D blocks: ~1/3 of the frame's cost)
    return pd.DataFrame(summary_columns(final, arenas, player_labels), copy=False)


def summary_columns(final: dict[str, Any], arenas: np.ndarray, player_labels: list[str]) -> dict[str, Any]:
    """The summary frame's columns by name, in order, each an array of its own (a sweep puts
    its point columns first and builds one frame)."""
    wealth = np.array(final["wealth"])  # (a copy: the frame's columns are views of it)
    ranks = np.array(final["ranks"], np.int32)
    n, b = wealth.shape
    survived = np.array(final["survived"], bool)  # (a copy, as the other columns: not a view of final)
    cols: dict[str, Any] = {
        "arena": np.array(arenas),
        "survived": survived,
        "collapse_turn": collapse_column(final),
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
    return cols | outcome_columns(final["outcomes"])


def collapse_column(final: dict[str, Any]) -> pd.arrays.IntegerArray:
    """``collapse_turn``: the turn an arena collapsed, NA for the survivors."""
    survived = np.asarray(final["survived"], bool)
    return pd.arrays.IntegerArray(np.where(survived, 0, final["collapse_turn"]).astype(np.int64), survived.copy())


def outcome_columns(outcomes: dict[str, Any]) -> dict[str, np.ndarray]:
    """The outcome columns (kernels/outcomes.py, computed in the run's float) in the
    schema's order and dtypes (schema.PROJECT, then schema.GOVSIM), each an array of its own."""
    return {c.name: np.array(outcomes[c.name], dtype=c.dtype) for c in schema.PROJECT + schema.GOVSIM}


@functools.lru_cache(maxsize=64)
def _constant_str(label: str, n: int) -> pd.api.extensions.ExtensionArray:
    """A column of n copies of one string, as pandas' str dtype (immutable buffers: the
    callers take a ``.copy()``, which shares them)."""
    return pd.Series(label, index=pd.RangeIndex(n)).array  # the dtype pandas gives a scalar column
