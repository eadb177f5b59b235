"""The HTTP API of 004_* A.2 over live arenas (FastAPI): create, join, start, tick, stream.

``create_app(root)`` serves arenas whose folders live under ``root`` (``root/<arenaId>/``:
meta.json, turns.jsonl, summary.json). Auth (004_* A.2): the owner key (``X-Owner-Key``,
``owner_*``) for administration, the arena key (``X-Arena-Key``) to join, the spectator token
(``X-Spectator-Token`` or ``?token=``, ``spec_*``) to stream. Keys are random per arena.

Ticks on one arena are serialised (an ``asyncio.Lock``). ``start`` with ``{"tickMode":
"auto", "tickIntervalMs": n}`` ticks in the background until the game ends (then closes);
the default is manual (``POST /tick``). ``/stream`` is Server-Sent Events: ``init`` (status
and the compact history of every past tick), then ``player_joined``, ``arena_started``,
``tick`` and ``arena_closed``.

Run: ``uvicorn --factory bdpd_jax.host.server:app_from_env`` (root from ``BDPD_ARENAS_DIR``,
default ``./arenas``).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse

from bdpd_jax.host._json import plain_json
from bdpd_jax.host.arena import DEFAULT_PACT_SLOTS, Arena
from bdpd_jax.limits import check_tick_interval

_ARENA_OPTIONS = ("seed", "noTalk", "pactSlots", "turns", "perturbable")


class _Live:
    """One served arena: the Arena, its keys, lock, subscribers and auto-tick task."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena
        self.owner_key = "owner_" + secrets.token_urlsafe(18)
        self.arena_key = "arena_" + secrets.token_urlsafe(18)
        self.spectator_token = "spec_" + secrets.token_urlsafe(18)
        self.lock = asyncio.Lock()
        self.subscribers: set[asyncio.Queue] = set()
        self.task: asyncio.Task | None = None

    def publish(self, event: str, data: Any) -> None:
        msg = f"event: {event}\ndata: {json.dumps(plain_json(data), separators=(',', ':'))}\n\n"
        for q in list(self.subscribers):
            q.put_nowait(msg)

    def public(self) -> dict[str, Any]:
        a = self.arena
        last = a.records[-1] if a.records else None
        return {"arenaId": a.arena_id, "status": a.status, "turn": a.turn,
                "maxTurns": getattr(a, "max_turns", a.config.model.maxTurns),
                "engineMode": a.config.model.engineMode, "name": a.config.model.name,
                "players": [{"playerId": s.name, "agentType": s.agentType} for s in a.specs],
                "stock": last["stock"] if last else None, "collapsed": last["collapsed"] if last else False}


def _compact_tick(rec: dict[str, Any]) -> dict[str, Any]:
    """What the SSE ``init`` history keeps of a tick."""
    return {"turn": rec["turn"], "stock": rec["stock"], "collapsed": rec["collapsed"],
            "decisions": [{k: d.get(k) for k in ("playerId", "requested", "actual", "wealth", "announced")}
                          for d in rec["decisions"]],
            "violations": len(rec["violations"]), "messages": len(rec["messages"])}


