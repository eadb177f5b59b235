"""The results of a sweep: :class:`SweepResults` (arena rows, per-point aggregates, parquet
storage) and the per-point aggregation. Used by :mod:`bdpd_jax.sweep`."""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pandas as pd

from ..config.files import Meta, load_meta, read_parquet, write_json
from ..results import schema
from ..results.frames import flat_metrics

Z95 = 1.96
# Per-arena outcomes aggregated per point (plus ``mean_<metric>`` and HISTORY_OUTCOMES when
# history was kept): the project's and GovSim's (kernels/outcomes.py; the paper's table
# is their means). ``efficiency``, ``gini`` and ``fines_total`` are what governance searches
# rank rules by (bdpd_jax.search).
POINT_OUTCOMES = ("survived", "collapse_turn", "survival_time", "wealth_mean", "efficiency", "gini") + schema.names(
    schema.GOVSIM
)
HISTORY_OUTCOMES = ("fines_total",)

# ----------------------------------------------------------------------------- results


# A chunk's arena rows: a frame, or its columns by name (arrays of equal length), which is
# what a sweep run here keeps: the frame is built when first read (bench/README.md).
Rows: TypeAlias = pd.DataFrame | Mapping[str, Any]


class ArenaColumns(Mapping[str, Any]):
    """A chunk's arena rows as columns: those a sweep aggregates (``read``: the swept values
    and the outcomes, arrays of the frame's values, possibly views of the run's output in
    its own dtypes, e.g. float32 where the frame has float64, missing values as NaN) at
    once, every column of the frame (``make()``, in order, each an array of its own) when
    first needed, once. A sweep whose rows are never read as a frame never makes them.
    ``runs``: (points, rows of each), when the rows are known to be point-major (a plan's)."""

    def __init__(
        self,
        read: Mapping[str, Any],
        make: Callable[[], dict[str, Any]],
        runs: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self._read = read
        self._make = make
        self._all: dict[str, Any] | None = None
        self.runs = runs

    def columns(self) -> dict[str, Any]:
        if self._all is None:
            self._all = self._make()
        return self._all

    def __getitem__(self, name: str) -> Any:
        return self._read[name] if name in self._read else self.columns()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns())

    def __len__(self) -> int:
        return len(self.columns())


def combine(parts: Sequence[Rows]) -> Rows:
    """The rows of consecutive chunks as one: a single part as it is, several as one frame."""
    if len(parts) == 1:
        return parts[0]
    return pd.concat([as_frame(p) for p in parts], ignore_index=True)


def as_frame(rows: Rows) -> pd.DataFrame:
    if isinstance(rows, pd.DataFrame):
        return rows
    return pd.DataFrame(rows.columns() if isinstance(rows, ArenaColumns) else dict(rows), copy=False)


