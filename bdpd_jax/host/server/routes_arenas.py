"""The routes that change arenas (004_* A.2): create, join, start, tick, perturb, close,
delete, and resume of an interrupted arena. Kernel work runs in the arena's worker
(:meth:`LiveArena.run`; a tick or close of an arena that waits on players runs on the
server's loop with its kernel work offloaded, :meth:`LiveArena.run_on_loop`); a request
refused by validation changes nothing.

Each route runs under its arena's lifecycle lock (:meth:`Hub.lifecycle`) and looks the arena
up again once it holds it (:func:`locked`): a request that waited behind a DELETE finds no
arena (404), one that waited behind a close or a resume finds the arena as it now is, and a
request in the wrong state gets 409 (a tick: the arena's own check, ``Arena.atick``, whose
``ValueError("status: ...")`` errors.py answers with 409). A close or a delete does not wait
behind a tick's players: while it waits, the tick in flight stops waiting on them
(:func:`ending`, issue 35)."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Response
from starlette.concurrency import run_in_threadpool

from bdpd_jax.host.jsonio import dumps_bytes
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.arena_run import EVENTS_FILE
from bdpd_jax.host.live.players import LivePlayerConfig
from bdpd_jax.host.live.replay import replay
from bdpd_jax.host.server import models as M
from bdpd_jax.host.server.deps import Access, access, hub_of
from bdpd_jax.host.server.durable import sync_files
from bdpd_jax.host.server.live import LiveArena, key_hash, new_keys
from bdpd_jax.host.server.store import DiskArena, Hub

router = APIRouter(prefix="/api/arenas", tags=["arenas"], responses=M.ERRORS)
owner = access("owner")


def start_auto(hub: Hub, lv: LiveArena, interval_ms: float) -> None:
    hub.ticker.add(lv, interval_ms)


async def stop_auto(hub: Hub, lv: LiveArena) -> None:
    """Stop auto ticks; a tick in flight with this arena (in its worker) finishes first."""
    await hub.ticker.remove(lv)


@asynccontextmanager
async def locked(hub: Hub, acc: Access) -> AsyncIterator[Access]:
    """Hold the arena's lifecycle lock; yields its Access as the arena is now (404 if gone)."""
    arena_id = acc.arena.arena_id
    async with hub.lifecycle(arena_id):
        arena: LiveArena | DiskArena | None = hub.live.get(arena_id)
        if arena is None:
            arena = await run_in_threadpool(hub.on_disk, arena_id)  # reads its folder
        if arena is None:
            raise HTTPException(404, f"arenaId: no arena {arena_id!r}")
        yield Access(arena, acc.role)


def _status(lv: LiveArena, *allowed: str) -> None:
    """409 unless the arena's status is one of ``allowed``."""
    if lv.arena.status not in allowed:
        raise HTTPException(409, f"status: the arena is {lv.arena.status!r}, this needs {' or '.join(allowed)}")


def _perturb(a: Arena, target) -> dict[str, Any]:
    fired = a.perturb(target)
    if a.out_dir is not None:  # the owner event line is durable before the route answers
        sync_files([a.out_dir / EVENTS_FILE])
    return fired


@router.post("", response_model=M.Created, summary="Create an arena; returns all keys")
async def create(body: M.CreateArena, hub: Hub = Depends(hub_of)):
    seed = body.seed if body.seed is not None else secrets.randbelow(2**32)
    arena_id = f"{uuid.uuid4().hex[:8]}-{secrets.token_hex(4)}"
    no_talk = hub.no_talk if body.no_talk is None else body.no_talk
    keys = new_keys()
    hashes = {r: key_hash(k) for r, k in keys.items()}

    def make() -> Arena:
        # fsync off: the ticker syncs each tick's lines (durable.py)
        arena = Arena(
            body.config(),
            seed=seed,
            no_talk=no_talk,
            arena_id=arena_id,
            out_dir=hub.root / arena_id,
            operator=hub.operator,
            fsync=False,
            **body.arena_options(),
        )
        hub.write_auth(
            arena_id, hashes, body.spectator_private_text
        )  # only once the config is valid: a refused create leaves nothing
        return arena

    async with hub.lifecycle(arena_id):
        arena = await asyncio.get_running_loop().run_in_executor(hub.executor, make)
        hub.add(LiveArena(arena, hub.workers, hashes, body.spectator_private_text))
    return {
        "arenaId": arena_id,
        "ownerKey": keys["owner"],
        "arenaKey": keys["player"],
        "spectatorToken": keys["spectator"],
        "seed": seed,
        "status": arena.status,
        "spectatorPrivateText": body.spectator_private_text,
    }


@router.post("/{arena_id}/join", response_model=M.Joined, summary="Add a player (arena key)")
async def join(spec: LivePlayerConfig, acc: Access = Depends(access("player")), hub: Hub = Depends(hub_of)):
    async with locked(hub, acc) as acc:
        lv = acc.live
        _status(lv, "waiting")
        pid = await lv.run(lv.arena.join, spec)
        lv.publish("player_joined", {"playerId": pid, "agentType": spec.agent_type, **lv.public()})
        return {"playerId": pid, "players": lv.arena.players}