def create_app(root: str | Path = "arenas") -> FastAPI:
    """The API app; arenas persist under ``root``."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    app = FastAPI(title="BDPD Arena (bdpd_jax live host)")
    live: dict[str, _Live] = {}
    app.state.arenas = live

    def get(arena_id: str) -> _Live:
        if arena_id not in live:
            raise HTTPException(404, f"arenaId: no live arena {arena_id!r}")
        return live[arena_id]

    def owner(lv: _Live, key: str | None) -> None:
        if key != lv.owner_key:
            raise HTTPException(403, "X-Owner-Key: missing or wrong owner key")

    @app.exception_handler(ValueError)
    async def _value_error(request: Request, exc: ValueError):
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.get("/api/health")
    async def health():
        return {"ok": True, "ts": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}

    @app.post("/api/arenas")
    async def create(body: dict):
        """Body: the arena-creation payload (004_* A.2.1) plus optional ``players`` (builtins),
        ``seed``, ``noTalk``, ``pactSlots``, ``turns``, ``perturbable`` (default True: the
        owner may fire any type the engine supports)."""
        body = dict(body)
        opts = {k: body.pop(k) for k in _ARENA_OPTIONS if k in body}
        seed = opts.get("seed", secrets.randbelow(2**32))
        probe = Arena(body, seed=seed)  # validates (ValueError -> 400) and gives the id
        arena_id = f"{probe.arena_id[:8]}-{secrets.token_hex(4)}"
        arena = Arena(body, seed=seed, no_talk=bool(opts.get("noTalk", False)),
                      pact_slots=opts.get("pactSlots", DEFAULT_PACT_SLOTS), turns=opts.get("turns"),
                      arena_id=arena_id, out_dir=root / arena_id,
                      perturbable=bool(opts.get("perturbable", True)))
        lv = _Live(arena)
        live[arena_id] = lv
        return {"arenaId": arena_id, "ownerKey": lv.owner_key, "arenaKey": lv.arena_key,
                "spectatorToken": lv.spectator_token, "seed": seed, "status": arena.status}

    @app.get("/api/arenas")
    async def list_arenas(x_owner_key: str | None = Header(None)):
        rows = [lv.public() for lv in live.values() if x_owner_key is None or lv.owner_key == x_owner_key]
        return {"arenas": rows}

    @app.get("/api/arenas/history")
    async def history():
        out = []
        for meta in sorted(root.glob("*/meta.json")):
            try:
                m = json.loads(meta.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if m.get("status") == "closed":
                out.append({k: m.get(k) for k in ("arenaId", "createdAt", "closedAt", "turnsPlayed", "seed")})
        return {"arenas": out}

    @app.get("/api/arenas/history/{arena_id}/summary")
    async def history_summary(arena_id: str):
        path = root / arena_id / "summary.json"
        if "/" in arena_id or ".." in arena_id or not path.is_file():
            raise HTTPException(404, f"arenaId: no closed arena {arena_id!r} on disk")
        return json.loads(path.read_text())

    @app.get("/api/arenas/{arena_id}")
    async def public_view(arena_id: str):
        return get(arena_id).public()

    @app.get("/api/arenas/{arena_id}/owner")
    async def owner_view(arena_id: str, x_owner_key: str | None = Header(None)):
        lv = get(arena_id)
        owner(lv, x_owner_key)
        a = lv.arena
        out = {**lv.public(), "meta": a.meta(), "lastTick": a.records[-1] if a.records else None}
        if a.status != "waiting":
            out["pacts"] = a.registry.compact() if a.registry is not None else []
            out["messages"] = a.bus.to_json()["messages"]
        return out

    @app.post("/api/arenas/{arena_id}/join")
    async def join(arena_id: str, spec: dict, x_arena_key: str | None = Header(None)):
        lv = get(arena_id)
        if x_arena_key != lv.arena_key:
            raise HTTPException(403, "X-Arena-Key: missing or wrong arena key")
        async with lv.lock:
            pid = lv.arena.join(spec)
        lv.publish("player_joined", {"playerId": pid, "agentType": lv.arena.specs[-1].agentType})
        return {"playerId": pid, "players": lv.arena.players}

    async def _tick(lv: _Live) -> dict[str, Any] | None:
        async with lv.lock:
            if lv.arena.status != "running" or lv.arena.done:
                return None
            rec = await lv.arena.atick()
            if rec is not None:
                lv.publish("tick", rec)
            if lv.arena.done:
                summ = await lv.arena.aclose()
                lv.publish("arena_closed", summ)
            return rec

    async def _auto(lv: _Live, interval_s: float) -> None:
        while lv.arena.status == "running" and not lv.arena.done:
            await _tick(lv)
            await asyncio.sleep(interval_s)

    @app.post("/api/arenas/{arena_id}/start")
    async def start(arena_id: str, body: dict | None = None, x_owner_key: str | None = Header(None)):
        lv = get(arena_id)
        owner(lv, x_owner_key)
        body = body or {}
        mode = body.get("tickMode", "manual")
        if mode not in ("manual", "auto"):
            raise HTTPException(400, f"tickMode: must be 'manual' or 'auto', got {mode!r}")
        interval = check_tick_interval(body.get("tickIntervalMs", 0)) / 1000.0  # before starting
        async with lv.lock:
            lv.arena.start()
        lv.publish("arena_started", lv.public())
        if mode == "auto":
            lv.task = asyncio.create_task(_auto(lv, interval))
        return {**lv.public(), "tickMode": mode}

    @app.post("/api/arenas/{arena_id}/tick")
    async def tick(arena_id: str, x_owner_key: str | None = Header(None)):
        lv = get(arena_id)
        owner(lv, x_owner_key)
        if lv.arena.status != "running":
            raise HTTPException(409, f"status: the arena is {lv.arena.status!r}")
        rec = await _tick(lv)
        return {"tick": rec, **lv.public()}

    @app.post("/api/arenas/{arena_id}/close")
    async def close(arena_id: str, x_owner_key: str | None = Header(None)):
        lv = get(arena_id)
        owner(lv, x_owner_key)
        if lv.task is not None:
            lv.task.cancel()
        async with lv.lock:
            if lv.arena.status == "waiting":
                raise HTTPException(409, "status: the arena never started")
            summ = await lv.arena.aclose()
        lv.publish("arena_closed", summ)
        return summ

    @app.post("/api/arenas/{arena_id}/perturb")
    async def perturb(arena_id: str, body: dict, x_owner_key: str | None = Header(None)):
        """Body ``{"specId": id}`` (a spec of the config, any trigger) or ``{"spec": {...}}``
        (ad hoc); applied before the next tick."""
        lv = get(arena_id)
        owner(lv, x_owner_key)
        target = body.get("specId", body.get("spec"))
        if not isinstance(target, (str, dict)):
            raise HTTPException(400, "body: needs 'specId' (string) or 'spec' (object)")
        async with lv.lock:
            fired = lv.arena.perturb(target)
        lv.publish("perturbation", fired)
        return fired

    @app.get("/api/arenas/{arena_id}/perturbations")
    async def perturbations(arena_id: str, x_owner_key: str | None = Header(None)):
        lv = get(arena_id)
        owner(lv, x_owner_key)
        specs = lv.arena.config.model_dump(mode="json")["perturbations"]
        log = [{"turn": r["turn"], **p, "owner": False} for r in lv.arena.records for p in r["perturbations"]]
        log += [{**p, "owner": True} for r in lv.arena.records for p in r["ownerPerturbations"]]
        return {"specs": specs, "log": sorted(log, key=lambda e: e["turn"])}

    @app.get("/api/arenas/{arena_id}/summary")
    async def summary(arena_id: str, x_owner_key: str | None = Header(None)):
        lv = get(arena_id)
        owner(lv, x_owner_key)
        if lv.arena.status == "waiting":
            raise HTTPException(409, "status: the arena has not started")
        return lv.arena.summary()

    @app.delete("/api/arenas/{arena_id}")
    async def delete(arena_id: str, x_owner_key: str | None = Header(None)):
        lv = get(arena_id)
        owner(lv, x_owner_key)
        if lv.task is not None:
            lv.task.cancel()
        async with lv.lock:
            if lv.arena.status == "running":
                await lv.arena.aclose()
        live.pop(arena_id, None)
        shutil.rmtree(root / arena_id, ignore_errors=True)
        return {"deleted": arena_id}

    @app.get("/api/arenas/{arena_id}/stream")
    async def stream(arena_id: str, request: Request, token: str | None = Query(None),
                     x_spectator_token: str | None = Header(None), x_arena_key: str | None = Header(None),
                     x_owner_key: str | None = Header(None)):
        lv = get(arena_id)
        given = {token, x_spectator_token, x_arena_key, x_owner_key} - {None}
        if not given & {lv.spectator_token, lv.arena_key, lv.owner_key}:
            raise HTTPException(403, "token: a spectator token, arena key or owner key is required")
        q: asyncio.Queue = asyncio.Queue()
        init = {**lv.public(), "history": [_compact_tick(r) for r in lv.arena.records]}
        q.put_nowait(f"event: init\ndata: {json.dumps(plain_json(init), separators=(',', ':'))}\n\n")
        lv.subscribers.add(q)

        async def events():
            try:
                while True:
                    try:
                        msg = await asyncio.wait_for(q.get(), timeout=15.0)
                    except asyncio.TimeoutError:
                        msg = ": keep-alive\n\n"
                    yield msg
                    if msg.startswith("event: arena_closed"):
                        return
                    if await request.is_disconnected():
                        return
            finally:
                lv.subscribers.discard(q)

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"cache-control": "no-cache"})

    return app


def app_from_env() -> FastAPI:
    """``uvicorn --factory bdpd_jax.host.server:app_from_env``."""
    return create_app(os.environ.get("BDPD_ARENAS_DIR", "arenas"))


__all__ = ["create_app", "app_from_env"]
