"""HTTP callback agents (spec 004 §A.3.2): POST the observation, expect ``{"harvest": n}``.

The whole call (connect, send, wait, read) runs under one hard deadline of ``timeout_ms``
(``asyncio.wait_for``), not a per-read timeout, so a server that trickles bytes cannot stall a
turn. Timeout, connection error, non-2xx, bad JSON, or a missing / non-finite / negative
``harvest`` give ``0.2 * capacity(w)`` with the reason in ``AgentResult.error``.

The response may carry tool actions, ``{"harvest": 1.2, "actions": [{"tool": "broadcast",
"text": "..."}]}``; each is validated against the tool surface (``bdpd_jax.host.tools``) and bad
entries are dropped and noted in ``error`` (the harvest still stands). An optional numeric
``announced`` becomes an ``announce_intended_harvest`` action. Agents of one arena should share
one ``httpx.AsyncClient`` (``make_client``) for connection reuse.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from bdpd_jax.host._json import dumps_compact
from bdpd_jax.host.agents.base import AgentResult, check_wealth, fallback_harvest, join_errors, valid_harvest
from bdpd_jax.host.tools import validate_action, validate_actions

MAX_RESPONSE_BYTES: int = 1024 * 1024


def make_client(max_connections: int = 256) -> httpx.AsyncClient:
    """One pooled client for a set of agents. ``trust_env=False``: no proxy env vars apply."""
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return httpx.AsyncClient(limits=limits, trust_env=False, follow_redirects=False)


def check_url(url: Any) -> str:
    """Validate an absolute http(s) URL."""
    if not isinstance(url, str):
        raise ValueError(f"url: must be a string, got {url!r}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"url: must be an absolute http(s) URL, got {url!r}")
    return url


def check_timeout_ms(timeout_ms: Any) -> float:
    """Validate a deadline in milliseconds (finite number > 0)."""
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)) or not 0 < timeout_ms < float("inf"):
        raise ValueError(f"timeout_ms: must be a finite number > 0, got {timeout_ms!r}")
    return float(timeout_ms)


def parse_response(body: Any, *, no_talk: bool = False) -> tuple[float | None, list[dict[str, Any]], list[str]]:
    """Extract ``(harvest or None, actions, errors)`` from a decoded response body."""
    if not isinstance(body, dict):
        return None, [], [f"response: expected a JSON object, got {type(body).__name__}"]
    errors: list[str] = []
    harvest = valid_harvest(body.get("harvest"))
    if harvest is None:
        errors.append(f"harvest: missing or invalid {body.get('harvest')!r} (need a finite number >= 0)")
    actions, action_errors = validate_actions(body.get("actions"), no_talk=no_talk)
    errors.extend(action_errors)
    for i, a in enumerate(list(actions)):
        if a["tool"] == "harvest":  # the harvest travels in the top-level field, not as an action
            actions.remove(a)
            errors.append(f"actions[{i}] dropped: tool: 'harvest' is not an action here")
    announced = body.get("announced")
    if announced is not None and not no_talk:
        try:
            actions.append(validate_action({"tool": "announce_intended_harvest", "value": announced}))
        except ValueError as exc:
            errors.append(f"announced dropped: {exc}")
    return harvest, actions, errors


class HttpAgent:
    """A player decided by an external HTTP endpoint, under a hard per-call deadline."""

    def __init__(self, url: str, timeout_ms: float, *, client: httpx.AsyncClient | None = None,
                 no_talk: bool = False, headers: dict[str, str] | None = None) -> None:
        self.url = check_url(url)
        self.timeout_ms = check_timeout_ms(timeout_ms)
        self.no_talk = bool(no_talk)
        self.headers = {"content-type": "application/json", **(headers or {})}
        self._client = client
        self._owns_client = client is None

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = make_client(max_connections=4)
        return self._client

    async def aclose(self) -> None:
        """Close the client if this agent created it (a shared client is the caller's)."""
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def _post(self, payload: str) -> httpx.Response:
        timeout = httpx.Timeout(self.timeout_ms / 1000.0)
        return await self._get_client().post(self.url, content=payload.encode(), headers=self.headers,
                                             timeout=timeout)

    async def decide(self, obs: dict[str, Any], wealth: float) -> AgentResult:
        """POST ``obs``; return the harvest (or the fallback) within ``timeout_ms``."""
        w = check_wealth(wealth)
        t0 = time.perf_counter()

        def fail(msg: str, extra: list[str] | None = None) -> AgentResult:
            return AgentResult(harvest=fallback_harvest(w), error=join_errors([msg] + (extra or [])),
                               elapsed_ms=(time.perf_counter() - t0) * 1000.0, fallback=True)

        try:
            payload = dumps_compact(obs)
        except (TypeError, ValueError) as exc:
            return fail(f"obs: not serialisable ({exc})")
        try:
            resp = await asyncio.wait_for(self._post(payload), self.timeout_ms / 1000.0)
        except (asyncio.TimeoutError, httpx.TimeoutException):
            return fail(f"timeout: no response within {self.timeout_ms:g} ms")
        except httpx.HTTPError as exc:
            return fail(f"network: {type(exc).__name__}: {exc}")
        except OSError as exc:
            return fail(f"network: {type(exc).__name__}: {exc}")
        if not 200 <= resp.status_code < 300:
            return fail(f"http: status {resp.status_code}")
        if len(resp.content) > MAX_RESPONSE_BYTES:
            return fail(f"response: body exceeds {MAX_RESPONSE_BYTES} bytes")
        try:
            body = json.loads(resp.content)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return fail(f"response: invalid JSON ({exc.__class__.__name__}: {exc})")
        harvest, actions, errors = parse_response(body, no_talk=self.no_talk)
        elapsed = (time.perf_counter() - t0) * 1000.0
        if harvest is None:
            return AgentResult(harvest=fallback_harvest(w), error=join_errors(errors), actions=actions,
                               elapsed_ms=elapsed, fallback=True)
        return AgentResult(harvest=harvest, error=join_errors(errors), actions=actions, elapsed_ms=elapsed)


__all__ = ["HttpAgent", "make_client", "parse_response", "check_timeout_ms", "check_url"]
