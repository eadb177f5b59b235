"""Sandboxed code agents: the spec's worked example, containment, fallback, memory rollback."""

from __future__ import annotations

import asyncio
import glob
import time
from importlib import resources
from pathlib import Path

import pytest

from bdpd_jax.host.agents import AgentResult, CodeAgent, fallback_harvest
from bdpd_jax.host.agents.js_pool import JsPool

#: spec 004 §A.4's worked example as the server serves it (/static/example_agent.js); the test
#: below checks it is the seed's text verbatim when the seed is present
WORKED_EXAMPLE_JS = (resources.files("bdpd_jax.host.server") / "web" / "example_agent.js").read_text("utf-8")


def _worked_example() -> str:
    """The JS of spec 004 §A.4; identical to the seed text when the seed is available."""
    path = glob.glob("/work/shared/seeds/004_*.txt")
    if path:
        text = Path(path[0]).read_text(encoding="utf-8")
        start = text.index("function decide", text.index("A.4 Worked Example"))
        assert text[start : text.index("\n}\n", start) + 3] == WORKED_EXAMPLE_JS
    return WORKED_EXAMPLE_JS


def _obs(stock: float, t: int = 0) -> dict:
    return {"turn": t, "commonsStock": stock, "myCapacity": 1.5, "nPlayers": 4}


def _reference(stocks: list[float], capacity: float = 1.5, n: int = 4) -> list[float]:
    """The §A.4 strategy re-implemented in Python, to check the sandbox's numbers."""
    out, hist = [], []
    for s in stocks:
        hist = (hist + [s])[-5:]
        trend = 0.0
        if len(hist) >= 2:
            k = len(hist)
            xb, yb = (k - 1) / 2, sum(hist) / k
            num = sum((i - xb) * (h - yb) for i, h in enumerate(hist))
            den = sum((i - xb) ** 2 for i in range(k))
            trend = num / den if den > 0 else 0.0
        h = min(0.12 * s * (1 - s / 150) / n, capacity)
        if trend < -2:
            h *= max(0.3, 1 + trend / s)
        out.append(max(0.1, h))
    return out


def test_worked_example_runs_unchanged_with_memory() -> None:
    agent = CodeAgent(_worked_example())
    stocks = [150, 140, 128, 115, 100, 90, 80]
    expected = _reference(stocks)
    for t, s in enumerate(stocks, start=1):
        r = asyncio.run(agent.decide(_obs(s, t), wealth=10.0))
        assert r.error is None and not r.fallback, r.error
        assert r.harvest == pytest.approx(expected[t - 1], rel=1e-12)
        mem = agent.memory
        assert mem["turn"] == t
        assert mem["stockHistory"] == stocks[max(0, t - 5) : t]
        assert mem["harvestHistory"] == [round(x, 3) for x in expected[:t]]
    assert mem["lastTrend"] < -2  # the falling stock is seen through memory


def test_sandbox_has_no_host_objects() -> None:
    agent = CodeAgent(
        "function decide(o, m) { return [typeof require, typeof process, typeof fetch,"
        " typeof setTimeout, typeof XMLHttpRequest].every(t => t === 'undefined') ? 1 : 0 }"
    )
    assert agent.decide_sync({}, 0).harvest == 1


@pytest.mark.parametrize(
    "body,needle",
    [
        ("while (true) {}", "timeout"),
        # out of memory inside QuickJS, or killed at the deadline while still allocating
        ("const a = []; for (;;) a.push(new Array(1e6).fill(1));", "memory|timeout"),
        ("return 'x'.repeat(2 ** 28).length;", "memory"),
        ("require('fs'); return 1;", "require"),
        ("process.exit(); return 1;", "process"),
        ("fetch('http://127.0.0.1:9/'); return 1;", "fetch"),
        ("throw new Error('boom');", "boom"),
        ("return NaN;", "invalid result"),
        ("return Infinity;", "invalid result"),
        ("return -1;", "invalid result"),
        ("return '1.5';", "string"),
        ("return undefined;", "undefined"),
        ("m.self = m; return 1;", "serialisable"),
        ("function f() { f() } f();", "stack"),
    ],
)
def test_failures_fall_back_and_roll_back_memory(body: str, needle: str) -> None:
    agent = CodeAgent("function decide(obs, m) { m.n = (m.n || 0) + 1; if (obs.bad) { " + body + " } return 0.5; }")
    assert asyncio.run(agent.decide({"bad": False}, 20.0)).harvest == 0.5
    t0 = time.perf_counter()
    r = asyncio.run(agent.decide({"bad": True}, 20.0))
    wall = time.perf_counter() - t0
    assert r.fallback and r.harvest == pytest.approx(fallback_harvest(20.0)) == pytest.approx(0.4)
    assert r.error and any(n in r.error.lower() for n in needle.lower().split("|")), r.error
    assert wall < 0.05 + 0.25
    assert agent.memory == {"n": 1}  # rolled back to the last good state
    assert asyncio.run(agent.decide({"bad": False}, 20.0)).harvest == 0.5
    assert agent.memory == {"n": 2}  # and it keeps persisting