@router.post("/{arena_id}/start", response_model=M.Started, summary="Start (waiting -> running)")
async def start(body: M.StartArena | None = None, acc: Access = Depends(owner), hub: Hub = Depends(hub_of)):
    body = body or M.StartArena()
    async with locked(hub, acc) as acc:
        lv = acc.live
        _status(lv, "waiting")
        await lv.run(lv.arena.start)
        lv.publish("arena_started", lv.public())
        if body.tick_mode == "auto":
            start_auto(hub, lv, body.tick_interval_ms)
        return {**lv.public(), "tickMode": body.tick_mode}


@router.post("/{arena_id}/tick", response_model=M.Ticked, summary="Advance one turn")
async def tick(acc: Access = Depends(owner), hub: Hub = Depends(hub_of)):
    """The arena checks its status itself (``Arena.atick``: 409 unless running). The answer is
    the tick's record (the owner's view: as built) rendered once (``dumps_bytes``), not
    validated again: ``M.Ticked`` documents it in the OpenAPI schema."""
    async with locked(hub, acc) as acc:
        lv = acc.live
        rec = await hub.ticker.tick_once(lv)
        return Response(dumps_bytes({"tick": rec, **lv.public()}), media_type="application/json")


@router.post(
    "/{arena_id}/perturb", response_model=M.Fired, summary="Fire a perturbation (bare spec, {spec} or {specId})"
)
async def perturb(body: M.Perturb, acc: Access = Depends(owner), hub: Hub = Depends(hub_of)):
    async with locked(hub, acc) as acc:
        lv = acc.live
        _status(lv, "running")
        fired = await lv.run(_perturb, lv.arena, body.target())
        lv.publish("perturbation", fired)
        return fired


@asynccontextmanager
async def ending(hub: Hub, acc: Access) -> AsyncIterator[Access]:
    """``locked`` for a close or a delete: while it waits for the arena, the arena's tick in
    flight stops waiting on players and its discussion ends (``Arena.interrupting``), so the
    owner is answered at once."""
    live = acc.arena.arena if isinstance(acc.arena, LiveArena) else None
    with live.interrupting() if live is not None else nullcontext():
        async with locked(hub, acc) as acc:
            yield acc


@router.post("/{arena_id}/close", response_model=M.Summary, summary="Close; returns the report")
async def close(acc: Access = Depends(owner), hub: Hub = Depends(hub_of)):
    async with ending(hub, acc) as acc:
        if isinstance(acc.arena, DiskArena):
            summ = acc.arena.summary()
            if summ is None:
                raise HTTPException(409, "status: the arena was interrupted; resume or delete it")
            return summ
        lv = acc.arena
        if lv.arena.status == "waiting":
            raise HTTPException(409, "status: the arena never started")
        await stop_auto(hub, lv)
        if lv.arena_id not in hub.live:  # the last auto tick closed it
            d = await run_in_threadpool(hub.on_disk, lv.arena_id)
            summ = await run_in_threadpool(d.summary) if d is not None else None
            if summ is None:
                raise HTTPException(409, "status: the arena is closed and has no report")
            return summ
        summ = await lv.close()
        hub.finish(lv, summ)
        return summ


@router.delete("/{arena_id}", response_model=M.Deleted, summary="Delete from memory and disk")
async def delete(acc: Access = Depends(owner), hub: Hub = Depends(hub_of)):
    async with ending(hub, acc) as acc:
        a = acc.arena
        if isinstance(a, LiveArena):
            await stop_auto(hub, a)
            summ = None
            if a.arena.status == "running" and a.arena_id in hub.live:
                summ = await a.close()
            if a.arena_id in hub.live:
                hub.finish(a, summ or {"arenaId": a.arena_id, "status": "closed"}, deleted=True)
        await asyncio.get_running_loop().run_in_executor(hub.executor, hub.delete_folder, a.arena_id)
    hub.forget_lock(a.arena_id)
    return {"deleted": a.arena_id}


@router.post("/{arena_id}/resume", response_model=M.Started, summary="Resume an interrupted arena")
async def resume(body: M.Resume, acc: Access = Depends(owner), hub: Hub = Depends(hub_of)):
    """Replay ``turns.jsonl`` (verified turn by turn), then go on live: ``players`` gives a join
    spec for every external player (builtins need none). The arena is the folder's: a folder
    whose meta.json names another arena is refused, and a live arena is never replaced."""

    async with locked(hub, acc) as acc:
        a = acc.arena
        if not isinstance(a, DiskArena) or a.status != "interrupted":
            raise HTTPException(409, f"status: only an interrupted arena resumes, this one is {a.status!r}")
        if a.meta.get("arenaId") != a.arena_id:
            raise HTTPException(400, "meta.json: arenaId does not match the arena's folder; it cannot resume")
        loop = asyncio.get_running_loop()
        arena = await loop.run_in_executor(
            hub.executor,
            lambda: replay(
                a.folder, resume=body.players, operator=hub.operator, governance_agent=body.governance_agent
            ),
        )
        if arena.arena_id != a.arena_id or arena.arena_id in hub.live:
            raise HTTPException(409, f"status: arena {a.arena_id!r} is live; it cannot be resumed over")
        lv = LiveArena(arena, hub.workers, a.hashes, a.private_text)
        hub.add(lv)
        if body.tick_mode == "auto":
            start_auto(hub, lv, body.tick_interval_ms)
        return {**lv.public(), "tickMode": body.tick_mode}


__all__ = ["router", "locked"]
