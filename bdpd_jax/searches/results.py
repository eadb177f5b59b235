""":class:`SearchResults`: every candidate evaluated by a search, its best point and Pareto front."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import Field, FiniteFloat

from ..config.files import Meta, load_meta, read_parquet, write_json
from ..config.game import ArenaConfig
from ..prepare.paths import apply_values, config_base
from .confirm import PREFIX, confirmed_view
from .ranking import front_mask, minimised, order

# History columns that are bookkeeping, not metrics.
BOOK = ("generation", "candidate", "rank", "violation", "feasible")


@dataclass
class SearchResults:
    """``history``: one row per candidate per generation: ``generation``, ``candidate``, the
    searched paths' values, the optimiser's unit-cube coordinates (``unit_<j>``), the sweep's
    point columns (``replicates``, ``<outcome>_mean/_sd/_n/_ci_low/_ci_high``), ``violation``
    (0 = feasible), ``feasible`` and ``rank`` (within its generation, 0 = best); the
    confirmed candidates' ``confirm_<column>``, ``confirm_violation``, ``confirm_feasible``
    (their estimates on fresh replicates; NaN on the rows not confirmed)."""

    history: pd.DataFrame
    names: list[str]
    objectives: list[tuple[str, str]]
    constraints: list[tuple[str, str, float]]
    config: ArenaConfig | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def _confirmed(self) -> pd.DataFrame | None:
        return confirmed_view(self.history, self.names)

    @property
    def best(self) -> dict[str, Any]:
        """The best candidate (feasible first, then the first objective; with several
        objectives a member of the front). When the search confirmed its top candidates on
        fresh replicates (``confirm``, the default), the best of those by their confirmed
        estimates. ``point`` {path: value}, ``config``, ``metrics`` (every point column with
        its CI, ``violation`` and ``feasible``: the confirmation's estimates when
        ``confirmed``, else its generation's), ``in_sample`` (the same from its generation's
        replicates), ``confirmed``, ``generation``, ``candidate``."""
        h = self.history
        if h.empty:
            raise ValueError("SearchResults.best: the search evaluated no candidate")
        view = self._confirmed()
        src = h if view is None else view
        at = int(order(minimised(src, self.objectives[:1])[:, 0], src["violation"].to_numpy(float))[0])
        row = src.iloc[at]
        point = {n: row[n].item() if hasattr(row[n], "item") else row[n] for n in self.names}
        return {
            "point": point,
            "config": self.config_at(point) if self.config is not None else None,
            "metrics": self._metrics(row),
            "in_sample": self._metrics(h.loc[row.name]),
            "confirmed": view is not None,
            "generation": int(row["generation"]),
            "candidate": int(row["candidate"]),
        }

    def _metrics(self, row: pd.Series) -> dict[str, Any]:
        skip = set(self.names) | set(BOOK)
        metrics = {c: row[c] for c in row.index if c not in skip and not c.startswith(("unit_", PREFIX))}
        metrics.update(violation=float(row["violation"]), feasible=bool(row["feasible"]))
        return metrics

    @property
    def front(self) -> pd.DataFrame:
        """The Pareto set (several objectives; empty with one): the non-dominated feasible
        candidates (the least violating when none is feasible), judged by their confirmed
        estimates when the search confirmed its in-sample front, else over the whole history.
        Rows of the history (in-sample and ``confirm_*`` columns)."""
        h = self.history
        if len(self.objectives) < 2 or h.empty:
            return h.iloc[0:0]
        view = self._confirmed()
        src = h if view is None else view
        mask = front_mask(minimised(src, self.objectives), src["violation"].to_numpy(float))
        f = h.loc[src.index[mask]]
        c = self.objectives[0][0]
        by = PREFIX + c if view is not None and PREFIX + c in f else c
        return f.sort_values(by, ascending=self.objectives[0][1] == "min", ignore_index=True)

    def config_at(self, point: Any) -> ArenaConfig:
        """The config at a point: ``{path: value}``, a history row, or ``best`` itself."""
        if self.config is None:
            raise ValueError("config_at: this search's config was not stored (it holds a Policy strategy)")
        if isinstance(point, dict) and "point" in point and isinstance(point["point"], dict):
            point = point["point"]
        if isinstance(point, pd.Series):
            point = point.to_dict()
        if not isinstance(point, dict) or any(n not in point for n in self.names):
            raise ValueError(f"config_at: a point needs a value for each of {self.names}, got {point!r}")
        return apply_values(config_base(self.config), self.names, [point[n] for n in self.names])

    def to_parquet(self, directory: str | Path) -> Path:
        """``history.parquet`` and ``meta.json`` (the config, paths, objectives, constraints)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self.history.to_parquet(d / "history.parquet", index=False)
        write_json(d / "meta.json", self._meta_body())
        return d

    def _meta_body(self) -> dict[str, Any]:
        cfg = None
        if self.config is not None:
            try:
                cfg = self.config.model_dump(mode="json")
                ArenaConfig.load(cfg)  # a Policy strategy does not survive JSON: keep none
            except Exception:  # noqa: BLE001 (any failure means: not storable)
                cfg = None
        return {
            **self.meta,
            "names": self.names,
            "objectives": [list(o) for o in self.objectives],
            "constraints": [list(c) for c in self.constraints],
            "config": cfg,
        }

    @classmethod
    def from_parquet(cls, directory: str | Path) -> SearchResults:
        """The search written by :meth:`to_parquet`; its ``meta.json`` is validated
        (:class:`SearchMeta`) and ValueError names the file and field of anything wrong."""
        d = Path(directory)
        if not (d / "history.parquet").is_file() or not (d / "meta.json").is_file():
            raise ValueError(f"directory: no search (history.parquet and meta.json) in {str(d)!r}")
        m = load_meta(d / "meta.json", SearchMeta)
        cfg = None
        if m.config is not None:
            try:
                cfg = ArenaConfig.model_validate(m.config)  # a JSON object, never a path to follow
            except ValueError as e:
                raise ValueError(f"{str(d / 'meta.json')!r}: config: {e}") from None
        meta = m.model_dump(exclude={"names", "objectives", "constraints", "config"})
        return cls(
            read_parquet(d / "history.parquet"),
            list(m.names),
            [(c, sense) for c, sense in m.objectives],
            [(c, op, float(b)) for c, op, b in m.constraints],
            cfg,
            meta,
        )


class SearchMeta(Meta):
    """A search's ``meta.json``: the searched paths, objectives, constraints and the config
    (a JSON object, or null when it held a Policy); other keys are kept as written."""

    names: list[str]
    objectives: list[tuple[str, Literal["max", "min"]]] = Field(min_length=1)
    constraints: list[tuple[str, Literal[">=", "<="], FiniteFloat]] = []
    config: dict[str, Any] | None = None
