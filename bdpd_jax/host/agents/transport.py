"""HTTP transport of the HTTP and LLM agents: one POST under a hard deadline, the answer capped
while it streams in, before any decompression or parsing (issue 14).

* **Client.** aiohttp (measured ~5x less host CPU per request than httpx on loopback,
  bench/README.md), one keep-alive connection pool per :class:`HttpClient` (per arena by
  default). The session is made lazily inside the running event loop (a new loop gets a new
  session), ignores proxy environment variables and never follows redirects.
* **Size.** A ``Content-Length`` over the cap is refused before reading; otherwise at most
  ``max_bytes`` bytes are read off the wire and the connection is dropped past that.
* **Compression.** ``Accept-Encoding: identity`` is asked for. A ``gzip``/``deflate`` answer is
  inflated here with a bounded inflater (a 1 MB gzip bomb stops at the cap, it never expands
  in memory); any other encoding is refused.
* **JSON.** orjson (no recursion in Python; numbers that overflow a double are refused),
  after a nesting-depth check of ``MAX_JSON_DEPTH`` on the bytes.
Every failure raises :class:`TransportError` whose text is the agent's recorded error.
"""

from __future__ import annotations

import asyncio
import re
import zlib
from typing import Any

import aiohttp
import numpy as np
import orjson
import yarl

MAX_JSON_DEPTH: int = 32
_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_DEPTH = np.zeros(256, np.int8)
_DEPTH[list(b"[{")] = 1
_DEPTH[list(b"]}")] = -1


# the deadline is the caller's asyncio.timeout; aiohttp's own (300 s by default) would only add a second clock
_NO_TIMEOUT = aiohttp.ClientTimeout(total=None)
_HEADERS = {"content-type": "application/json", "accept-encoding": "identity"}


def canonical_url(url: Any, field: str = "url") -> yarl.URL:
    r"""``url`` exactly as this client sends it (yarl: ``.`` and ``..`` resolved, percent-encoding
    normalised, host lower-cased, default port filled in); ValueError naming ``field`` for
    anything but an absolute http(s) URL whose path has no empty segment,
    no dot segment left and no encoded ``/`` or ``\`` (a server may decode those into a
    path other than the one checked). Allow-lists compare this form (``operator.url_allowed``)."""
    if not isinstance(url, str):
        raise ValueError(f"{field}: must be a string, got {type(url).__name__}")
    try:
        u = yarl.URL(url)
        port = u.port
    except (ValueError, TypeError):
        raise ValueError(f"{field}: not a valid URL") from None
    if u.scheme not in ("http", "https") or not u.host or port is None:
        raise ValueError(f"{field}: must be an absolute http(s) URL, got scheme {u.scheme[:16]!r}")
    raw = u.raw_path
    segments = raw.split("/")[1:-1]  # a trailing slash is fine; an empty segment inside is not
    if "//" in raw or any(s in (".", "..") for s in segments) or re.search(r"%(2f|5c)", raw, re.I) or "\\" in u.path:
        raise ValueError(
            f"{field}: the path must not contain empty segments, dot segments or encoded slashes, got {raw[:200]!r}"
        )
    return u


class TransportError(Exception):
    """A failed call; ``str(exc)`` is the error recorded for the turn (``timeout: ...``,
    ``network: ...``, ``http: ...``, ``response: ...``)."""


