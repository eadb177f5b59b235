"""Crash-safe persistence helpers for the live arena (``meta.json``, ``summary.json``, ``turns.jsonl``).

``atomic_write_json`` writes to a temp file in the same directory, fsyncs it and ``os.replace``s
it over the target, so readers see either the old or the new file, never a torn one.
``JsonlWriter`` appends one JSON line per record and flushes + fsyncs each write, so a process
killed mid-write loses at most the line being written; ``read_jsonl`` skips such a torn last line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import TracebackType
from typing import Any

from bdpd_jax.config.files import fsync_path, write_json
from bdpd_jax.host.jsonio import json_default

__all__ = ["atomic_write_json", "clean_stale_tmp", "fsync_path", "JsonlWriter", "read_jsonl"]


def atomic_write_json(path: str | os.PathLike[str], obj: Any, *, indent: int | None = 2, mkdir: bool = True) -> None:
    """Write ``obj`` as strict JSON to ``path`` atomically (temp file + fsync + os.replace:
    the library's one helper, bdpd_jax/config/files.py). ``mkdir=False``: the folder must
    exist (FileNotFoundError otherwise): an arena's writes never recreate a folder that was
    deleted."""
    write_json(path, obj, indent=indent, mkdir=mkdir, default=json_default, allow_nan=False)


def clean_stale_tmp(root: str | os.PathLike[str]) -> list[Path]:
    """Remove the temp files of interrupted ``atomic_write_json`` calls (``.<name>.*.tmp``) in
    ``root`` and its direct sub-folders; returns what was removed. Call it at start-up, when no
    writer of those folders runs (an arena's own folder: at its start)."""
    base = Path(root)
    if not base.is_dir():
        return []
    removed = []
    for pattern in (".*.tmp", "*/.*.tmp"):
        for tmp in base.glob(pattern):
            try:
                if tmp.is_file() and not tmp.is_symlink():
                    tmp.unlink()
                    removed.append(tmp)
            except OSError:
                pass
    return removed


class JsonlWriter:
    """Append-only JSON-lines writer; every ``write`` is flushed and fsynced before returning."""

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fsync = fsync
        self.fsync = fsync
        self._repair_tail()
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115  (the log owns it; close() closes it)

    def _repair_tail(self) -> None:
        """Drop a torn last line left by a crash, so new records start on a fresh line."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with open(self.path, "rb+") as fh:
            data = fh.read()
            if data.endswith(b"\n"):
                return
            cut = data.rfind(b"\n") + 1  # 0 when the only line is torn
            try:
                json.loads(data[cut:])
                fh.write(b"\n")  # complete record, only its newline was lost
            except (json.JSONDecodeError, UnicodeDecodeError):
                fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())

    def write(self, record: Any) -> None:
        """Append ``record`` as one line (strict JSON: NaN/Infinity are rejected)."""
        if self._fh.closed:
            raise ValueError(f"path: writer for {str(self.path)!r} is closed")
        line = json.dumps(record, default=json_default, allow_nan=False, separators=(",", ":"))
        self._fh.write(line + "\n")
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())

    def close(self) -> None:
        """Close the underlying file (idempotent)."""
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def read_jsonl(path: str | os.PathLike[str]) -> list[Any]:
    """Read every complete record; a torn (unparseable, unterminated) last line is skipped.

    A malformed line that is *not* the last one means real corruption and raises ValueError.
    """
    p = Path(path)
    if not p.exists():
        return []
    raw = p.read_bytes()
    lines = raw.split(b"\n")
    records: list[Any] = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except (json.JSONDecodeError, UnicodeDecodeError):
            is_last = i == len(lines) - 1  # no trailing newline: the torn tail
            if is_last:
                break
            raise ValueError(f"path: corrupt line {i + 1} in {p.name!r}") from None  # no server path
    return records
