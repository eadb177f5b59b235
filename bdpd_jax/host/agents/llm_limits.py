"""How hard the LLM players of a process may press one model server (issue 38).

An operator lists its endpoints with limits (``Operator.llm_endpoints``: ``maxInFlight``,
``requestsPerMinute``, ``maxRetries``). Every LLM call to a URL under such an endpoint goes
through that endpoint's one :class:`EndpointLimiter`, shared by every arena of the process
(:func:`limiter_for`): at most ``maxInFlight`` requests are on the wire at once, and request
starts are spaced ``60 / requestsPerMinute`` seconds apart (a steady rate, no burst). A call
that waits for its turn waits inside its player's deadline (``llm_client``), so a full queue
costs a fallback, never a late turn.

The limiter's waiting lists belong to the event loop that uses them; a process that runs
several loops one after the other (a script's ``tick()`` calls, the tests) gets fresh ones on
each loop, with the same limits.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import random
from collections.abc import AsyncIterator

#: the longest a Retry-After header is honoured for (a server asking for more is answered
#: with the error at once: no deadline of a live player is that long)
MAX_RETRY_AFTER_S: float = 600.0
#: the first backoff without a Retry-After header; it doubles with every retry (then x 0.5-1)
BACKOFF_BASE_S: float = 0.25


class EndpointLimiter:
    """One endpoint's limits: ``max_in_flight`` requests at once (None: no bound) and
    ``requests_per_minute`` request starts (None: no bound). ``peak``: the most requests in
    flight ever seen (what the tests and the bench read)."""

    def __init__(self, max_in_flight: int | None = None, requests_per_minute: float | None = None) -> None:
        if max_in_flight is not None and (isinstance(max_in_flight, bool) or max_in_flight < 1):
            raise ValueError(f"maxInFlight: must be an integer >= 1 or None, got {max_in_flight!r}")
        if requests_per_minute is not None and not (math.isfinite(requests_per_minute) and requests_per_minute > 0):
            raise ValueError(f"requestsPerMinute: must be a number > 0 or None, got {requests_per_minute!r}")
        self.max_in_flight = max_in_flight
        self.requests_per_minute = requests_per_minute
        self.in_flight = 0
        self.peak = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sem: asyncio.Semaphore | None = None
        self._next_start = 0.0  # the loop time the next request may start at (rate limit)

    def _bind(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop: fresh waiting lists (nothing of the old one is in flight)
            self._loop, self._next_start = loop, 0.0
            self._sem = None if self.max_in_flight is None else asyncio.Semaphore(self.max_in_flight)
        return loop

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one of the endpoint's in-flight places, started no sooner than the rate allows;
        the caller's deadline (``asyncio.timeout``) bounds the wait."""
        loop = self._bind()
        sem = self._sem
        if sem is not None:
            await sem.acquire()
        try:
            if self.requests_per_minute is not None:
                now = loop.time()
                start = max(now, self._next_start)
                self._next_start = start + 60.0 / self.requests_per_minute
                if start > now:
                    await asyncio.sleep(start - now)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                yield
            finally:
                self.in_flight -= 1
        finally:
            if sem is not None:
                sem.release()


#: the process's limiters, by the endpoint's base URL (canonical form)
_LIMITERS: dict[str, EndpointLimiter] = {}


def limiter_for(base_url: str, max_in_flight: int | None, requests_per_minute: float | None) -> EndpointLimiter:
    """The process's limiter of the endpoint ``base_url``, shared by every arena that calls
    it. *Choice:* an operator naming other limits for the same endpoint replaces it (the
    latest operator's limits hold from its next call on)."""
    cur = _LIMITERS.get(base_url)
    if cur is None or (cur.max_in_flight, cur.requests_per_minute) != (max_in_flight, requests_per_minute):
        cur = _LIMITERS[base_url] = EndpointLimiter(max_in_flight, requests_per_minute)
    return cur


def retryable(status: int) -> bool:
    """Whether an answer with HTTP ``status`` is worth asking again: 429 (too many requests)
    and the server errors 5xx; any other status is the answer."""
    return status == 429 or 500 <= status <= 599


def retry_after_s(header: str | None) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds (delta-seconds or an HTTP date;
    None when absent or unreadable), never negative."""
    if not header:
        return None
    text = header.strip()
    try:
        value = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        import datetime as _dt

        now = _dt.datetime.now(when.tzinfo or _dt.UTC)
        value = (when - now).total_seconds()
    if not math.isfinite(value):
        return None
    return max(0.0, value)


def backoff_s(attempt: int, header: str | None, rng: random.Random | None = None) -> float:
    """How long to wait before retry number ``attempt`` (0 first): what ``Retry-After`` asks
    for when given (bounded by ``MAX_RETRY_AFTER_S``), else ``BACKOFF_BASE_S * 2**attempt``
    times a random factor in [0.5, 1) (callers that all failed at once do not come back at once)."""
    asked = retry_after_s(header)
    if asked is not None:
        return min(asked, MAX_RETRY_AFTER_S)
    r = (rng or random).random()
    return BACKOFF_BASE_S * (2.0 ** min(attempt, 16)) * (0.5 + 0.5 * r)


__all__ = [
    "BACKOFF_BASE_S",
    "MAX_RETRY_AFTER_S",
    "EndpointLimiter",
    "backoff_s",
    "limiter_for",
    "retry_after_s",
    "retryable",
]