def too_deep(data: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when JSON text nests arrays/objects deeper than ``limit`` (strings skipped)."""
    if data.count(b"[") + data.count(b"{") <= limit:  # cannot be deeper: no scan (the usual case)
        return False
    steps = _DEPTH[np.frombuffer(_STRINGS.sub(b"", data), np.uint8)]
    return int(np.cumsum(steps, dtype=np.int64).max(initial=0)) > limit


def loads_capped(data: bytes) -> Any:
    """Parse JSON bytes with the depth cap; TransportError naming what is wrong."""
    if too_deep(data):
        raise TransportError(f"response: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise TransportError(f"response: invalid JSON ({str(exc)[:200]})") from None


def _inflate(raw: bytes, encoding: str, max_bytes: int) -> bytes:
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}.get(encoding)
    if wbits is None:
        raise TransportError(f"response: unsupported content-encoding {encoding[:40]!r}")
    d = zlib.decompressobj(wbits)
    try:
        out = d.decompress(raw, max_bytes + 1)
    except zlib.error as exc:
        raise TransportError(f"response: bad {encoding} body ({exc})") from None
    if len(out) > max_bytes or d.unconsumed_tail:
        raise TransportError(f"response: body exceeds {max_bytes} bytes once decompressed")
    return out


class Reply(tuple[int, bytes]):
    """``(status, body)`` as :meth:`HttpClient.post` returns it, with the answer's
    ``Retry-After`` header text (``retry_after``, at most 64 chars; None without one) for the
    LLM layer's retries (:mod:`~bdpd_jax.host.agents.llm_client`)."""

    def __new__(cls, status: int, body: bytes, retry_after: str | None = None) -> Reply:
        return super().__new__(cls, (status, body))

    def __init__(self, status: int, body: bytes, retry_after: str | None = None) -> None:
        self.retry_after = None if retry_after is None else retry_after[:64]


class HttpClient:
    """A keep-alive pool for a set of agents (one arena's by default). ``await aclose()``."""

    def __init__(self, max_connections: int = 8) -> None:
        if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
            raise ValueError(f"max_connections: must be an integer >= 1, got {max_connections!r}")
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._urls: dict[str, yarl.URL] = {}

    def _get(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            conn = aiohttp.TCPConnector(
                limit=self.max_connections, limit_per_host=self.max_connections, enable_cleanup_closed=True
            )
            self._session = aiohttp.ClientSession(
                connector=conn,
                auto_decompress=False,
                trust_env=False,
                skip_auto_headers=("User-Agent",),
                headers=_HEADERS,
            )
            self._loop = loop
        return self._session

    async def post(
        self, url: str, body: bytes, headers: dict[str, str], timeout_s: float, max_bytes: int
    ) -> tuple[int, bytes]:
        """POST ``body``; ``(status, decoded body bytes)`` within ``timeout_s`` and ``max_bytes``."""
        try:  # one hard deadline over connect, send and the whole read: asyncio's own timer, exact to the
            # loop's clock (aiohttp's ClientTimeout rounds deadlines >= 5 s up to the next whole second)
            async with asyncio.timeout(timeout_s):
                return await self._post(url, body, headers, max_bytes)
        except TimeoutError:
            raise TransportError(f"timeout: no response within {timeout_s * 1000:g} ms") from None
        except aiohttp.ClientError as exc:
            raise TransportError(f"network: {type(exc).__name__}: {str(exc)[:300]}") from None
        except OSError as exc:
            raise TransportError(f"network: {type(exc).__name__}: {str(exc)[:300]}") from None

    async def _post(self, url: str, body: bytes, headers: dict[str, str], max_bytes: int) -> tuple[int, bytes]:
        session = self._get()
        target = self._urls.get(url)
        if target is None:  # parsed once per URL, not per request
            target = self._urls[url] = yarl.URL(url)
        async with session.request(
            "POST", target, data=body, headers=headers or None, allow_redirects=False, timeout=_NO_TIMEOUT
        ) as resp:
            if resp.content_length is not None and resp.content_length > max_bytes:
                resp.close()
                raise TransportError(f"response: body exceeds {max_bytes} bytes (content-length {resp.content_length})")
            chunks, n = [], 0
            while True:
                chunk = await resp.content.read(65536)
                if not chunk:
                    break
                n += len(chunk)
                if n > max_bytes:
                    resp.close()  # drop the connection: the rest is never read
                    raise TransportError(f"response: body exceeds {max_bytes} bytes")
                chunks.append(chunk)
            raw = b"".join(chunks)
            enc = resp.headers.get("content-encoding", "identity").strip().lower()
            if enc not in ("", "identity"):
                raw = _inflate(raw, enc, max_bytes)
            return Reply(resp.status, raw, resp.headers.get("retry-after"))

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the pool (only from the loop that uses it; a dead loop's pool is dropped)."""
        s, self._session = self._session, None
        if s is not None and not s.closed:
            try:
                if self._loop is asyncio.get_running_loop():
                    await s.close()
            except RuntimeError:
                pass


def make_client(max_connections: int = 256) -> HttpClient:
    """One pooled client for a set of agents (no proxy env vars, no redirects)."""
    return HttpClient(max_connections)


class ClientSlot:
    """An agent's HTTP client: the one it was given (shared: its caller closes it) or, given
    none, its own, made on first use (:meth:`get`) and closed by :meth:`aclose`."""

    def __init__(self, client: HttpClient | None, max_connections: int = 4) -> None:
        self._client, self._owned, self._max = client, client is None, max_connections

    def get(self) -> HttpClient:
        if self._client is None:
            self._client = make_client(self._max)
        return self._client

    async def aclose(self) -> None:
        """Close the client if it is this slot's own (a shared one is the caller's)."""
        if self._owned and self._client is not None:
            await self._client.aclose()
            self._client = None


__all__ = [
    "canonical_url",
    "ClientSlot",
    "HttpClient",
    "Reply",
    "MAX_JSON_DEPTH",
    "TransportError",
    "too_deep",
    "loads_capped",
    "make_client",
]
