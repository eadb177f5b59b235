"""Export of an arena (issue 41): each frame as CSV or parquet, the whole arena as one zip.

``GET /api/arenas/{id}/frames/{name}.{csv|parquet}`` gives the frames ``bdpd_jax.load`` gives
for the arena's folder (the same columns and dtypes as a batch's, bdpd_jax/loader.py) plus
``messages`` (one row per message of the bus). ``GET /api/arenas/{id}/archive.zip`` gives the
folder's files, less ``auth.json`` (the key hashes), under ``<arenaId>/``: ``bdpd_jax.load``
reads the zip as it reads the folder. Owner and spectator alike, with the dashboard's rule: a
spectator gets no private message's text unless the owner allowed it at create (in the
archive, ``turns.jsonl``'s records pass through :func:`views.spectator_tick` and
``meta.json``'s join specs lose their scripts, code, URLs and prompts).

The reads run in a worker thread, never on the event loop; a folder whose files hold more
than ``MAX_EXPORT_BYTES`` is refused (413), and at most ``MAX_EXPORTS`` exports run at once
server-wide (429 beyond), so exports bound the server's memory and threads.
"""

from __future__ import annotations

import io
import json
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import pandas as pd
from fastapi import APIRouter, Depends, HTTPException
from fastapi import Path as PathParam
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from bdpd_jax.host.server import models as M
from bdpd_jax.host.server import views
from bdpd_jax.host.server.deps import Access, access
from bdpd_jax.host.server.live import LiveArena

router = APIRouter(tags=["export"], responses=M.ERRORS)
viewer = access("spectator")  # owner or spectator

#: the frames of an arena, as ``bdpd_jax.load`` names them, and the message log
FRAMES = ("turns", "players", "summary", "violations", "sanctions", "perturbations", "discussion", "messages")
#: the columns of the ``messages`` frame (snake_case of the bus's wire keys)
MESSAGE_COLUMNS = ("arena", "turn", "scope", "from_id", "to", "text", "value", "text_hidden")
#: files never exported (the key hashes)
SECRET_FILES = frozenset({"auth.json"})
MAX_EXPORT_BYTES = 256 * 2**20
MAX_EXPORTS = 2
_slots = threading.BoundedSemaphore(MAX_EXPORTS)
_MEDIA = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}

FrameName = Annotated[str, PathParam(pattern=r"^[a-z_]{1,40}$")]


def _folder(acc: Access) -> Path:
    a = acc.arena
    folder = (a.arena.out_dir if isinstance(a, LiveArena) else a.folder) or None
    if folder is None or not (folder / "turns.jsonl").is_file():
        raise HTTPException(409, "status: the arena has no saved turn yet (start it and play a turn)")
    return folder


def _files(folder: Path) -> list[Path]:
    """The folder's own regular files (no symlink, no subfolder, no secret), size-checked."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink() and p.name not in SECRET_FILES)
    size = sum(p.stat().st_size for p in files)
    if size > MAX_EXPORT_BYTES:
        raise HTTPException(413, f"size: the arena's files hold {size} bytes; exports stop at {MAX_EXPORT_BYTES}")
    return files


async def _bounded(fn: Callable[..., bytes], *args: Any) -> bytes:
    """``fn(*args)`` in a worker thread, holding one of the ``MAX_EXPORTS`` slots."""
    if not _slots.acquire(blocking=False):
        raise HTTPException(429, f"exports: {MAX_EXPORTS} are running; try again in a moment")
    try:
        return await run_in_threadpool(fn, *args)
    finally:
        _slots.release()


def messages_frame(records: list[dict[str, Any]], arena: int, hide: bool) -> pd.DataFrame:
    """One row per message of the turn records, in turn and posting order; ``hide``: a
    private message's text left out (``text_hidden``), as a spectator sees it."""
    rows = []
    for r in records:
        for m in r.get("messages", []):
            m = views.hide_private(m) if hide else m
            rows.append(
                {
                    "arena": arena,
                    "turn": m.get("turn", r["turn"]),
                    "scope": m.get("scope"),
                    "from_id": m.get("fromId"),
                    "to": m.get("to"),
                    "text": m.get("text"),
                    "value": m.get("value"),
                    "text_hidden": bool(m.get("textHidden", False)),
                }
            )
    df = pd.DataFrame(rows, columns=list(MESSAGE_COLUMNS))
    return df.astype({"arena": "int64", "turn": "int32", "value": "float64", "text_hidden": bool})


