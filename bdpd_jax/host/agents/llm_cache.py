"""The LLM response cache (issue 38): a re-run of an arena makes no call it made before.

A chat completion is stored under a key over everything that determines it: the endpoint's
base URL and the whole request body (model, messages, tools, temperature, seed, max_tokens,
tool_choice and any extra field), as canonical JSON (sorted keys), hashed with SHA-256,
within the cache's ``scope`` (a live arena's id: seed and arena index, unless named).
*Choice:* arenas do not share answers, even to byte-identical requests (200 arenas of one
config ask the same thing in month 1): a server at temperature 0 is not always bit-exact
(vLLM's batching), and shared entries would give a re-run answers its arenas never got. The
n-th identical request of one cache's life gets its own entry (``<hash>-<n>``): an arena that
asks the same thing twice gets back the two answers it got the first time, in order, so a
re-run gives the same records even where the server's answers varied.

One file per answer, ``<folder>/<hash[:2]>/<hash>-<n>.json`` (the decoded completion as JSON),
written to a temp file and renamed (a reader never sees half an answer; several arenas and
processes may share one folder). No fsync: a lost entry only costs its call again. An entry
that cannot be read is a miss. The key is never a secret: the API key is not part of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

#: a cached completion larger than this is not read back (the wire's own cap, 1 MiB, bounds
#: what is written; this bounds a folder someone else filled)
MAX_ENTRY_BYTES: int = 2 * 1024 * 1024


class ResponseCache:
    """The answers of one arena's LLM calls, on disk under ``folder``. ``hits`` / ``stores``
    count this object's reads that found an answer and answers written."""

    def __init__(self, folder: str | os.PathLike[str], scope: str = "") -> None:
        self.folder = Path(folder)
        self.scope = scope
        self._seen: dict[str, int] = {}  # request hash -> identical requests asked so far
        self.hits = 0
        self.stores = 0

    def key(self, endpoint: str, body: dict[str, Any]) -> str:
        """The entry of this request: its hash, and how many identical requests came before
        it in this cache's life. ValueError when ``body`` is not JSON."""
        try:
            text = orjson.dumps({"scope": self.scope, "endpoint": endpoint, "body": body}, option=orjson.OPT_SORT_KEYS)
        except TypeError as exc:
            raise ValueError(f"body: not JSON ({exc})") from None
        h = hashlib.sha256(text).hexdigest()
        n = self._seen.get(h, 0)
        self._seen[h] = n + 1
        return f"{h}-{n}"

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> Any | None:
        """The stored answer of ``key`` (None: none, or unreadable)."""
        try:
            with open(self._path(key), "rb") as fh:
                data = fh.read(MAX_ENTRY_BYTES + 1)
        except OSError:
            return None
        if len(data) > MAX_ENTRY_BYTES:
            return None
        try:
            out = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None
        self.hits += 1
        return out

    def put(self, key: str, answer: Any) -> None:
        """Store ``answer`` under ``key`` (atomically; a failed write is skipped: the cache is
        an optimisation, a disk error must not fail the call that succeeded)."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(orjson.dumps(answer))
            os.replace(tmp, path)
            self.stores += 1
        except (OSError, TypeError):
            with contextlib.suppress(OSError):
                os.unlink(tmp)


__all__ = ["MAX_ENTRY_BYTES", "ResponseCache"]
