"""HTTP agents against a loopback stub: hard deadline, every failure falls back, concurrency."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from host_stub_server import dead_port

from bdpd_jax.host.agents import AgentResult, HttpAgent, fallback_harvest, make_client

SLACK_S = 0.15  # scheduling slack allowed on top of the deadline


def _call(agent: HttpAgent, obs: dict, wealth: float = 10.0) -> tuple[AgentResult, float]:
    async def main() -> tuple[AgentResult, float]:
        t0 = time.perf_counter()
        try:
            r = await agent.decide(obs, wealth)
        finally:
            await agent.aclose()
        return r, time.perf_counter() - t0

    return asyncio.run(main())


def test_ok_response_with_actions(live_server, stub_state) -> None:
    r, _ = _call(HttpAgent(f"{live_server.base}/ok", 1000), {"turn": 3, "commonsStock": 120.5})
    assert r.harvest == 1.25 and not r.fallback
    assert r.actions == [
        {"tool": "broadcast", "text": "keep it low"},
        {"tool": "send_private", "target": "bob", "text": "psst"},
        {"tool": "announce_intended_harvest", "value": 1.23456},
    ]
    assert r.error is not None and r.error.count("dropped") == 3  # the three bad entries
    path, raw = stub_state["requests"][-1]
    assert path == "/ok" and json.loads(raw) == {"turn": 3, "commonsStock": 120.5}


def test_no_talk_drops_actions(live_server) -> None:
    r, _ = _call(HttpAgent(f"{live_server.base}/ok", 1000, no_talk=True), {})
    assert r.harvest == 1.25 and r.actions == []


def test_obs_is_strict_json(live_server, stub_state) -> None:
    r, _ = _call(HttpAgent(f"{live_server.base}/echo", 1000), {"x": 0.3, "noisy": float("nan")})
    assert r.harvest == 0.3
    assert json.loads(stub_state["requests"][-1][1]) == {"x": 0.3, "noisy": None}


@pytest.mark.parametrize(
    "route,timeout_ms,needle",
    [
        ("slow?d=1.5", 300, "timeout"),
        ("trickle", 400, "timeout"),  # bytes keep coming: only a whole-call deadline stops it
        ("garbage", 1000, "invalid JSON"),
        ("nan", 1000, "invalid json"),  # NaN is not JSON: orjson refuses it while parsing
        ("negative", 1000, "harvest"),
        ("missing", 1000, "harvest"),
        ("status500", 1000, "status 500"),
    ],
)
def test_failures_fall_back_within_deadline(live_server, route: str, timeout_ms: int, needle: str) -> None:
    r, wall = _call(HttpAgent(f"{live_server.base}/{route}", timeout_ms), {"turn": 1}, wealth=30.0)
    assert r.fallback and r.harvest == pytest.approx(fallback_harvest(30.0)) == pytest.approx(0.5)
    assert needle.lower() in (r.error or "").lower(), r.error
    assert wall <= timeout_ms / 1000 + SLACK_S


def test_dead_port_falls_back_fast() -> None:
    r, wall = _call(HttpAgent(f"http://127.0.0.1:{dead_port()}/decide", 500), {})
    assert r.fallback and r.harvest == pytest.approx(0.2 * 1.5)
    assert "network" in r.error and wall <= 0.5 + SLACK_S


def test_twenty_players_concurrently_take_the_slowest_not_the_sum(live_server) -> None:
    delays = [0.05 + 0.0125 * i for i in range(20)]  # 0.05 .. 0.2875 s, sum ~3.4 s
    deadline_ms = 1000

    async def main() -> tuple[list[AgentResult], float, AgentResult, float]:
        async with make_client() as client:
            agents = [
                HttpAgent(f"{live_server.base}/slow?d={d}&h={i}", deadline_ms, client=client)
                for i, d in enumerate(delays)
            ]
            t0 = time.perf_counter()
            results = await asyncio.gather(*(a.decide({"i": i}, 0.0) for i, a in enumerate(agents)))
            wall = time.perf_counter() - t0
            hung = HttpAgent(f"{live_server.base}/slow?d=5", deadline_ms, client=client)
            t1 = time.perf_counter()
            both = await asyncio.gather(hung.decide({}, 0.0), *(a.decide({}, 0.0) for a in agents[:5]))
            return results, wall, both[0], time.perf_counter() - t1

    results, wall, hung, wall_hung = asyncio.run(main())
    assert [r.harvest for r in results] == [float(i) for i in range(20)]
    assert all(r.error is None for r in results)
    assert max(delays) <= wall < max(delays) + 0.3  # ~ the slowest, not ~3.4 s
    assert hung.fallback and "timeout" in hung.error  # one hung player costs the deadline
    assert deadline_ms / 1000 <= wall_hung < deadline_ms / 1000 + SLACK_S


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="url"):
        HttpAgent("ftp://127.0.0.1/x", 100)
    with pytest.raises(ValueError, match="timeout_ms"):
        HttpAgent("http://127.0.0.1/x", 0)
    with pytest.raises(ValueError, match="timeout_ms"):
        HttpAgent("http://127.0.0.1/x", float("nan"))
