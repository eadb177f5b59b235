"""Turn records on their way to frames: a record's leaves flattened for the frame builders
(:func:`flatten_record`), and a run's turn and player rows written as parquet parts as each
turn chunk comes back (``simulate(out=...)``: no run's history is held whole)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .decode import layer_record
from .frames import players_frame, turns_frame


def flatten_record(rec: Any) -> dict[str, Any]:
    """TurnRecord of numpy leaves -> plain dict for the frame builders; layers' per-turn
    columns (``turn_extra`` / ``player_extra`` of each layer record) are lifted up."""
    flat = {k: v for k, v in rec.__dict__.items()}
    for name in list(flat["extra"]):
        lr = layer_record(flat["extra"], name)
        if isinstance(lr, dict):
            for col in ("turn_extra", "player_extra"):
                flat.setdefault(col, {}).update(lr.get(col, {}))
    return flat


def stream_dir(out: str) -> Path:
    """``out`` with empty ``turns.parquet/`` and ``players.parquet/`` part folders."""
    out_dir = Path(out)
    for sub in ("turns.parquet", "players.parquet"):
        (out_dir / sub).mkdir(parents=True, exist_ok=True)
        for old in (out_dir / sub).glob("part-*.parquet"):
            old.unlink()
    return out_dir


def parquet_sink(out_dir: Path, arenas: np.ndarray, a0: int, names: list[str]) -> Callable[[Any], None]:
    """A record sink writing each turn chunk's turns and players rows as parquet parts."""
    parts = iter(range(1 << 30))

    def sink(rec: Any) -> None:
        i = next(parts)
        flat = flatten_record(rec)
        name = f"part-{a0:012d}-{i:08d}.parquet"
        turns_frame(flat, arenas).to_parquet(out_dir / "turns.parquet" / name, index=False)
        players_frame(flat, arenas, names).to_parquet(out_dir / "players.parquet" / name, index=False)

    return sink
