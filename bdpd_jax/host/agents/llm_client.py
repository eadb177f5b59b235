"""The layer every LLM call goes through, below the player's protocol (issue 38).

:class:`LLMCalls` is one LLM player's way to its endpoint; the protocol (``LLMAgent``) hands it
a finished request body and gets back the decoded completion or a ``TransportError``:

1. **Budget.** When the arena's :class:`TokenAccount` has spent its ``tokenBudget``, the call
   is refused (``budget: ...``) before anything else: the arena stops after this turn.
2. **Cache.** With a :class:`~bdpd_jax.host.agents.llm_cache.ResponseCache` and a request at
   temperature 0 (or any temperature when the arena's ``llmCache`` is true), a stored answer is
   returned without a call.
3. **Limits.** The endpoint's :class:`~bdpd_jax.host.agents.llm_limits.EndpointLimiter` (the
   operator's ``maxInFlight`` / ``requestsPerMinute``, shared by the process) holds the
   request until it may start.
4. **Retries.** A 429 or 5xx answer is asked again, up to the endpoint's ``maxRetries``, after
   the wait its ``Retry-After`` asks for (else an exponential backoff), as long as the retry
   can start before the deadline.
5. **Usage.** The answer's ``usage`` (``prompt_tokens``, ``completion_tokens``) is added to
   the player's totals, to this turn's and to the arena's account.

All of it runs under the player's one deadline (``timeout_s``): the time queued, every try and
every backoff count. *Choice:* a cached answer counts its recorded tokens (into the turn
record and the budget) as the call it stands for did, so a re-run from the cache gives the
same records, budget stop included; ``TokenAccount.cached`` says how many calls cost nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

from bdpd_jax.host.agents.llm_cache import ResponseCache
from bdpd_jax.host.agents.llm_limits import EndpointLimiter, backoff_s, retryable
from bdpd_jax.host.agents.transport import TransportError, loads_capped
from bdpd_jax.host.jsonio import dumps_bytes

#: a usage count read from an answer beyond this is read as 0 (a hostile server cannot make
#: the totals overflow or spend the budget with one answer of 10**30 tokens)
MAX_TOKENS_PER_ANSWER: int = 10**9
#: the most retries an endpoint may ask for (``maxRetries``)
MAX_RETRIES: int = 16


class Poster(Protocol):
    """What :meth:`LLMCalls.complete` posts through (``transport.HttpClient``, a test's fake)."""

    async def post(
        self, url: str, body: bytes, headers: dict[str, str], timeout_s: float, max_bytes: int
    ) -> tuple[int, bytes]: ...


@dataclasses.dataclass
class Usage:
    """Tokens: ``prompt_tokens`` and ``completion_tokens`` (the wire's ``promptTokens`` /
    ``completionTokens``)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    def wire(self) -> dict[str, int]:
        return {"promptTokens": self.prompt_tokens, "completionTokens": self.completion_tokens}

    @classmethod
    def from_wire(cls, d: dict[str, Any], bound: int) -> Usage:
        """The tokens of a logged ``usage`` (``promptTokens`` / ``completionTokens``: a replayed
        script's, which anyone joining a scripted player writes), read by :func:`token_count`."""
        return cls(token_count(d.get("promptTokens"), bound), token_count(d.get("completionTokens"), bound))


def token_count(v: Any, bound: int = MAX_TOKENS_PER_ANSWER) -> int:
    """A reported token count: an integer in [0, ``bound``], else 0 (an unreadable count)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= bound else 0


def answer_usage(data: Any) -> Usage | None:
    """The tokens an OpenAI-style answer reports (``usage.prompt_tokens`` /
    ``usage.completion_tokens``; an unreadable count is 0); None for an answer without ``usage``."""
    u = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(u, dict):
        return None
    return Usage(token_count(u.get("prompt_tokens")), token_count(u.get("completion_tokens")))


@dataclasses.dataclass
class TokenAccount:
    """One arena's LLM account: tokens of every answer its players used (``usage``), calls
    sent to the server (``sent``, each try counted), answered from the cache (``cached``),
    retried (``retried``); ``budget``: the arena's ``tokenBudget`` (None: none)."""

    budget: int | None = None
    usage: Usage = dataclasses.field(default_factory=Usage)
    sent: int = 0
    cached: int = 0
    retried: int = 0

    @property
    def spent(self) -> bool:
        """True once the tokens used reach the budget."""
        return self.budget is not None and self.usage.total >= self.budget

    def note(self, *, sent: int = 0, cached: int = 0, retried: int = 0) -> None:
        """Count calls sent, answered from the cache, retried."""
        self.sent += sent
        self.cached += cached
        self.retried += retried

    def calls(self) -> dict[str, int]:
        """What the report says of the calls (``sent``, ``cached``, ``retried``)."""
        return {"sent": self.sent, "cached": self.cached, "retried": self.retried}


class _Request:
    """A request body (or the function that makes it) and its wire bytes, each made once."""

    def __init__(self, body: dict[str, Any] | Callable[[], dict[str, Any]]) -> None:
        self._make = body if callable(body) else None
        self._body = None if callable(body) else body
        self._text: bytes | None = None

    def body(self) -> dict[str, Any]:
        if self._body is None and self._make is not None:
            self._body = self._make()
        return self._body if self._body is not None else {}

    def text(self) -> bytes:
        if self._text is None:
            try:  # orjson, as the HTTP players' (non-finite floats -> null): ~5x less CPU than json.dumps
                self._text = dumps_bytes(self.body())
            except (TypeError, ValueError) as exc:
                raise TransportError(f"obs: not serialisable ({exc})") from None
        return self._text


class LLMCalls:
    """One LLM player's calls to ``endpoint`` (its base URL). Without ``limiter``, ``cache``,
    ``account`` and retries, a call is one POST under the deadline (what it was before)."""

    def __init__(
        self,
        endpoint: str,
        *,
        limiter: EndpointLimiter | None = None,
        max_retries: int = 0,
        cache: ResponseCache | None = None,
        cache_any_temperature: bool = False,
        account: TokenAccount | None = None,
    ) -> None:
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or not 0 <= max_retries <= MAX_RETRIES:
            raise ValueError(f"maxRetries: must be an integer in [0, {MAX_RETRIES}], got {max_retries!r}")
        self.endpoint = endpoint
        self.limiter = limiter
        self.max_retries = max_retries
        self.cache = cache
        self.cache_any_temperature = bool(cache_any_temperature)
        self.account = account if account is not None else TokenAccount()
        self.usage = Usage()  # the player's whole run
        self._turn = Usage()  # since the last take_turn
        self._turn_calls = 0

    def cached(self, body: dict[str, Any]) -> bool:
        """Whether this request is answered from the cache when it can be: the arena's
        ``llmCache`` true, or unset (None) and the request at temperature 0."""
        return self.cache is not None and (self.cache_any_temperature or body.get("temperature") == 0)

    async def complete(
        self,
        client: Poster,
        url: str,
        body: dict[str, Any] | Callable[[], dict[str, Any]],
        headers: dict[str, str],
        timeout_s: float,
        max_bytes: int,
    ) -> Any:
        """The decoded completion of ``body`` POSTed to ``url`` (see the module docstring for
        the steps); TransportError naming what failed. ``body`` may be a function that makes
        it: without a cache it is made once the call has its place (a phase of 1 000 calls
        behind ``maxInFlight`` 64 then renders each request when it can go, and the first
        answers are read while the rest wait, not after every request was rendered)."""
        acct = self.account
        if acct.spent:
            raise TransportError(
                f"budget: the arena's tokenBudget of {acct.budget} tokens is spent ({acct.usage.total} used)"
            )
        req = _Request(body)
        key = None
        if self.cache is not None and self.cached(req.body()):
            key = self.cache.key(self.endpoint, req.body())
            hit = self.cache.get(key)
            if isinstance(hit, dict):
                acct.note(cached=1)
                self._count(hit)
                return hit
        data = await self._send(client, url, req, headers, timeout_s, max_bytes)
        if key is not None and self.cache is not None and isinstance(data, dict):
            self.cache.put(key, data)
        self._count(data)
        return data

    async def _send(
        self, client: Poster, url: str, req: _Request, headers: dict[str, str], timeout_s: float, max_bytes: int
    ) -> Any:
        """POST with the endpoint's limits and retries, all within ``timeout_s``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        attempt = 0
        try:
            async with asyncio.timeout_at(deadline):
                while True:
                    async with self.limiter.slot() if self.limiter is not None else contextlib.nullcontext():
                        text = req.text()  # made once, when the first try has its place
                        reply = await client.post(url, text, headers, max(deadline - loop.time(), 1e-3), max_bytes)
                    self.account.note(sent=1)
                    status, raw = reply
                    if 200 <= status < 300:
                        break
                    tries = f" after {attempt + 1} tries" if attempt else ""
                    if not retryable(status) or attempt >= self.max_retries:
                        raise TransportError(f"http: status {status}{tries}")
                    wait = backoff_s(attempt, getattr(reply, "retry_after", None))
                    if loop.time() + wait >= deadline:
                        raise TransportError(
                            f"http: status {status}{tries} (a retry in {wait:.3g} s would pass the deadline)"
                        )
                    attempt += 1
                    self.account.note(retried=1)
                    await asyncio.sleep(wait)
        except TimeoutError:
            raise TransportError(f"timeout: no response within {timeout_s * 1000:g} ms") from None
        return loads_capped(raw)

    def _count(self, data: Any) -> None:
        u = answer_usage(data)
        if u is None:  # the server says nothing of tokens: nothing to record
            return
        self.usage.add(u)
        self._turn.add(u)
        self._turn_calls += 1
        self.account.usage.add(u)

    def take_turn(self) -> dict[str, int] | None:
        """This turn's tokens (``{promptTokens, completionTokens}``) since the last call, None
        when no answer meanwhile reported its usage; the count starts again."""
        if not self._turn_calls:
            return None
        out, self._turn, self._turn_calls = self._turn.wire(), Usage(), 0
        return out


__all__ = [
    "LLMCalls",
    "MAX_RETRIES",
    "MAX_TOKENS_PER_ANSWER",
    "Poster",
    "TokenAccount",
    "Usage",
    "answer_usage",
    "token_count",
]
