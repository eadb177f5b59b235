"""HTTP callback agents (spec 004 §A.3.2): POST the observation, expect ``{"harvest": n}``.

The whole call (connect, send, wait, read) runs under one hard deadline of ``timeout_ms``
(``asyncio.wait_for``), not a per-read timeout, so a server that trickles bytes cannot stall a
turn. Timeout, connection error, non-2xx, bad JSON, or a missing / non-finite / negative
``harvest`` give ``0.2 * capacity(w)`` with the reason in ``AgentResult.error``.

The response may carry tool actions, ``{"harvest": 1.2, "actions": [{"tool": "broadcast",
"text": "..."}]}``; each is validated against the tool surface (``bdpd_jax.host.agents.tools``) and bad
entries are dropped and noted in ``error`` (the harvest still stands). An optional numeric
``announced`` becomes an ``announce_intended_harvest`` action. Agents of one arena should share
one client (``transport.make_client``) for connection reuse. The answer is capped at ``MAX_RESPONSE_BYTES``
while it streams in, before decompression and parsing, and at ``MAX_JSON_DEPTH`` levels of
nesting (:mod:`~bdpd_jax.host.agents.transport`).
"""

from __future__ import annotations

import time
from typing import Any

from bdpd_jax.config.limits import short_repr
from bdpd_jax.host.agents.base import AgentResult, check_wealth, fallback_harvest, join_errors, valid_harvest
from bdpd_jax.host.agents.tools import validate_action, validate_actions
from bdpd_jax.host.agents.transport import (
    ClientSlot,
    HttpClient,
    TransportError,
    canonical_url,
    loads_capped,
)
from bdpd_jax.host.jsonio import dumps_bytes

MAX_RESPONSE_BYTES: int = 256 * 1024  # an HTTP player's answer; {"harvest", "actions"} needs far less


def check_url(url: Any, field: str = "url") -> str:
    """An absolute http(s) URL in the form the client sends it (``transport.canonical_url``)."""
    return str(canonical_url(url, field))


def check_timeout_ms(timeout_ms: Any) -> float:
    """Validate a deadline in milliseconds (finite number > 0)."""
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)) or not 0 < timeout_ms < float("inf"):
        raise ValueError(f"timeout_ms: must be a finite number > 0, got {timeout_ms!r}")
    return float(timeout_ms)


#: the answer's shape, told to a player that sent something else (docs/semantics/live/agents.md)
EXPECTED_SHAPE = '{"harvest": 2.5, "actions": []}'


def parse_response(body: Any, *, no_talk: bool = False) -> tuple[float | None, list[dict[str, Any]], list[str]]:
    """Extract ``(harvest or None, actions, errors)`` from a decoded response body."""
    if not isinstance(body, dict):
        return (
            None,
            [],
            [f"response: expected a JSON object such as {EXPECTED_SHAPE}, got {type(body).__name__} {body!r:.40}"],
        )
    errors: list[str] = []
    harvest = valid_harvest(body.get("harvest"))
    if harvest is None:
        errors.append(f"harvest: missing or invalid {short_repr(body.get('harvest'))} (need a finite number >= 0)")
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

    def __init__(
        self,
        url: str,
        timeout_ms: float,
        *,
        client: HttpClient | None = None,
        no_talk: bool = False,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.url = check_url(url)
        self.timeout_ms = check_timeout_ms(timeout_ms)
        self.no_talk = bool(no_talk)
        self.headers = dict(headers or {})
        self._client = ClientSlot(client)

    async def aclose(self) -> None:
        """Close the client if this agent created it (a shared client is the caller's)."""
        await self._client.aclose()

    async def decide(self, obs: dict[str, Any], wealth: float) -> AgentResult:
        """POST ``obs``; return the harvest (or the fallback) within ``timeout_ms``."""
        w = check_wealth(wealth)
        t0 = time.perf_counter()
        try:
            payload = dumps_bytes(obs)
        except (TypeError, ValueError) as exc:
            return self._fail(w, t0, f"obs: not serialisable ({exc})")
        try:
            status, raw = await self._client.get().post(
                self.url, payload, self.headers, self.timeout_ms / 1000.0, MAX_RESPONSE_BYTES
            )
            if not 200 <= status < 300:
                raise TransportError(f"http: status {status}")
            body = loads_capped(raw)
        except TransportError as exc:
            return self._fail(w, t0, str(exc))
        harvest, actions, errors = parse_response(body, no_talk=self.no_talk)
        elapsed = (time.perf_counter() - t0) * 1000.0
        if harvest is None:
            return AgentResult(
                harvest=fallback_harvest(w),
                error=join_errors(errors),
                actions=actions,
                elapsed_ms=elapsed,
                fallback=True,
            )
        return AgentResult(harvest=harvest, error=join_errors(errors), actions=actions, elapsed_ms=elapsed)

    @staticmethod
    def _fail(w: float, t0: float, msg: str) -> AgentResult:
        return AgentResult(
            harvest=fallback_harvest(w), error=msg, elapsed_ms=(time.perf_counter() - t0) * 1000.0, fallback=True
        )


__all__ = ["HttpAgent", "parse_response", "check_timeout_ms", "check_url"]
