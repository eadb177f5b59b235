"""One fork of a served arena, as the server's fork worker runs it (``POST .../fork``).

:func:`run_fork` forks the arena's folder (``bdpd_jax.fork``) and writes the fork's frames
beside it, ``<arena folder>/forks/<forkId>/<frame>.parquet`` (``turns``, ``players``,
``summary``, ``fan`` and the layers' frames), and the answer as ``fork.json``. It imports no
web framework: the server runs it in a worker process of its own (niced), so a fork of
thousands of arenas shares neither the server's GIL nor its priority with the ticks.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

#: the frames a fork writes (the layers' frames are added when the game has them)
CORE_FRAMES = ("turns", "players", "summary", "fan")
FORKS_DIR = "forks"
ANSWER_FILE = "fork.json"


def init_worker() -> None:
    """The fork worker's start (the server spawns it niced): the package's settings and JAX's
    persistent compilation cache (a later server's first fork compiles less)."""
    import bdpd_jax

    bdpd_jax.configure(compile_cache=True)


def _num(x: Any) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None


def run_fork(folder: str, out_dir: str, request: dict[str, Any]) -> dict[str, Any]:
    """Fork the arena in ``folder`` as ``request`` asks (``turn``, ``replicates``,
    ``changes``, ``seed``, ``turns``, ``standin``); write its frames to ``out_dir``; return
    the answer (without links: the route adds them). ValueError names a bad field; a
    failed fork leaves no folder."""
    import pandas as pd

    from bdpd_jax.run.fork import fan, fork

    res = fork(
        folder,
        turn=request.get("turn"),
        replicates=request["replicates"],
        changes=request.get("changes") or {},
        seed=request.get("seed"),
        turns=request.get("turns"),
        standin=request.get("standin") or "last",
    )
    f = fan(res)
    frames: dict[str, pd.DataFrame] = {"turns": res.turns, "players": res.players, "summary": res.summary, "fan": f}
    frames.update({k: res.extra[k] for k in res.extra})
    out = Path(out_dir)
    try:
        out.mkdir(parents=True)
        for name, df in frames.items():
            df.to_parquet(out / f"{name}.parquet", index=False)
        info = res.meta["fork"]
        answer = {
            "forkId": out.name,
            "arenaId": info["arenaId"],
            "turn": info["turn"],
            "replicates": int(res.meta["n_arenas"]),
            "turns": int(res.meta["turns"]),
            "seed": int(res.meta["seed"]),
            "changes": info["changes"],
            "standin": info["standin"],
            "survived": _num(res.summary["survived"].mean()),
            "fan": [{k: (_num(v) if k != "turn" else int(v)) for k, v in row.items()} for row in f.to_dict("records")],
            "frames": list(frames),
        }
        (out / ANSWER_FILE).write_text(json.dumps(answer))
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise
    return answer


__all__ = ["run_fork", "init_worker", "CORE_FRAMES", "FORKS_DIR", "ANSWER_FILE"]