class SweepResults:
    """``arenas``: one row per arena; ``points``: per-point means and 95% CIs over replicates.

    ``rows`` may be the arena rows' columns: the frame is then built on the first read of
    ``arenas`` (a sweep that only reads its points never pays for it), once."""

    def __init__(self, rows: Rows, points: pd.DataFrame, names: list[str], meta: dict[str, Any] | None = None):
        self._rows = rows
        self.points = points
        self.names = names
        self.meta = {} if meta is None else meta

    @property
    def arenas(self) -> pd.DataFrame:
        if not isinstance(self._rows, pd.DataFrame):
            self._rows = as_frame(self._rows)
        return self._rows

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_rows": self.arenas}  # (pickled as frames: columns made on read are not)

    def __repr__(self) -> str:
        return f"SweepResults({len(self.points)} points, names={self.names}, meta={self.meta})"

    def to_parquet(self, directory: str | Path) -> Path:
        """``arenas/`` as a dataset partitioned by run chunk (``chunk=K/``), ``points.parquet``
        and ``meta.json``."""
        import pyarrow as pa  # start-up time: only when results are written or read
        import pyarrow.parquet as pq  # start-up time: only when results are written or read

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        adir = d / "arenas"
        if adir.exists():
            shutil.rmtree(adir)
        per = int(self.meta.get("chunk_arenas") or max(len(self.arenas), 1))
        df = self.arenas.assign(chunk=(self.arenas["arena"].to_numpy() // per).astype(np.int64))
        pq.write_to_dataset(
            pa.Table.from_pandas(df, preserve_index=False), root_path=str(adir), partition_cols=["chunk"]
        )
        self.points.to_parquet(d / "points.parquet", index=False)
        write_json(d / "meta.json", {**self.meta, "names": self.names})
        return d

    @classmethod
    def from_parquet(cls, directory: str | Path) -> SweepResults:
        import pyarrow.dataset as ds  # start-up time: only when results are written or read

        d = Path(directory)
        if not (d / "arenas").is_dir() or not (d / "points.parquet").is_file():
            raise ValueError(f"directory: no sweep (arenas/ and points.parquet) in {str(d)!r}")
        meta = load_meta(d / "meta.json", SweepMeta).model_dump() if (d / "meta.json").is_file() else {}
        try:
            arenas = ds.dataset(str(d / "arenas"), format="parquet", partitioning="hive").to_table().to_pandas()
        except (OSError, ValueError) as e:  # pyarrow's ArrowInvalid is a ValueError
            raise ValueError(f"{str(d / 'arenas')!r}: not a readable parquet dataset ({str(e)[:200]})") from None
        if not {"chunk", "arena"} <= set(arenas.columns):
            raise ValueError(f"{str(d / 'arenas')!r}: not a sweep's arena rows (no chunk=K/ parts with arena rows)")
        arenas = arenas.drop(columns=["chunk"]).sort_values("arena", kind="stable", ignore_index=True)
        names = list(meta.pop("names", []))
        return cls(arenas, read_parquet(d / "points.parquet"), names, meta)


class SweepMeta(Meta):
    """A sweep's ``meta.json``: the swept paths (checked); the rest (base config, players,
    seed, layout) is kept as written and never read as a path."""

    names: list[str] = []


def _moments(cols: Sequence[Any], reps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each column (float[n] values, NaN for missing, rows point-major, ``reps`` per point) ->
    per (outcome, point): the count of non-NaN values, their mean and the sum of squared
    deviations from it. All columns at once in one float64 (outcomes, n) array, worked in
    place (a few numpy calls in all rather than a dozen per column: bench/README.md); equal
    replicates sum over a reshaped axis, others by bincount; the columns with a NaN are
    done again with masks. Each point's numbers depend on its own rows only."""
    k, n, c = len(reps), int(np.sum(reps)), len(cols)
    if c == 0:
        return np.zeros((0, k), np.int64), np.zeros((0, k)), np.zeros((0, k))
    inv = None if k > 0 and bool(np.all(reps == reps[0])) else np.repeat(np.arange(k), reps)

    def by_point(x: np.ndarray) -> np.ndarray:  # (rows, n) -> (rows, k)
        if inv is None:
            return x.reshape(len(x), k, -1).sum(axis=2)
        return np.stack([np.bincount(inv, weights=r, minlength=k) for r in x]) if len(x) else np.zeros((0, k))

    x = np.empty((c, n))
    for i, col in enumerate(cols):
        x[i] = col
    cnt = np.tile(reps.astype(np.int64), (c, 1))
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = by_point(x) / np.where(reps > 0, reps, np.nan)
        redo = np.flatnonzero(np.isnan(mean).any(axis=1))  # a NaN in some point's rows (or a point with none)
        ok = ~np.isnan(x[redo])
        if len(redo):
            x[redo] = np.where(ok, x[redo], 0.0)
            cnt[redo] = by_point(ok.astype(float)).astype(np.int64)
            mean[redo] = by_point(x[redo]) / np.where(cnt[redo] > 0, cnt[redo], np.nan)
        if inv is None:
            x.reshape(c, k, -1)[...] -= mean[:, :, None]
        else:
            x -= mean[:, inv]
        np.multiply(x, x, out=x)
        if len(redo):
            x[redo] = np.where(ok, x[redo], 0.0)
        m2 = by_point(x)
    return cnt, mean, m2


def aggregate(arenas: Rows, names: Sequence[str], outcomes: Sequence[str]) -> pd.DataFrame:
    """Per point of ``arenas`` (a frame or its columns): the swept values, ``replicates``, and
    per outcome ``_mean``, ``_sd`` (ddof=1), ``_n`` (non-missing replicates), ``_ci_low``/
    ``_ci_high`` = mean -/+ 1.96 sd/sqrt(n).
    Missing values (NA, NaN) are left out, a point with none has a NaN mean and one with
    fewer than two a NaN sd. Rows point-major (a sweep's already are, and a plan's columns
    say where each point's rows are; others are sorted, stably), every outcome at once
    (:func:`_moments`); no pandas groupby (bench/README.md)."""
    runs = arenas.runs if isinstance(arenas, ArenaColumns) else None
    if runs is not None:  # a plan's rows: point-major by construction
        point, reps = runs
        order, first = None, np.cumsum(reps) - reps
    else:
        pts = np.asarray(arenas["point"])
        done = len(pts) == 0 or (pts[0] >= 0 and np.all(pts[1:] >= pts[:-1]))
        order = None if done else np.argsort(pts, kind="stable")
        sp = pts if order is None else pts[order]
        starts = np.flatnonzero(np.r_[True, sp[1:] != sp[:-1]]) if len(sp) else np.zeros(0, np.int64)
        reps = np.diff(np.r_[starts, len(sp)])
        first = starts if order is None else order[starts]
        point = sp[starts]
    cols = []
    for m in outcomes:
        col = arenas[m]
        plain = isinstance(col.dtype, np.dtype) and col.dtype.kind in "fiub"  # no NA but NaN
        x = np.asarray(col) if plain else col.to_numpy(dtype=float, na_value=np.nan)
        cols.append(x if order is None else x[order])
    cnt, mean, m2 = _moments(cols, reps)
    values = [np.asarray(arenas[n])[first] for n in names]
    return points_frame(point, values, reps, cnt, mean, m2, tuple(names), tuple(outcomes))


# The points frame's stats per outcome, in column order; ``_n`` is the int one.
STATS = ("mean", "sd", "n", "ci_low", "ci_high")


@functools.lru_cache(maxsize=32)
def _points_layout(names: tuple[str, ...], outcomes: tuple[str, ...]) -> tuple[pd.Index, np.ndarray, np.ndarray]:
    """The points frame's columns (an Index: immutable, shared by the frames), the positions
    of its float stats (per outcome: mean, sd, ci_low, ci_high) and of its int64 ones
    (``replicates``, then each outcome's ``_n``)."""
    head = ["point", *names, "replicates"]
    columns = pd.Index(head + [f"{m}_{s}" for m in outcomes for s in STATS])
    at = len(head) + len(STATS) * np.arange(len(outcomes))[:, None]
    floats = (at + [STATS.index(s) for s in STATS if s != "n"]).ravel()
    ints = np.r_[len(head) - 1, (at + STATS.index("n")).ravel()]
    return columns, floats, ints


def points_frame(
    point: np.ndarray,
    values: Sequence[np.ndarray],
    reps: np.ndarray,
    cnt: np.ndarray,
    mean: np.ndarray,
    m2: np.ndarray,
    names: tuple[str, ...],
    outcomes: tuple[str, ...],
) -> pd.DataFrame:
    """The points frame from per (outcome, point) counts, means and squared deviations:
    ``sd`` (ddof=1; NaN below two values), ``ci_low``/``ci_high`` = mean -/+ 1.96 sd/sqrt(n).
    Built from its blocks (one float64 block of the stats, one int64 block of the counts,
    one per swept value and the point: pandas' ``create_dataframe_from_blocks``), the
    columns and dtypes ``pd.DataFrame`` of the same columns gives, at a fraction of its cost
    (its per-column checks are most of a sweep's host work: bench/README.md)."""
    from pandas.api.internals import create_dataframe_from_blocks

    columns, float_at, int_at = _points_layout(names, outcomes)
    c, k = mean.shape
    stats = np.empty((c, 4, k))
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(m2 / np.where(cnt > 1, cnt - 1, np.nan), out=stats[:, 1])
        half = Z95 * sd / np.sqrt(cnt)
    stats[:, 0] = mean
    np.subtract(mean, half, out=stats[:, 2])
    np.add(mean, half, out=stats[:, 3])
    counts = np.concatenate([np.asarray(reps, np.int64)[None], cnt.astype(np.int64, copy=False)])
    blocks: list[tuple[Any, np.ndarray]] = [(stats.reshape(4 * c, k), float_at), (counts, int_at)]
    for j, v in enumerate([point, *values]):
        blocks.append((_column_block(v), np.array([j], np.intp)))
    return create_dataframe_from_blocks(blocks, index=pd.RangeIndex(k), columns=columns)


def _column_block(v: np.ndarray) -> Any:
    """One column as a block: a (1, k) numpy array for numbers, else the array pandas infers
    for the values (e.g. its str dtype for strings), as ``pd.DataFrame`` would."""
    if v.dtype.kind in "biuf":
        return np.array(v).reshape(1, -1)
    s = pd.Series(v)
    return s.array if not isinstance(s.dtype, np.dtype) else s.to_numpy(copy=True).reshape(1, -1)


def gini(equality: np.ndarray) -> np.ndarray:
    """The Gini coefficient of the players' gains: 1 - GovSim's ``equality`` (NaN stays NaN)."""
    return 1.0 - np.asarray(equality, dtype=float)


def history_totals(flat: dict) -> dict[str, np.ndarray]:
    """Per arena, from its records: ``fines_total``, every sanction deducted from every player
    over the turns played (the records' ``sanction``, governance plugins' fines included)."""
    played = np.asarray(flat["played"])  # [T, B]
    sanction = np.where(played[:, None, :], np.asarray(flat["sanction"], dtype=float), 0.0)  # [T, N, B]
    return {"fines_total": sanction.sum(axis=(0, 1))}


def metric_means(flat: dict) -> dict[str, np.ndarray]:
    played = np.asarray(flat["played"])
    metrics = flat_metrics(flat)
    out = {}
    for m in schema.names(schema.METRICS):  # (the kernels' names: tests/test_schema.py)
        x = np.where(played, np.asarray(metrics[m], dtype=float), np.nan)
        cnt = np.sum(~np.isnan(x), axis=0)
        out[f"mean_{m}"] = np.where(cnt > 0, np.nansum(x, axis=0) / np.maximum(cnt, 1), np.nan)
    return out
