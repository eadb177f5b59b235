"""Forks of a served arena ("what if"): ``POST /api/arenas/{id}/fork`` and the fork's frames.

A fork continues the arena's state at a turn as a batch of arenas (``bdpd_jax.fork``,
docs/semantics/live/arena.md "Forks"). The owner or a spectator asks; the size is bounded
(replicates x turns x players, ``MAX_FORK_CELLS``; a 400 names the numbers) and forks run
one at a time in a worker process of their own, niced from its spawn on, so the
event loop, ``/api/health`` and the other arenas' ticks keep their threads and their
priority; a request while ``MAX_PENDING_FORKS`` are running or waiting gets 429. The answer
holds the fork's fan (per turn the quantiles of the stock over its arenas) and links to its
frames, kept in the arena's folder (``forks/<forkId>/``, the newest ``MAX_FORKS_PER_ARENA``).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import multiprocessing
import os
import shutil
import threading
import uuid
from concurrent.futures import BrokenExecutor, Executor, ProcessPoolExecutor
from pathlib import Path
from typing import Annotated, Any, Literal

import pandas as pd
from fastapi import APIRouter, Depends, HTTPException
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, Response
from pydantic import ConfigDict, Field

from bdpd_jax.config.base import ConfigModel
from bdpd_jax.config.limits import Id, Label, Name
from bdpd_jax.host.live.fork_job import ANSWER_FILE, FORKS_DIR, init_worker, run_fork
from bdpd_jax.host.server import models as M
from bdpd_jax.host.server.deps import Access, access, hub_of
from bdpd_jax.host.server.live import LiveArena
from bdpd_jax.host.server.store import Hub

MAX_FORK_REPLICATES = 10_000
#: replicates x turns x players of one fork (1 000 arenas x 100 turns x 20 players)
MAX_FORK_CELLS = 2_000_000
MAX_FORK_TURNS = 10_000
MAX_CHANGES = 32
MAX_FORKS_PER_ARENA = 8
#: forks running or waiting for the worker at once, server-wide
MAX_PENDING_FORKS = 2
#: the fork worker's niceness (below the server's ticks)
FORK_NICENESS = 10
FORMATS = ("csv", "json", "parquet")

ForkId = Annotated[str, PathParam(pattern=r"^[0-9a-f]{12}$")]
FrameName = Annotated[str, PathParam(pattern=r"^[a-z_]{1,40}$")]


class ForkRequest(ConfigModel):
    """``POST /fork``: the turn to fork after (default: the last played), the arenas, the
    changes (config paths and values, ``perturb``: specs fired at the fork's turn), the seed
    (default the arena's), the turns to play (default: to its last) and the stand-in rule of
    its remote players (``last`` or a built-in strategy; one, or per player name)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    turn: int | None = Field(None, ge=0)
    replicates: int = Field(100, ge=1, le=MAX_FORK_REPLICATES)
    changes: dict[Id, Any] = Field(default_factory=dict, max_length=MAX_CHANGES)
    seed: int | None = Field(None, ge=0, lt=2**32)
    turns: int | None = Field(None, ge=1, le=MAX_FORK_TURNS)
    standin: Label | dict[Name, Label] = "last"


class ForkAnswer(ConfigModel):
    """A fork: its numbers, its fan (per turn: ``q05``, ``q25``, ``median``, ``q75``,
    ``q95`` of the stock and ``n``) and ``links``: frame -> URL (``.csv``; ``.json`` and
    ``.parquet`` too)."""

    model_config = ConfigDict(extra="allow")
    fork_id: str
    arena_id: str
    turn: int
    replicates: int
    turns: int
    seed: int
    changes: dict[str, Any]
    standin: dict[str, str]
    survived: float | None = None
    fan: list[dict[str, Any]]
    frames: list[str]
    links: dict[str, str]


class ForkList(ConfigModel):
    forks: list[ForkAnswer]


router = APIRouter(
    prefix="/api/arenas",
    tags=["forks"],
    responses={
        **M.ERRORS,
        429: {"model": M.ErrorBody, "description": "forks are running or waiting: retry later"},
        503: {"model": M.ErrorBody, "description": "the fork worker stopped"},
    },
)
watch = access("spectator")
_state: dict[str, Any] = {"executor": None, "pending": 0}


def _spawn_niced(ex: ProcessPoolExecutor) -> None:
    """Start ``ex``'s process from this (short-lived) thread, niced first: on Linux a child
    inherits the niceness of the thread that forks it, so the worker's start (an interpreter
    and jax imported) already runs below the ticks' priority."""
    with contextlib.suppress(OSError):
        os.nice(FORK_NICENESS)
    ex.submit(int)  # a no-op task: the process is spawned here, in this thread


def executor() -> Executor:
    """The fork worker (one process, made on first use; ``use_executor`` replaces it)."""
    if _state["executor"] is None:
        ex = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=init_worker)
        starter = threading.Thread(target=_spawn_niced, args=(ex,), name="bdpd-fork-spawn")
        starter.start()
        starter.join()  # the spawn only (milliseconds); the worker starts up on its own
        _state["executor"] = ex
    return _state["executor"]


def use_executor(ex: Executor | None) -> None:
    """Run forks on ``ex`` (e.g. a thread in tests); None: the worker process again."""
    _state["executor"] = ex


def _shutdown() -> None:
    ex = _state["executor"]
    if isinstance(ex, ProcessPoolExecutor):
        ex.shutdown(wait=False, cancel_futures=True)
        _state["executor"] = None


router.on_shutdown.append(_shutdown)


def _shape(arena: Any) -> tuple[int, int, int]:
    """(turns played, last turn, players) of a live or on-disk arena."""
    if isinstance(arena, LiveArena):
        a = arena.arena
        if a.status == "waiting":
            raise HTTPException(409, "status: the arena has not started; fork a running or closed arena")
        return int(a.turn), int(a.max_turns), len(a.specs)
    meta = arena.meta
    return int(arena.turns_played() or 0), int(meta.get("maxTurns") or 0), len(meta.get("players", []))


def _links(arena_id: str, answer: dict[str, Any]) -> dict[str, Any]:
    base = f"/api/arenas/{arena_id}/forks/{answer['forkId']}"
    return {**answer, "links": {name: f"{base}/{name}.csv" for name in answer["frames"]}}


def _prune(forks: Path, keep: int) -> None:
    """Keep the newest ``keep`` forks of an arena (and no half-written one)."""
    done = sorted(forks.glob(f"*/{ANSWER_FILE}"), key=lambda p: p.stat().st_mtime)
    for p in done[: max(0, len(done) - keep)]:
        shutil.rmtree(p.parent, ignore_errors=True)


@router.post("/{arena_id}/fork", response_model=ForkAnswer, summary="Fork the arena's state into a batch")
async def post_fork(body: ForkRequest, acc: Access = Depends(watch), hub: Hub = Depends(hub_of)):
    arena_id = acc.arena.arena_id
    folder = hub.folder(arena_id)
    if folder is None or not (folder / "meta.json").is_file():
        raise HTTPException(409, "status: the arena keeps no folder to fork from")
    played, last, players = _shape(acc.arena)
    turn = played if body.turn is None else body.turn
    if turn > played:
        raise HTTPException(400, f"turn: must be in [0, {played}] (the turns played), got {turn}")
    n_turns = body.turns or (last - turn)
    cells = body.replicates * n_turns * players
    if cells > MAX_FORK_CELLS:
        raise HTTPException(
            400,
            f"replicates: {body.replicates} replicates x {n_turns} turns x {players} players = {cells} "
            f"cells, over the {MAX_FORK_CELLS} allowed",
        )
    if _state["pending"] >= MAX_PENDING_FORKS:
        raise HTTPException(429, f"fork: {MAX_PENDING_FORKS} forks are running or waiting; retry later")
    request = {**body.model_dump(), "turn": turn}
    out = folder / FORKS_DIR / uuid.uuid4().hex[:12]
    _state["pending"] += 1
    try:
        loop = asyncio.get_running_loop()
        answer = await loop.run_in_executor(executor(), run_fork, str(folder), str(out), request)
    except BrokenExecutor:  # the worker died (killed, out of memory): the next fork starts a new one
        _state["executor"] = None
        await asyncio.to_thread(shutil.rmtree, out, True)
        raise HTTPException(503, "fork: the fork worker stopped; retry with fewer replicates or turns") from None
    finally:
        _state["pending"] -= 1
    if not (folder / "meta.json").is_file():  # the arena was deleted meanwhile: leave nothing behind
        await asyncio.to_thread(shutil.rmtree, folder, True)
        raise HTTPException(404, f"arenaId: no arena {arena_id!r}")
    await asyncio.to_thread(_prune, folder / FORKS_DIR, MAX_FORKS_PER_ARENA)
    return _links(arena_id, answer)


def _fork_dir(hub: Hub, arena_id: str, fork_id: str) -> Path:
    folder = hub.folder(arena_id)
    d = None if folder is None else folder / FORKS_DIR / fork_id
    if d is None or not (d / ANSWER_FILE).is_file():
        raise HTTPException(404, f"forkId: no fork {fork_id!r} of arena {arena_id!r}")
    return d


@router.get("/{arena_id}/forks", response_model=ForkList, summary="The arena's forks kept")
async def list_forks(acc: Access = Depends(watch), hub: Hub = Depends(hub_of)):
    folder = hub.folder(acc.arena.arena_id)
    files = (
        [] if folder is None else sorted((folder / FORKS_DIR).glob(f"*/{ANSWER_FILE}"), key=lambda p: p.stat().st_mtime)
    )
    return {"forks": [_links(acc.arena.arena_id, json.loads(p.read_text())) for p in files]}


@router.get("/{arena_id}/forks/{fork_id}", response_model=ForkAnswer, summary="One fork's answer")
async def get_fork(fork_id: ForkId, acc: Access = Depends(watch), hub: Hub = Depends(hub_of)):
    d = _fork_dir(hub, acc.arena.arena_id, fork_id)
    return _links(acc.arena.arena_id, json.loads((d / ANSWER_FILE).read_text()))


def _render(path: Path, fmt: str) -> bytes:
    df = pd.read_parquet(path)
    if fmt == "csv":
        return df.to_csv(index=False).encode()
    buf = io.StringIO()
    df.to_json(buf, orient="records")
    return buf.getvalue().encode()


@router.get("/{arena_id}/forks/{fork_id}/{frame}.{fmt}", summary="A fork's frame (csv, json or parquet)")
async def fork_frame(
    fork_id: ForkId,
    frame: FrameName,
    fmt: Literal["csv", "json", "parquet"],
    acc: Access = Depends(watch),
    hub: Hub = Depends(hub_of),
):
    path = _fork_dir(hub, acc.arena.arena_id, fork_id) / f"{frame}.parquet"
    if not path.is_file():
        raise HTTPException(404, f"frame: the fork has no frame {frame!r}")
    if fmt == "parquet":
        return FileResponse(path, media_type="application/vnd.apache.parquet", filename=f"{frame}.parquet")
    media = "text/csv" if fmt == "csv" else "application/json"
    return Response(await asyncio.to_thread(_render, path, fmt), media_type=media)


__all__ = ["router", "ForkRequest", "ForkAnswer", "executor", "use_executor", "MAX_FORK_CELLS", "MAX_FORKS_PER_ARENA"]
