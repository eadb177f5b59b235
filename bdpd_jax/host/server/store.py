"""``Hub``: the server's arenas -- live ones in memory, closed and interrupted ones on disk.

An arena's folder ``root/<arenaId>/`` holds ``auth.json`` (SHA-256 of its keys and whether
spectators read private text, written at create), ``meta.json``, ``turns.jsonl`` and, once
closed, ``summary.json``. A closed arena leaves memory at once; every read of it (views,
summary, stream, history) comes from its folder. An arena whose ``meta.json`` says
``running`` but that no live arena of this process holds was running when a previous server
died: it is ``interrupted``, listed in ``/history``, and can be resumed (replayed from ``turns.jsonl``) or deleted.

The folder is data, not authority: an arena is keyed by its folder's name (never by the id its
``meta.json`` claims), symlinks are never followed (a folder or file that is one is not an
arena's), and every lifecycle change of one arena (create, join, start, tick, perturb, close,
delete, resume) runs under that arena's own lock (:meth:`Hub.lifecycle`), so a deleted arena
stays deleted and no write recreates its folder.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

from bdpd_jax.config.files import MAX_META_BYTES, read_text
from bdpd_jax.host.live.operator import Operator
from bdpd_jax.host.live.persist import atomic_write_json, read_jsonl
from bdpd_jax.host.live.replay import FolderMeta, read_meta, turn_records
from bdpd_jax.host.server.live import LiveArena, Workers, role_of
from bdpd_jax.host.server.ticker import Ticker

_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: auth.json's entry beside the key hashes: whether spectators read private messages' text
PRIVATE_TEXT = "spectatorPrivateText"


class DiskArena:
    """An arena known only from its folder (closed, or interrupted by a server death)."""

    def __init__(self, folder: Path, meta: dict[str, Any], hashes: dict[str, str], private_text: bool = False) -> None:
        self.folder = folder
        self.meta = meta
        self.hashes = hashes
        self.private_text = private_text  # spectators read private text (the owner's choice at create)
        self.arena_id = folder.name  # the folder's name, not what meta.json claims
        self.status = "closed" if meta.get("status") == "closed" else "interrupted"

    def role_of(self, *keys: str | None) -> str | None:
        return role_of(self.hashes, *keys)

    def records(self) -> list[dict[str, Any]]:
        """The turn records of turns.jsonl (owner event lines left out)."""
        p = data_file(self.folder, "turns.jsonl")
        return [] if p is None else turn_records(read_jsonl(p))

    def turns_played(self) -> int | None:
        """Turns played: meta.json's count once closed; for an interrupted arena (whose meta
        was last written at start) the last record of turns.jsonl; None when that file is
        unreadable (a damaged folder must not break the listing of the others)."""
        if self.status == "closed" and self.meta.get("turnsPlayed") is not None:
            return int(self.meta["turnsPlayed"])
        try:
            recs = self.records()
        except (OSError, ValueError):
            return None
        return int(recs[-1]["turn"]) if recs else 0

    def summary(self) -> dict[str, Any] | None:
        p = data_file(self.folder, "summary.json")
        try:
            return None if p is None else json.loads(p.read_text())
        except (OSError, ValueError):
            return None


def data_file(folder: Path, name: str) -> Path | None:
    """``folder/name`` when it is a regular file and not a symlink (None otherwise)."""
    p = folder / name
    return p if p.is_file() and not p.is_symlink() else None


class Hub:
    """Live arenas by id, the worker threads that run their kernels, the auto-tick scheduler
    (``ticker``: arenas sharing a compiled game ticked in groups unless ``group_ticks=False``)
    and the arena folders."""

    def __init__(
        self,
        root: str | Path,
        *,
        workers: int = 2,
        no_talk: bool = False,
        operator: Operator | None = None,
        group_ticks: bool = True,
    ) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.live: dict[str, LiveArena] = {}
        self.workers = Workers(cpu=workers)
        self.executor = self.workers.executor
        self.no_talk = no_talk
        self.operator = operator if operator is not None else Operator()
        self.ticker = Ticker(self.workers, self.finish, grouping=group_ticks)
        self._locks: dict[str, asyncio.Lock] = {}

    def lifecycle(self, arena_id: str) -> asyncio.Lock:
        """The lock serialising every lifecycle change of ``arena_id`` (made on first use)."""
        lock = self._locks.get(arena_id)
        if lock is None:
            lock = self._locks[arena_id] = asyncio.Lock()
        return lock

    def forget_lock(self, arena_id: str) -> None:
        """A deleted arena's lock goes (requests that waited on it find no arena once they hold it)."""
        lock = self._locks.get(arena_id)
        if lock is not None and not lock.locked():
            del self._locks[arena_id]

    def folder(self, arena_id: str) -> Path | None:
        """The folder of ``arena_id`` (None for an id that is not a plain name, or a symlink)."""
        if not _SAFE_ID.match(arena_id):
            return None
        f = self.root / arena_id
        return None if f.is_symlink() else f

    def write_auth(self, arena_id: str, hashes: dict[str, str], private_text: bool = False) -> None:
        """The arena's folder with its key hashes and who reads private text (``PRIVATE_TEXT``:
        the owner's access choice, kept with the keys; blocking I/O: call it from a worker)."""
        folder = self.root / arena_id
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_json(folder / "auth.json", {**hashes, PRIVATE_TEXT: bool(private_text)})

    def add(self, lv: LiveArena) -> None:
        self.live[lv.arena_id] = lv

    def evict(self, arena_id: str) -> None:
        """A closed arena leaves memory; its folder stays for /history."""
        self.live.pop(arena_id, None)

    def finish(self, lv: LiveArena, summary: dict[str, Any], **extra: Any) -> None:
        """The arena is closed: tell the streams, end them, free the memory."""
        lv.publish("arena_closed", {**summary, **extra})
        lv.end_streams()
        self.evict(lv.arena_id)

    def on_disk(self, arena_id: str) -> DiskArena | None:
        if arena_id in self.live:
            return None
        f = self.folder(arena_id)
        if f is None:
            return None
        meta_path = data_file(f, "meta.json")
        if meta_path is None:
            return None
        auth = data_file(f, "auth.json")
        try:  # bounded and validated (its config an object, its players a list of objects)
            meta = read_meta(f, FolderMeta)
            hashes = json.loads(read_text(auth, MAX_META_BYTES, "auth.json")) if auth is not None else {}
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or not isinstance(hashes, dict):
            return None
        private_text = hashes.pop(PRIVATE_TEXT, False) is True  # absent (older folders): hidden
        return DiskArena(f, meta, hashes, private_text)

    def find(self, arena_id: str) -> LiveArena | DiskArena | None:
        return self.live.get(arena_id) or self.on_disk(arena_id)

    def history(self) -> list[dict[str, Any]]:
        """Closed and interrupted arenas on disk, oldest first."""
        out = []
        for meta_path in sorted(self.root.glob("*/meta.json")):
            d = self.on_disk(meta_path.parent.name)
            if d is None:
                continue
            m = d.meta
            model = m.get("config", {}).get("model", {})
            out.append(
                {
                    "arenaId": d.arena_id,
                    "status": d.status,
                    "createdAt": m.get("createdAt"),
                    "closedAt": m.get("closedAt"),
                    "turnsPlayed": d.turns_played(),
                    "seed": m.get("seed"),
                    "name": model.get("name"),
                    "engineMode": model.get("engineMode"),
                }
            )
        return sorted(out, key=lambda r: r["createdAt"] or "")

    def delete_folder(self, arena_id: str) -> None:
        """Remove the arena's folder (never through a symlink: rmtree does not follow them)."""
        f = self.folder(arena_id)
        if f is not None and f.is_dir():
            shutil.rmtree(f)

    def shutdown(self) -> None:
        self.workers.shutdown()
        self.ticker.shutdown()


__all__ = ["Hub", "DiskArena"]
