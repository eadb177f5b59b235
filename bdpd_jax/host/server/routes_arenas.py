"""The routes that change arenas (004_* A.2): create, join, start, tick, perturb, close,
delete, and resume of an interrupted arena. Kernel work runs in the arena's worker
(:meth:`LiveArena.run`); a request refused by validation changes nothing."""

from __future__ import annotations

import asyncio
import secrets
import uuid
from typing import Any

from fastapi import APIRouter, Depends, HTTPException

from bdpd_jax.host.arena import Arena
from bdpd_jax.host.players import PlayerSpec
from bdpd_jax.host.server import models as M
from bdpd_jax.host.server.deps import Access, access, hub_of
from bdpd_jax.host.server.live import LiveArena, key_hash, new_keys
from bdpd_jax.host.server.store import DiskArena, Hub

router = APIRouter(prefix="/api/arenas", tags=["arenas"], responses=M.ERRORS)
owner = access("owner")


def _step(a: Arena) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """One tick in the worker thread; the summary too when the game ended with it."""
    if a.status != "running" or a.done:
        return None, None
    rec = a.tick()
    return rec, (a.close() if a.done else None)


def _finish(hub: Hub, lv: LiveArena, summary: dict[str, Any], **extra: Any) -> None:
    """The arena is closed: tell the streams, end them, free the memory."""
    lv.publish("arena_closed", {**summary, **extra})
    lv.end_streams()
    hub.evict(lv.arena_id)


async def tick_once(hub: Hub, lv: LiveArena) -> dict[str, Any] | None:
    rec, summ = await lv.run(_step, lv.arena)
    if rec is not None:
        lv.published = rec["turn"]
        lv.publish("tick", rec)
    if summ is not None:
        _finish(hub, lv, summ)
    return rec


async def _auto(hub: Hub, lv: LiveArena, interval_s: float) -> None:
    while not lv.stop.is_set() and lv.arena.status == "running" and not lv.arena.done:
        try:
            await tick_once(hub, lv)
        except Exception as exc:  # noqa: BLE001 - auto ticks stop; the owner sees why on the stream
            lv.tick_mode = "manual"
            lv.publish("error", {"detail": f"auto tick stopped: {type(exc).__name__}: {exc}"})
            return
        try:
            await asyncio.wait_for(lv.stop.wait(), timeout=interval_s)
        except asyncio.TimeoutError:
            pass


def start_auto(hub: Hub, lv: LiveArena, interval_ms: float) -> None:
    lv.tick_mode = "auto"
    lv.task = asyncio.get_running_loop().create_task(_auto(hub, lv, interval_ms / 1000.0))


async def stop_auto(lv: LiveArena) -> None:
    """Stop auto ticks; the tick in flight (in its worker) finishes first."""
    lv.stop.set()
    if lv.task is not None and lv.task is not asyncio.current_task():
        await asyncio.gather(lv.task, return_exceptions=True)


@router.post("", response_model=M.Created, summary="Create an arena; returns all keys")
async def create(body: M.CreateArena, hub: Hub = Depends(hub_of)):
    seed = body.seed if body.seed is not None else secrets.randbelow(2**32)
    arena_id = f"{uuid.uuid4().hex[:8]}-{secrets.token_hex(4)}"
    no_talk = hub.no_talk if body.noTalk is None else body.noTalk
    keys = new_keys()
    hashes = {r: key_hash(k) for r, k in keys.items()}

    def make() -> Arena:
        arena = Arena(body.config(), seed=seed, no_talk=no_talk, pact_slots=body.pactSlots, turns=body.turns,
                      arena_id=arena_id, out_dir=hub.root / arena_id, perturbable=body.perturbable,
                      operator=hub.operator, governance_agent=body.governanceAgent)
        hub.write_auth(arena_id, hashes)  # only once the config is valid: a refused create leaves nothing
        return arena

    arena = await asyncio.get_running_loop().run_in_executor(hub.executor, make)
    hub.add(LiveArena(arena, hub.workers, hashes))
    return {"arenaId": arena_id, "ownerKey": keys["owner"], "arenaKey": keys["player"],
            "spectatorToken": keys["spectator"], "seed": seed, "status": arena.status}


