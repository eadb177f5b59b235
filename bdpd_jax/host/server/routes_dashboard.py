"""Routes the dashboard needs beyond 004_* A.2 (issue 26): the registered perturbation types
for the owner's form, switching manual / auto ticks while running, and the tables the owner
and the spectator see alike. Each is its own route function, next to the A.2 ones."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from bdpd_jax.config import perturbations as specs
from bdpd_jax.host.live.replay import load_lines
from bdpd_jax.host.player_kinds import shown_kind
from bdpd_jax.host.server import models as M
from bdpd_jax.host.server import views
from bdpd_jax.host.server.deps import Access, access, hub_of
from bdpd_jax.host.server.live import LiveArena
from bdpd_jax.host.server.routes_arenas import locked, start_auto, stop_auto
from bdpd_jax.host.server.store import DiskArena, Hub
from bdpd_jax.kernels import perturb as pk
from bdpd_jax.kernels.engines import ENGINES

router = APIRouter(tags=["dashboard"], responses=M.ERRORS)
Owner = Annotated[Access, Depends(access("owner"))]
Viewer = Annotated[Access, Depends(access("spectator"))]  # owner or spectator
HubDep = Annotated[Hub, Depends(hub_of)]


@router.get(
    "/api/perturbation-types",
    response_model=M.PerturbationTypes,
    summary="Registered Table A.1 perturbation types: payload schema and an example",
)
async def perturbation_types(engine: Annotated[str | None, Query(max_length=64)] = None):
    """Read from the registry when called, so a type registered later is listed. ``engine``:
    say which types that engine supports (``supported``)."""
    if engine is not None and engine not in ENGINES:
        raise HTTPException(400, f"engine: unknown engine {engine!r}; known: {sorted(ENGINES)}")
    out = []
    for name, model in specs.ARENA_SPECS.items():
        payload = model.model_fields["payload"].annotation
        schema = payload.model_json_schema() if isinstance(payload, type) and issubclass(payload, BaseModel) else {}
        out.append(
            {
                "type": name,
                # the docstring's first line as text (reST ``literal`` markup left out)
                "description": (model.__doc__ or "").strip().split("\n")[0].replace("``", ""),
                "example": dict(model.example),
                "payloadSchema": schema,
                "supported": None if engine is None else pk.supported(ENGINES[engine], name),
            }
        )
    return {"types": out}


def _interval_ms(hub: Hub, lv: LiveArena) -> float | None:
    g = hub.ticker.where.get(lv.arena_id)
    return None if g is None else g.interval_s * 1000.0


@router.post(
    "/api/arenas/{arena_id}/mode",
    response_model=M.TickModeView,
    summary="Switch a running arena between manual and auto ticks (or change the interval)",
)
async def set_tick_mode(body: M.SetTickMode, acc: Owner, hub: HubDep):
    """Under the arena's lifecycle lock, like every other change of its life (a close or a
    delete cannot slip between the status check and the ticker's change)."""
    async with locked(hub, acc) as acc:
        lv = acc.live
        if lv.arena.status != "running":
            raise HTTPException(409, f"status: the arena is {lv.arena.status!r}")
        await stop_auto(hub, lv)
        if body.tick_mode == "auto":
            start_auto(hub, lv, body.tick_interval_ms)
        return {"tickMode": lv.tick_mode, "tickIntervalMs": _interval_ms(hub, lv)}


def _players(a: LiveArena | DiskArena) -> list[dict[str, Any]]:
    rows = [s.model_dump(mode="json") for s in a.arena.specs] if isinstance(a, LiveArena) else a.meta.get("players", [])
    return [
        {
            "playerId": p.get("name") or p.get("displayName") or "",
            "agentType": kind,
            "kindLabel": label,
            "strategy": None if external else p.get("strategy"),
        }
        for p in rows
        for kind in [p.get("agentType", "builtin")]
        for label, external in [shown_kind(kind)]
    ]


@router.get(
    "/api/arenas/{arena_id}/dashboard",
    response_model=M.DashboardTables,
    summary="The dashboard's tables (owner and spectator): messages, pacts, perturbations, sanctions",
)
async def dashboard_tables(acc: Viewer, hub: HubDep):
    """Owner and spectator see the same rows, but a spectator sees a private message's
    sender, recipient and turn, not its text, unless the owner chose so at create
    (docs/semantics/live/server.md); no key and no meta leave here. The files and the history are
    read in a worker thread, never on the event loop (a long turns.jsonl must not hold up
    every other request, issue 35)."""
    a = acc.arena
    if isinstance(a, LiveArena):
        mode = {"tickMode": a.tick_mode, "tickIntervalMs": _interval_ms(hub, a)}
    else:
        mode = {"tickMode": "manual", "tickIntervalMs": None}
    tables = await run_in_threadpool(_tables, a, views.view_of(acc.role, a.private_text))
    return {**tables, **mode, "spectatorPrivateText": a.private_text}


def _configured(a: LiveArena) -> list[dict[str, Any]]:
    """The config's pacts of an arena not started yet, listed as ``configured`` (they enter the
    registry at start; until then a party is the config's player index)."""
    pacts = a.arena.config.model_dump(mode="json", by_alias=True).get("pacts") or []
    return [
        {
            "id": f"config[{k}]",
            "parties": p.get("parties", []),
            "terms": p.get("terms"),
            "status": "configured",
            "violationCount": 0,
        }
        for k, p in enumerate(pacts)
    ]


def _tables(a: LiveArena | DiskArena, view: str) -> dict[str, Any]:
    """The tables of ``a`` in ``view`` (blocking reads: run it in a worker thread)."""
    folder = a.arena.out_dir if isinstance(a, LiveArena) else a.folder
    try:  # the owner's event lines (events.jsonl; turns.jsonl in folders from before it)
        lines = load_lines(folder)[1] if folder is not None else []
    except (OSError, ValueError):
        lines = []
    if isinstance(a, LiveArena):
        recs = a.history()
        started = a.arena.status != "waiting"  # bus and registry exist from the start on
        msgs = a.arena.bus.to_json()["messages"] if started else []
        pacts = a.arena.registry.compact() if started and a.arena.registry is not None else _configured(a)
    else:
        recs = a.records()
        msgs = [m for r in recs for m in r["messages"]]
        pacts = recs[-1]["pacts"] if recs else []
    if view == "spectator":
        msgs = [views.hide_private(m) for m in msgs]
    sanctions = [s for r in recs for s in r.get("sanctions", [])]
    last = recs[-1]["turn"] if recs else 0  # owner firings after the last tick: in no record yet
    pending = [
        {k: v for k, v in ln.items() if k not in ("arenaId", "event")}
        for ln in lines
        if ln.get("event") == "ownerPerturbation" and ln.get("turn", 0) > last
    ]
    return {
        "players": _players(a),
        "messages": msgs,
        "pacts": pacts,
        "sanctions": sanctions,
        "perturbations": views.perturbation_log(recs, pending),
    }


__all__ = ["router"]
