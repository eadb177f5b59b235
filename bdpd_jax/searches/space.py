"""The search space: config paths with bounds, mapped to and from the unit cube the
optimisers work in."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..config.game import ArenaConfig
from ..config.limits import to_float
from ..sweeps.paths import config_base


@dataclass(frozen=True)
class Space:
    """``names`` (config paths), their ``low``/``high`` bounds and which are integers (an int
    field of the config: its values are rounded)."""

    names: tuple[str, ...]
    low: np.ndarray  # float[D]
    high: np.ndarray  # float[D]
    integer: np.ndarray  # bool[D]

    @classmethod
    def of(cls, config: ArenaConfig, space: Any) -> Space:
        """ValueError naming the path of an unknown field, a non-numeric one or bad bounds."""
        if not isinstance(space, dict) or not space:
            raise ValueError(f"space: must be a non-empty dict path -> (low, high), got {space!r}")
        base = config_base(config)
        lo, hi, ints = [], [], []
        for name, b in space.items():
            _, old = base.resolve(str(name))  # ValueError naming the path
            if isinstance(old, bool) or not isinstance(old, (int, float)):
                raise ValueError(f"space[{name!r}]: only numeric fields can be searched; the config holds {old!r}")
            if not (
                isinstance(b, (tuple, list))
                and len(b) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in b)
            ):
                raise ValueError(f"space[{name!r}]: must be (low, high), got {b!r}")
            a, z = to_float(b[0], f"space[{name!r}][0]"), to_float(b[1], f"space[{name!r}][1]")
            if not (math.isfinite(a) and math.isfinite(z) and a < z):
                raise ValueError(f"space[{name!r}]: needs finite low < high, got {b!r}")
            is_int = isinstance(old, int)
            if is_int and math.ceil(a) > math.floor(z):
                raise ValueError(f"space[{name!r}]: an integer field with no integer in {b!r}")
            lo.append(a)
            hi.append(z)
            ints.append(is_int)
        return cls(tuple(str(n) for n in space), np.asarray(lo), np.asarray(hi), np.asarray(ints, bool))

    @property
    def dim(self) -> int:
        return len(self.names)

    def values(self, unit: np.ndarray) -> pd.DataFrame:
        """The points (columns = paths) at unit-cube coordinates [n, D], clipped to the box;
        integer fields rounded (and kept inside the bounds)."""
        u = np.clip(np.asarray(unit, dtype=float), 0.0, 1.0)
        x = self.low + u * (self.high - self.low)
        cols: dict[str, Any] = {}
        for j, n in enumerate(self.names):
            if self.integer[j]:
                cols[n] = np.clip(np.rint(x[:, j]), math.ceil(self.low[j]), math.floor(self.high[j])).astype(np.int64)
            else:
                cols[n] = x[:, j]
        return pd.DataFrame(cols, columns=list(self.names))

    def unit(self, values: pd.DataFrame) -> np.ndarray:
        """Unit-cube coordinates [n, D] of points given by value."""
        x = values[list(self.names)].to_numpy(dtype=float)
        return (x - self.low) / (self.high - self.low)

    def outside(self, unit: np.ndarray) -> np.ndarray:
        """float[n]: how far each unit-cube point lies outside the box (0 inside)."""
        u = np.asarray(unit, dtype=float)
        return np.sqrt(np.sum(np.maximum(u - 1.0, 0.0) ** 2 + np.maximum(-u, 0.0) ** 2, axis=1))