@router.post("/{arena_id}/join", response_model=M.Joined, summary="Add a player (arena key)")
async def join(spec: PlayerSpec, acc: Access = Depends(access("player"))):
    lv = acc.live
    pid = await lv.run(lv.arena.join, spec)
    lv.publish("player_joined", {"playerId": pid, "agentType": spec.agentType, **lv.public()})
    return {"playerId": pid, "players": lv.arena.players}


@router.post("/{arena_id}/start", response_model=M.Started, summary="Start (waiting -> running)")
async def start(body: M.StartArena | None = None, acc: Access = Depends(owner), hub: Hub = Depends(hub_of)):
    lv = acc.live
    body = body or M.StartArena()
    await lv.run(lv.arena.start)
    lv.publish("arena_started", lv.public())
    if body.tickMode == "auto":
        start_auto(hub, lv, body.tickIntervalMs)
    return {**lv.public(), "tickMode": body.tickMode}


@router.post("/{arena_id}/tick", response_model=M.Ticked, summary="Advance one turn")
async def tick(acc: Access = Depends(owner), hub: Hub = Depends(hub_of)):
    lv = acc.live
    if lv.arena.status != "running":
        raise HTTPException(409, f"status: the arena is {lv.arena.status!r}")
    rec = await tick_once(hub, lv)
    return {"tick": rec, **lv.public()}


@router.post("/{arena_id}/perturb", response_model=M.Fired,
             summary="Fire a perturbation (bare spec, {spec} or {specId})")
async def perturb(body: M.Perturb, acc: Access = Depends(owner)):
    lv = acc.live
    fired = await lv.run(lv.arena.perturb, body.target())
    lv.publish("perturbation", fired)
    return fired


@router.post("/{arena_id}/close", response_model=M.Summary, summary="Close; returns the report")
async def close(acc: Access = Depends(owner), hub: Hub = Depends(hub_of)):
    if isinstance(acc.arena, DiskArena):
        summ = acc.arena.summary()
        if summ is None:
            raise HTTPException(409, "status: the arena was interrupted; resume or delete it")
        return summ
    lv = acc.arena
    if lv.arena.status == "waiting":
        raise HTTPException(409, "status: the arena never started")
    await stop_auto(lv)
    if lv.arena_id not in hub.live:  # the last auto tick closed it
        return hub.on_disk(lv.arena_id).summary()
    summ = await lv.run(lv.arena.close)
    _finish(hub, lv, summ)
    return summ


@router.delete("/{arena_id}", response_model=M.Deleted, summary="Delete from memory and disk")
async def delete(acc: Access = Depends(owner), hub: Hub = Depends(hub_of)):
    a = acc.arena
    if isinstance(a, LiveArena):
        await stop_auto(a)
        summ = None
        if a.arena.status == "running":
            summ = await a.run(a.arena.close)
        _finish(hub, a, summ or {"arenaId": a.arena_id, "status": "closed"}, deleted=True)
    hub.delete_folder(a.arena_id)
    return {"deleted": a.arena_id}


@router.post("/{arena_id}/resume", response_model=M.Started, summary="Resume an interrupted arena")
async def resume(body: M.Resume, acc: Access = Depends(owner), hub: Hub = Depends(hub_of)):
    """Replay ``turns.jsonl`` (verified turn by turn), then go on live: ``players`` gives a join
    spec for every external player (builtins need none)."""
    from bdpd_jax.host.replay import replay

    a = acc.arena
    if not isinstance(a, DiskArena) or a.status != "interrupted":
        raise HTTPException(409, f"status: only an interrupted arena resumes, this one is {a.status!r}")
    loop = asyncio.get_running_loop()
    arena = await loop.run_in_executor(hub.executor, lambda: replay(a.folder, resume=body.players, operator=hub.operator,
                                                                       governance_agent=body.governanceAgent))
    lv = LiveArena(arena, hub.workers, a.hashes)
    hub.live[lv.arena_id] = lv
    if body.tickMode == "auto":
        start_auto(hub, lv, body.tickIntervalMs)
    return {**lv.public(), "tickMode": body.tickMode}


__all__ = ["router", "tick_once"]
