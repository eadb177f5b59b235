"""HTTP and LLM answers are capped while they stream in, before decompression and parsing:
a 1 MB gzip bomb, a huge body (with and without content-length), 100 000 levels of nesting and
numbers too large for a double all end in a clear fallback error, with no memory blow-up."""

from __future__ import annotations

import asyncio
import resource

import pytest
from host_stub_server import gzip_bomb

from bdpd_jax.host.agents import HttpAgent, LLMAgent, fallback_harvest
from bdpd_jax.host.agents.transport import MAX_JSON_DEPTH, TransportError, loads_capped, too_deep

CASES = [
    ("gzipbomb", "exceeds"),
    ("brotli", "content-encoding"),
    ("huge", "exceeds"),
    ("deep", "nested deeper"),
    ("bignum", "invalid json"),
    ("overflow", "invalid json"),
]


def ask_agent(agent, n: int = 2):
    async def main():
        try:
            return [await agent.decide({"turn": 1}, 10.0) for _ in range(n)]
        finally:
            await agent.aclose()

    return asyncio.run(main())


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("kind,needle", CASES + [("huge&chunked=1", "exceeds"), ("gzipbomb&chunked=1", "exceeds")])
def test_http_player_hostile_answers_fall_back(live_server, kind, needle) -> None:
    assert 0.9e6 < len(gzip_bomb()) < 1.1e6  # the bomb is built before the RSS baseline
    rss0 = _maxrss_mb()
    rs = ask_agent(HttpAgent(f"{live_server.base}/bad?kind={kind}", 5000))
    for r in rs:  # twice: the connection pool survives a dropped answer
        assert r.fallback and r.harvest == pytest.approx(fallback_harvest(10.0))
        assert needle in r.error.lower(), r.error
        assert len(r.error) < 400
    assert _maxrss_mb() - rss0 < 150  # a 1 GiB expansion or an 8 MB body never lands


@pytest.mark.parametrize("kind,needle", [("gzipbomb", "once decompressed")] + CASES[1:])
def test_llm_player_hostile_answers_fall_back(live_server, kind, needle) -> None:
    rss0 = _maxrss_mb()
    r = ask_agent(LLMAgent(f"{live_server.base}/v1", f"hostile-{kind}", timeout_ms=5000), 1)[0]
    assert r.fallback and needle in r.error.lower(), r.error
    assert _maxrss_mb() - rss0 < 150


def test_llm_deeply_nested_tool_arguments_are_dropped(live_server) -> None:
    r = ask_agent(LLMAgent(f"{live_server.base}/v1", "deep-args", timeout_ms=5000), 1)[0]
    assert r.fallback and "nested too deeply" in r.error


def test_depth_check_skips_strings_and_counts_exactly() -> None:
    assert not too_deep(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH)
    assert too_deep(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))
    assert not too_deep(b'{"a": "' + b"[{" * 500 + b'\\"[[["}')  # brackets inside strings
    assert not too_deep(b"[" + b"[], " * 1000 + b"[]]")  # many, but shallow
    with pytest.raises(TransportError, match="nested deeper"):
        loads_capped(b'{"a": ' + b"[" * 40 + b"]" * 40 + b"}")
    assert loads_capped(b'{"harvest": 1.5}') == {"harvest": 1.5}
