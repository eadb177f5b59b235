"""The routes that read arenas (004_* A.2): health, history, views, perturbation log,
summary and the SSE stream. Closed and interrupted arenas are read from their folders.

No handler reads a file or a long history on the event loop (issue 35): what reads a folder
or turns.jsonl runs in a worker thread (``run_in_threadpool``), so a spectator reading a long
history holds up no other request; what is in memory is read on the loop."""

from __future__ import annotations

import asyncio
import datetime as _dt
from typing import Any

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from bdpd_jax.host.server import models as M
from bdpd_jax.host.server import views
from bdpd_jax.host.server.deps import Access, ArenaId, KeyHeader, access, hub_of
from bdpd_jax.host.server.live import LiveArena, Subscriber, sse
from bdpd_jax.host.server.store import DiskArena, Hub

router = APIRouter(tags=["read"], responses=M.ERRORS)
owner = access("owner")
KEEP_ALIVE_S = 15.0


@router.get("/api/health", response_model=M.Health, summary="Liveness probe")
async def health():
    return {"ok": True, "ts": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")}


@router.get("/api/arenas", response_model=M.ArenaList, summary="List arenas (the owner's if a key is sent)")
async def list_arenas(x_owner_key: KeyHeader = None, hub: Hub = Depends(hub_of)):
    if x_owner_key is None:
        return {"arenas": [lv.public() for lv in hub.live.values()]}
    rows = [lv.public() for lv in hub.live.values() if lv.role_of(x_owner_key) == "owner"]
    return {"arenas": rows + await run_in_threadpool(_owned_on_disk, hub, x_owner_key)}


def _owned_on_disk(hub: Hub, key: str) -> list[dict[str, Any]]:
    """The public views of the closed and interrupted arenas ``key`` owns (reads folders)."""
    rows = []
    for h in hub.history():
        d = hub.on_disk(h["arenaId"])
        if d is not None and d.role_of(key) == "owner":
            rows.append(views.public_meta_view(d.meta, d.status, turn=d.turns_played()))
    return rows


@router.get("/api/arenas/history", response_model=M.HistoryList, summary="Closed and interrupted arenas on disk")
async def history(hub: Hub = Depends(hub_of)):
    return {"arenas": await run_in_threadpool(hub.history)}


@router.get("/api/arenas/history/{arena_id}/summary", response_model=M.Summary, summary="Report of a closed arena")
async def history_summary(arena_id: ArenaId, hub: Hub = Depends(hub_of)):
    d = await run_in_threadpool(hub.on_disk, arena_id)
    summ = await run_in_threadpool(d.summary) if d is not None else None
    if summ is None:
        raise HTTPException(404, f"arenaId: no closed arena {arena_id!r} on disk")
    return summ


@router.get("/api/arenas/{arena_id}", response_model=M.PublicView, summary="Public view (no hidden value)")
async def public_view(acc: Access = Depends(access("public"))):
    a = acc.arena
    if isinstance(a, LiveArena):
        return a.public()
    return views.public_meta_view(a.meta, a.status, turn=await run_in_threadpool(a.turns_played))


def _disk_owner(d: DiskArena) -> dict[str, Any]:
    recs = d.records()
    last = recs[-1] if recs else None
    return {
        **views.public_meta_view(d.meta, d.status, turn=d.turns_played()),
        "stock": last["stock"] if last else None,
        "collapsed": last["collapsed"] if last else False,
        "meta": d.meta,
        "lastTick": last,
        "pacts": last["pacts"] if last else [],
        "messages": [m for r in recs for m in r["messages"]],
    }


@router.get("/api/arenas/{arena_id}/owner", response_model=M.OwnerView, summary="Owner view (full state)")
async def owner_view(acc: Access = Depends(owner)):
    a = acc.arena
    return a.owner() if isinstance(a, LiveArena) else await run_in_threadpool(_disk_owner, a)


@router.get(
    "/api/arenas/{arena_id}/perturbations",
    response_model=M.PerturbationLog,
    summary="Perturbation specs and the log of firings",
)
async def perturbations(acc: Access = Depends(owner)):
    a = acc.arena
    if isinstance(a, LiveArena):
        specs, recs = a.arena.config.model_dump(mode="json")["perturbations"], await run_in_threadpool(a.history)
    else:
        specs, recs = a.meta.get("config", {}).get("perturbations", []), await run_in_threadpool(a.records)
    return {"specs": specs, "log": views.perturbation_log(recs)}


@router.get("/api/arenas/{arena_id}/summary", response_model=M.Summary, summary="Full post-game report")
async def summary(acc: Access = Depends(owner)):
    a = acc.arena
    if isinstance(a, DiskArena):
        summ = await run_in_threadpool(a.summary)
        if summ is None:
            raise HTTPException(409, "status: the arena was interrupted; resume or delete it")
        return summ
    if a.arena.status == "waiting":
        raise HTTPException(409, "status: the arena has not started")
    return await a.run(a.arena.summary)


async def _events(sub: Subscriber):
    while True:
        try:
            msg = await asyncio.wait_for(sub.queue.get(), timeout=KEEP_ALIVE_S)
        except TimeoutError:
            msg = ": keep-alive\n\n"
        if msg is None:
            return
        yield msg
        if msg.startswith("event: dropped"):
            return


def _disk_events(d: DiskArena, role: str) -> list[str]:
    """The events of an arena read from its folder (blocking reads: run it in a worker thread)."""
    view = views.view_of(role, d.private_text)
    recs = d.records()
    init = {
        **views.public_meta_view(d.meta, d.status, turn=recs[-1]["turn"] if recs else 0),
        "history": [views.compact_tick(r, view) if view != "public" else views.public_tick(r) for r in recs],
    }
    out = [sse("init", init)]
    summ = d.summary()
    if summ is not None:
        out.append(sse("arena_closed", summ))
    else:
        out.append(sse("arena_interrupted", {"arenaId": d.arena_id, "turn": len(recs)}))
    return out


async def _replayed(events: list[str]):
    for m in events:
        yield m


@router.get(
    "/api/arenas/{arena_id}/stream",
    summary="SSE: init, player_joined, arena_started, tick, perturbation, arena_closed (then the end)",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "Server-Sent Events"}},
)
async def stream(acc: Access = Depends(access("public"))):
    """Owner and spectator get every tick in full; the arena key (a player) the public view.
    A closed arena is history: anyone gets its full record (init, arena_closed, end), as
    anyone gets its summary. A subscriber that lets ``QUEUE_LIMIT`` events pile up is
    dropped with a ``dropped`` event."""
    a = acc.arena
    headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
    if isinstance(a, DiskArena) and a.status == "closed":
        events = await run_in_threadpool(_disk_events, a, "spectator")
        return StreamingResponse(_replayed(events), media_type="text/event-stream", headers=headers)
    if acc.role == "public":
        raise HTTPException(403, "token: a spectator token, arena key or owner key is required")
    if isinstance(a, DiskArena):
        events = await run_in_threadpool(_disk_events, a, acc.role)
        return StreamingResponse(_replayed(events), media_type="text/event-stream", headers=headers)
    # subscribed first, holding its events, so that none is lost while ``init`` (the history
    # up to the last published tick, read in a worker thread) is built; then init, then them
    sub = Subscriber(acc.role, held=True)
    upto = a.published
    a.subscribers.add(sub)
    try:
        init = await run_in_threadpool(lambda: sse("init", a.init_event(acc.role, upto)))
    except BaseException:
        a.subscribers.discard(sub)
        raise
    sub.open(init)

    async def gen():
        try:
            async for m in _events(sub):
                yield m
        finally:
            a.subscribers.discard(sub)

    return StreamingResponse(gen(), media_type="text/event-stream", headers=headers)


__all__ = ["router"]
