"""Group commit of served arenas' turn records: the server's arenas write ``turns.jsonl``
flushed but not fsynced (``Arena(fsync=False)``), and the server makes a tick's lines
durable here before it publishes the tick.

Why: one ``fsync`` costs ~4 ms on this machine's disk, so 1 000 arenas ticked together would
spend 4 s a tick on them (the server's ~230 arena-turns/s ceiling before grouping,
bench/README.md). One ``syncfs`` of the arenas' file system writes every arena's new line in
one call (13-35 ms for 1 000 files here); a handful of files are fsynced one by one.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from bdpd_jax.host.live.persist import fsync_path

#: more files than this in one sync: one syncfs of their file system (Linux) instead
SYNCFS_ABOVE = 8


def _syncfs(path: Path) -> bool:
    """``syncfs(2)`` on the file system holding ``path``; False where unavailable or failed."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        return fn(fd) == 0
    finally:
        os.close(fd)


def sync_files(paths: list[Path]) -> None:
    """Make what was written to ``paths`` durable: one syncfs when there are many (all on the
    first one's file system: the server's arenas live under one root), else one fsync each."""
    paths = [p for p in paths if p is not None]
    if len(paths) > SYNCFS_ABOVE and _syncfs(paths[0].parent):
        return
    for p in paths:
        fsync_path(p)


__all__ = ["sync_files", "SYNCFS_ABOVE"]
