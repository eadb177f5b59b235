"""The search space: config paths with bounds, mapped to and from the unit cube the
optimisers work in."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..config.game import ArenaConfig
from ..config.limits import to_float
from ..prepare.paths import config_base


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
        float fields in float32 (:func:`unit_values`: the value the params hold, and the device
        loop's own arithmetic), integer fields rounded (and kept inside the bounds)."""
        u = np.clip(np.asarray(unit, dtype=float), 0.0, 1.0)
        x = self.low + u * (self.high - self.low)
        x32 = np.asarray(_unit_values(u.astype(np.float32), self.low.astype(np.float32), self.high.astype(np.float32)))
        cols: dict[str, Any] = {}
        for j, n in enumerate(self.names):
            if self.integer[j]:
                cols[n] = np.clip(np.rint(x[:, j]), math.ceil(self.low[j]), math.floor(self.high[j])).astype(np.int64)
            else:
                cols[n] = x32[:, j].astype(float)
        return pd.DataFrame(cols, columns=list(self.names))

    def unit(self, values: pd.DataFrame) -> np.ndarray:
        """Unit-cube coordinates [n, D] of points given by value."""
        x = values[list(self.names)].to_numpy(dtype=float)
        return (x - self.low) / (self.high - self.low)

    def outside(self, unit: np.ndarray) -> np.ndarray:
        """float[n]: how far each unit-cube point lies outside the box (0 inside)."""
        return np.asarray(outside(np.asarray(unit, dtype=float)))


def outside(unit: Any, xp: Any = np) -> Any:
    """float[n]: how far each unit-cube point [n, D] lies outside the box (0 inside); ``xp``:
    numpy or jax.numpy (the device loop ranks with the same rule)."""
    return xp.sqrt(xp.sum(xp.maximum(unit - 1.0, 0.0) ** 2 + xp.maximum(-unit, 0.0) ** 2, axis=1))


def unit_values(u: Any, low: Any, high: Any) -> Any:
    """float32 values at unit coordinates ``u`` [n, D] (clipped): ``low + u * (high - low)``,
    traced by XLA in both loops of the search (the device loop inlines it, the host loop runs
    it jitted), so both hold the same numbers (XLA may fuse the multiply-add: numpy's float32
    would differ in the last bit)."""
    return low + u * (high - low)


@functools.cache
def _jitted() -> Any:
    import jax

    return jax.jit(unit_values)


def _unit_values(u: np.ndarray, low: np.ndarray, high: np.ndarray) -> Any:
    return _jitted()(u, low, high)