def frame_of(folder: Path, name: str, hide: bool) -> pd.DataFrame:
    """The frame ``name`` of the arena in ``folder`` (blocking reads: run it in a worker)."""
    from bdpd_jax.host.live.replay import load as read_arena
    from bdpd_jax.loader import load_live

    if name == "messages":
        meta, records = read_arena(folder)
        return messages_frame(records, int(meta.get("arenaIndex", 0)), hide)
    res = load_live(folder)
    if name in ("turns", "players", "summary"):
        return getattr(res, name)
    return res.extra[name]


def _render(folder: Path, name: str, fmt: str, hide: bool) -> bytes:
    _files(folder)
    df = frame_of(folder, name, hide)
    if fmt == "csv":
        return df.to_csv(index=False).encode()
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return buf.getvalue()


@router.get("/api/arenas/{arena_id}/frames", summary="The frames the arena exports, and their formats")
async def export_list(acc: Access = Depends(viewer)):
    """What the page's export panel lists (read here, never restated in the page)."""
    base = f"/api/arenas/{acc.arena.arena_id}"
    return {
        "frames": list(FRAMES),
        "formats": list(_MEDIA),
        "archive": f"{base}/archive.zip",
        "privateTextHidden": views.view_of(acc.role, acc.arena.private_text) != "owner",
    }


@router.get("/api/arenas/{arena_id}/frames/{name}.{fmt}", summary="One frame of the arena (csv or parquet)")
async def export_frame(name: FrameName, fmt: Literal["csv", "parquet"], acc: Access = Depends(viewer)):
    if name not in FRAMES:
        raise HTTPException(404, f"name: no frame {name!r}; frames: {list(FRAMES)}")
    folder = _folder(acc)
    hide = views.view_of(acc.role, acc.arena.private_text) != "owner"
    body = await _bounded(_render, folder, name, fmt, hide)
    disposition = f'attachment; filename="{acc.arena.arena_id}_{name}.{fmt}"'
    return Response(body, media_type=_MEDIA[fmt], headers={"content-disposition": disposition})


def _spectator_lines(text: str) -> str:
    """turns.jsonl as a spectator reads it: each turn record through ``spectator_tick``
    (owner event lines as they are; a torn last line left out, as every reader drops it)."""
    out = []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and "event" not in rec:
            rec = views.spectator_tick(rec)
        out.append(json.dumps(rec, separators=(",", ":")))
    return "".join(s + "\n" for s in out)


#: what a spectator's archive keeps of a player's join spec beyond its numbers and flags
PLAYER_NAMES = ("name", "displayName", "agentType", "strategy")


def _spectator_meta(text: str) -> str:
    """meta.json as a spectator reads it: each player's join spec keeps its names, kind,
    strategy and numbers, not its script, code, URL or prompt (texts the owner's view holds:
    a script's private message is private text too)."""
    meta = json.loads(text)

    def keep(k: str, v: Any) -> bool:
        return k in PLAYER_NAMES or v is None or isinstance(v, bool | int | float)

    if isinstance(meta.get("players"), list):
        meta["players"] = [
            {k: v for k, v in p.items() if keep(k, v)} if isinstance(p, dict) else p for p in meta["players"]
        ]
    return json.dumps(meta, indent=2)


def archive_of(folder: Path, arena_id: str, hide: bool) -> bytes:
    """The zip of the arena's files under ``<arena_id>/`` (blocking reads: run it in a worker)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for p in _files(folder):
            if hide and p.name in _HIDE:
                z.writestr(f"{arena_id}/{p.name}", _HIDE[p.name](p.read_text(encoding="utf-8")))
            else:
                z.write(p, f"{arena_id}/{p.name}")
    return buf.getvalue()


_HIDE: dict[str, Callable[[str], str]] = {"turns.jsonl": _spectator_lines, "meta.json": _spectator_meta}


@router.get("/api/arenas/{arena_id}/archive.zip", summary="The whole arena as one zip (bdpd_jax.load reads it)")
async def export_archive(acc: Access = Depends(viewer)):
    folder = _folder(acc)
    hide = views.view_of(acc.role, acc.arena.private_text) != "owner"
    body = await _bounded(archive_of, folder, acc.arena.arena_id, hide)
    disposition = f'attachment; filename="{acc.arena.arena_id}.zip"'
    return Response(body, media_type="application/zip", headers={"content-disposition": disposition})


__all__ = ["FRAMES", "MAX_EXPORT_BYTES", "MAX_EXPORTS", "archive_of", "frame_of", "messages_frame", "router"]
