"""The index's outcome columns and the comparison page's series (issue 41).

A closed arena's report is public (``/history/{id}/summary``), so its outcome and its series
are too: ``GET /api/arenas/outcomes`` gives each closed arena's survived, collapse turn, end
turn, final stock, Gini and the engine's metric family (the report's block of ``schema.GOVSIM``
columns), and
``GET /api/arenas/history/{id}/series`` its stock and every player's wealth per turn. A
running arena's state stays with its owner and spectators (views.py): it has no outcome here.

A report is read once per change of its file (cached by size and mtime, at most
``MAX_CACHED`` reports), in a worker thread; the index polls this every few seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import APIRouter, Depends, HTTPException
from starlette.concurrency import run_in_threadpool

from bdpd_jax.host.server import models as M
from bdpd_jax.host.server.deps import ArenaId, hub_of
from bdpd_jax.host.server.store import Hub, data_file
from bdpd_jax.results import schema
from bdpd_jax.sweeps.results import gini

router = APIRouter(tags=["read"], responses=M.ERRORS)
MAX_CACHED = 10_000
_cache: dict[Path, tuple[tuple[int, int], dict[str, Any] | None]] = {}


def outcome(summary: dict[str, Any]) -> dict[str, Any]:
    """The outcome columns of a report (summary.json): the Gini of the players' gains is
    1 - GovSim's equality, as a sweep's (``bdpd_jax.sweeps.results.gini``)."""
    family = set(schema.names(schema.GOVSIM))  # the report's metric block holds these columns
    block = next((v for v in summary.values() if isinstance(v, dict) and family & set(v)), {})
    metrics = {k: v for k, v in block.items() if k in family and isinstance(v, bool | int | float | None)}
    eq = metrics.get("govsim_equality")
    g = None if eq is None else float(gini(np.asarray(eq)))
    return {
        "survived": summary.get("survived"),
        "collapseTurn": summary.get("collapseTurn"),
        "endTurn": summary.get("turnsPlayed"),
        "finalStock": summary.get("finalStock"),
        "gini": None if g is None or np.isnan(g) else round(g, 6),
        "metrics": metrics,
    }


def outcome_of(folder: Path) -> dict[str, Any] | None:
    """The outcome of the closed arena in ``folder`` (None when it has no readable report)."""
    p = data_file(folder, "summary.json")
    if p is None:
        return None
    st = p.stat()
    stamp = (st.st_size, st.st_mtime_ns)
    hit = _cache.get(p)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    try:
        out = outcome(json.loads(p.read_text()))
    except (OSError, ValueError, AttributeError):
        out = None
    if len(_cache) >= MAX_CACHED:
        _cache.clear()
    _cache[p] = (stamp, out)
    return out


def _outcomes(hub: Hub) -> list[dict[str, Any]]:
    rows = []
    for h in hub.history():
        if h["status"] == "closed":
            rows.append({"arenaId": h["arenaId"], "outcome": outcome_of(hub.root / h["arenaId"])})
    return rows


@router.get("/api/arenas/outcomes", summary="Outcome columns of the closed arenas (the index's)")
async def outcomes(hub: Hub = Depends(hub_of)):
    return {"arenas": await run_in_threadpool(_outcomes, hub)}


def _series(hub: Hub, arena_id: str) -> dict[str, Any] | None:
    d = hub.on_disk(arena_id)
    if d is None or d.status != "closed":
        return None
    recs = d.records()
    players = [p.get("playerId") for p in (recs[-1]["decisions"] if recs else [])]
    return {
        "arenaId": arena_id,
        "name": d.meta.get("config", {}).get("model", {}).get("name"),
        "engineMode": d.meta.get("config", {}).get("model", {}).get("engineMode"),
        "turn": [r["turn"] for r in recs],
        "stock": [r["stock"] for r in recs],
        "wealth": {
            p: [next((x.get("wealth") for x in r["decisions"] if x.get("playerId") == p), None) for r in recs]
            for p in players
        },
        "outcome": outcome_of(d.folder),
    }


@router.get("/api/arenas/history/{arena_id}/series", summary="A closed arena's stock and wealth per turn")
async def series(arena_id: ArenaId, hub: Hub = Depends(hub_of)):
    out = await run_in_threadpool(_series, hub, arena_id)
    if out is None:
        raise HTTPException(404, f"arenaId: no closed arena {arena_id!r} on disk")
    return out


__all__ = ["MAX_CACHED", "outcome", "outcome_of", "router"]