def test_timeout_is_about_50ms_and_memory_survives() -> None:
    agent = CodeAgent("function decide(o, m) { m.k = (m.k || 0) + 1; if (o.spin) for(;;){} return m.k; }")
    assert agent.decide_sync({}, 0).harvest == 1
    t0 = time.perf_counter()
    r = agent.decide_sync({"spin": True}, 0)
    elapsed = time.perf_counter() - t0
    assert r.fallback and "timeout" in r.error and 0.045 <= elapsed < 0.2
    assert agent.memory == {"k": 1}  # the timed-out increment was dropped
    assert agent.decide_sync({}, 0).harvest == 2  # and memory keeps persisting afterwards
    assert agent.memory == {"k": 2}


def test_syntax_error_rejected_at_construction() -> None:
    with pytest.raises(ValueError, match=r"strategyCode: SyntaxError"):
        CodeAgent("function decide(obs, memory) { return 1 +; }")
    with pytest.raises(ValueError, match="strategyCode: must define function decide"):
        CodeAgent("var notDecide = 1;")
    with pytest.raises(ValueError, match="strategyCode"):
        CodeAgent("")
    with pytest.raises(ValueError, match="timeout_ms"):
        CodeAgent("function decide(){return 1}", timeout_ms=0)


def test_expression_forms_accepted() -> None:
    assert CodeAgent("(obs, memory) => 0.7").decide_sync({}, 0).harvest == 0.7
    assert CodeAgent("function (obs, memory) { return obs.x * 2 }").decide_sync({"x": 1.5}, 0).harvest == 3


def test_guest_cannot_break_harness_or_see_other_state() -> None:
    a = CodeAgent("function decide(o, m) { JSON.stringify = () => 'x'; globalThis.leak = 7; m.a = 1; return 1 }")
    b = CodeAgent("function decide(o, m) { return typeof leak === 'undefined' ? 2 : 0 }")
    assert a.decide_sync({}, 0).harvest == 1 and a.memory == {"a": 1}
    assert a.decide_sync({}, 0).error is None
    assert b.decide_sync({}, 0).harvest == 2


def test_seeded_random_is_replayable() -> None:
    code = "function decide(o, m) { return Math.random(); }"
    a, b, c = CodeAgent(code, rng_seed=5), CodeAgent(code, rng_seed=5), CodeAgent(code, rng_seed=6)
    ra = [a.decide_sync({}, 0).harvest for _ in range(4)]
    assert ra == [b.decide_sync({}, 0).harvest for _ in range(4)]
    assert ra != [c.decide_sync({}, 0).harvest for _ in range(4)]
    assert len(set(ra)) == 4 and all(0 <= x < 1 for x in ra)


def test_obs_with_nan_and_numpy_scalars() -> None:
    import numpy as np

    agent = CodeAgent("function decide(o, m) { return o.s === null ? o.w : -1 }")
    r = agent.decide_sync({"s": float("nan"), "w": np.float32(0.5)}, np.float64(2.0))
    assert r.harvest == 0.5 and isinstance(r, AgentResult)


def test_memory_checkpoint_restore() -> None:
    agent = CodeAgent("function decide(o, m) { m.t = (m.t || 0) + 1; return m.t }")
    agent.decide_sync({}, 0)
    snap = agent.memory_json()
    agent.decide_sync({}, 0)
    agent.restore_memory(snap)
    assert agent.decide_sync({}, 0).harvest == 2
    with pytest.raises(ValueError, match="memory_json"):
        agent.restore_memory("[1]")


def test_many_agents_concurrently_in_a_pool_of_two() -> None:
    code = "function decide(o, m) { m.c = (m.c || 0) + 1; if (o.i === 3) while(true){}; return o.i }"
    pool = JsPool(2)
    pool.warm()

    async def main() -> list[AgentResult]:
        agents = [CodeAgent(code, pool=pool) for _ in range(6)]
        return await asyncio.gather(*(a.decide({"i": i}, 0) for i, a in enumerate(agents)))

    try:
        results = asyncio.run(main())
    finally:
        pool.close()
    assert [r.harvest for r in results] == [0, 1, 2, 0.2, 4, 5]
    assert results[3].fallback and "timeout" in results[3].error


def test_queued_calls_are_not_failed_for_waiting() -> None:
    """12 spinning agents saturate the worker pool; 10 fast ones queued behind still succeed."""
    spin = "function decide(o, m) { for(;;){} }"
    fast = "function decide(o, m) { m.n = 1; return 0.9 }"

    async def main() -> tuple[list[AgentResult], float]:
        agents = [CodeAgent(spin) for _ in range(12)] + [CodeAgent(fast) for _ in range(10)]
        t0 = time.perf_counter()
        res = await asyncio.gather(*(a.decide({}, 0) for a in agents))
        return res, time.perf_counter() - t0

    results, wall = asyncio.run(main())
    assert all(r.fallback and "timeout: script" in r.error for r in results[:12])
    assert all(r.harvest == 0.9 and r.error is None for r in results[12:])
    assert wall < 12 * 0.05 + 1.0


def test_tampered_harness_cannot_poison_memory() -> None:
    agent = CodeAgent("function decide(o, m) { m.a = 1; if (o.evil) globalThis.__bdpd.S = () => 'nope'; return 1 }")
    assert agent.decide_sync({}, 0).error is None
    r = agent.decide_sync({"evil": True}, 0)
    assert r.fallback and "memory" in r.error and agent.memory == {"a": 1}
    assert agent.decide_sync({}, 0).error is None
