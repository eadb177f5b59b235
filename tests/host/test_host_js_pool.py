"""The JS wall clock holds: native operations QuickJS cannot interrupt (BigInt, allocation
storms, normalize), catastrophic regexes and plain loops all come back as a fallback within
~60 ms + scheduling, the next call works, memory rolls back, and the event loop is never held."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from bdpd_jax.host.agents import CodeAgent, fallback_harvest
from bdpd_jax.host.agents.js_pool import PENALISED_NICE, JsPool

HOSTILE = {
    "bigint": "let x = 3n; for (;;) x = x * x;",
    "bigint_pow": "let y = 7n ** 100000n; for (let i = 0; i < 30; i++) y = y * y;",
    "alloc": "const a = []; for (;;) a.push('x'.repeat(1e6));",
    "regex": "/(a+)+$/.test('a'.repeat(40) + 'b');",
    "loop": "for (;;) {}",
    "normalize": "'\\u1E9B\\u0323'.repeat(1e6).normalize('NFKC');",
}
# the ~60 ms kill plus scheduling on a loaded 2-core machine; unkilled, each case runs for seconds or forever
WALL_S = 1.0


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_call_times_out_and_next_call_works(js_pool, case) -> None:
    agent = CodeAgent(
        "function decide(o, m) { m.n = (m.n || 0) + 1; if (o.bad) { " + HOSTILE[case] + " } return 0.5; }", pool=js_pool
    )
    assert agent.decide_sync({}, 20.0).harvest == 0.5
    t0 = time.perf_counter()
    r = agent.decide_sync({"bad": True}, 20.0)
    wall = time.perf_counter() - t0
    assert r.fallback and r.harvest == pytest.approx(fallback_harvest(20.0))
    assert r.error and ("timeout" in r.error or "memory" in r.error), r.error
    assert wall < WALL_S, (case, wall, r.error)
    assert agent.memory == {"n": 1}  # the failed call's write is dropped
    t0 = time.perf_counter()
    assert agent.decide_sync({}, 20.0).harvest == 0.5  # the next call works (a spare worker)
    assert agent.memory == {"n": 2}


def test_event_loop_is_never_held(js_pool) -> None:
    """A ticker on the loop keeps ticking every ~5 ms while hostile agents run."""
    agents = [
        CodeAgent("function decide(o, m) { " + HOSTILE[k] + " return 1; }", pool=js_pool)
        for k in ("bigint", "normalize", "alloc", "loop")
    ]

    async def main() -> tuple[float, list]:
        gaps, stop = [], False

        async def ticker() -> None:
            last = time.perf_counter()
            while not stop:
                await asyncio.sleep(0.005)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        task = asyncio.create_task(ticker())
        results = await asyncio.gather(*(a.decide({}, 0.0) for a in agents))
        stop = True
        await task
        return max(gaps), results

    worst, results = asyncio.run(main())
    assert all(r.fallback for r in results)
    assert worst < 0.1, worst  # held, the loop would stall for the hostile calls in turn (4 x ~60 ms)
    assert js_pool.kills >= 2  # the native cases were killed, not waited for


def test_pool_validation() -> None:
    with pytest.raises(ValueError, match="size"):
        JsPool(0)
    with pytest.raises(ValueError, match="pool"):
        CodeAgent("function decide(){return 1}", pool=object())


def test_a_penalised_owners_call_runs_at_the_lowest_priority_on_a_worker_then_retired(monkeypatch) -> None:
    """Issue 35: an arena whose code missed its deadline runs its next calls at the lowest CPU
    priority, so its loops take no core an honest arena's worker wants, and that worker is then
    replaced (a priority cannot be raised back): honest calls never run on a lowered one."""
    seen: list[tuple[int, int]] = []  # (pid, its nice value) of each lowered worker
    setpriority = os.setpriority

    def spy(which: int, who: int, prio: int) -> None:
        setpriority(which, who, prio)
        seen.append((who, os.getpriority(which, who)))

    monkeypatch.setattr(os, "setpriority", spy)
    pool = JsPool(2)
    pool.warm()
    try:
        code = "function decide(o, m) { if (o.bad) { " + HOSTILE["bigint"] + " } return 0.5; }"
        bad, good = CodeAgent(code, pool=pool, owner="bad"), CodeAgent(code, pool=pool, owner="good")
        assert bad.decide_sync({"bad": True}, 20.0).fallback and pool.penalised("bad") and seen == []
        assert bad.decide_sync({}, 20.0).harvest == 0.5  # an honest answer of a penalised owner
        assert [n for _, n in seen] == [PENALISED_NICE]
        pid = seen[0][0]
        for _ in range(400):  # retired: killed and reaped off the caller's path
            if not Path(f"/proc/{pid}").exists():
                break
            time.sleep(0.025)
        assert not Path(f"/proc/{pid}").exists()
        assert good.decide_sync({}, 20.0).harvest == 0.5 and len(seen) == 1  # never lowered for honest code
    finally:
        pool.close()
