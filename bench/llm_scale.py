"""Many LLM arenas against one model server (issue 38): ``--arenas`` GovSim fishery arenas x
``--players`` LLM players x ``--months`` months, every call to one loopback OpenAI-compatible
endpoint that answers after ``--delay-ms``, with the operator's ``maxInFlight``
(``--max-in-flight``) on that endpoint.

The arenas play in ``--lanes`` LiveBatches (default 4) on one event loop, each lane's months
on its own after the first, the kernel work in one worker thread (``--thread``, default on;
as the server runs it): a lane's host phase (kernels, tools, records) overlaps the other
lanes' calls instead of leaving the pipe empty between months. ``--lanes 1 --no-thread``:
all arenas in one LiveBatch, in lockstep.

The endpoint (bench/loopback.py) is a separate process on raw asyncio streams (it shares neither this process's
GIL nor its CPU clock): every answer is one ``harvest`` tool call and a ``usage``. Reported:
the wall time of the months after the first (the first compiles) against the bound the
limit sets, ``calls x delay / maxInFlight`` (target: within 1.3x), beside what bare POSTs
through the same client and a semaphore reach on this machine at this moment (the floor: a
loaded machine's late timers stretch both), the host CPU per call
(target <= 1 ms: the kernels, the records and the HTTP client together), the most calls ever
in flight (never above the limit) and the mean in flight over the limit (the pipe's
occupancy), with one lane the time per month with no call on the wire, and the fallbacks
(0 expected).

    .venv/bin/python bench/llm_scale.py [--arenas 200] [--players 5] [--months 12] \
        [--delay-ms 50] [--max-in-flight 64] [--lanes 4] [--[no-]thread] [--json out.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import loopback
from harness import Figures, parser, setup  # bench/ is on a bench script's path

setup()  # the process settings before the host imports jax

from bdpd_jax.host.agents.transport import HttpClient  # noqa: E402
from bdpd_jax.host.live.arena import Arena  # noqa: E402
from bdpd_jax.host.live.live_batch import LiveBatch  # noqa: E402
from bdpd_jax.scenarios import govsim, govsim_rules  # noqa: E402


class TimedClient(HttpClient):
    """The players' one client, noting when each POST started and ended (``spans``): the
    mean in flight over the run (the pipe's occupancy) and the idle gap between months."""

    def __init__(self, max_connections: int) -> None:
        super().__init__(max_connections)
        self.spans: list[tuple[float, float]] = []

    async def post(self, url, body, headers, timeout_s, max_bytes):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        try:
            return await super().post(url, body, headers, timeout_s, max_bytes)
        finally:
            self.spans.append((t0, time.perf_counter()))


def occupancy(spans: list[tuple[float, float]], t0: float, t1: float, max_in_flight: int) -> float:
    """Mean requests in flight over [t0, t1] over ``max_in_flight`` (1: the pipe always full)."""
    busy = sum(min(e, t1) - max(s, t0) for s, e in spans if e > t0 and s < t1)
    return busy / ((t1 - t0) * max_in_flight)


def make_arenas(n: int, players: int, months: int, base: str, max_in_flight: int) -> list[Arena]:
    """``n`` GovSim fishery arenas (no discussion), ``players`` LLM players each, one operator."""
    cfg = govsim("fishery", "no_communication", players=[])
    cfg["model"].update(maxPlayers=players, minPlayers=players, maxTurns=months)
    cfg["agentTimeout"] = 60000
    operator = {"llmBaseUrls": [base], "llmEndpoints": [{"baseUrl": base, "maxInFlight": max_in_flight}]}
    rules = govsim_rules("fishery", "no_communication")
    arenas = []
    for k in range(n):
        a = Arena(json.loads(json.dumps(cfg)), seed=0, arena_index=k, operator=operator, fsync=False, keep_records=12)
        for i in range(players):
            a.join(
                {
                    "agentType": "llm",
                    "name": f"fisher_{i + 1}",
                    "model": "loopback",
                    "baseUrl": base,
                    "temperature": 0.0,
                    "rulesText": rules,
                    "fallbackHarvest": 0.0,
                }
            )
        arenas.append(a)
    return arenas


async def floor(base: str, calls: int, delay_ms: float, max_in_flight: int) -> float:
    """Wall time over the bound of ``calls`` bare POSTs (the same client, a semaphore of
    ``max_in_flight``, no arena, no agent): what this machine allows at best right now."""
    client = HttpClient(max_in_flight + 16)
    sem = asyncio.Semaphore(max_in_flight)
    body = json.dumps({"model": "loopback", "messages": []}).encode()

    async def one() -> None:
        async with sem:
            await client.post(f"{base}/chat/completions", body, {}, 60.0, 1 << 20)

    try:
        await asyncio.gather(*(one() for _ in range(max_in_flight)))  # connections up
        t0 = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(calls)))
        wall = time.perf_counter() - t0
    finally:
        await client.aclose()
    return wall / (calls * delay_ms / 1000.0 / max_in_flight)


async def run(
    arenas: int,
    players: int,
    months: int,
    delay_ms: float,
    max_in_flight: int,
    floor_calls: int = 0,
    lanes: int = 1,
    thread: bool = False,
) -> dict[str, Any]:
    """One run; the figures (see the module docstring). ``floor_calls`` > 0: also the bare
    transport's ratio on as many calls, measured right after (``floor_over_bound``).
    ``lanes`` > 1: the arenas split into that many LiveBatches on the one loop, each playing
    its months on its own after the first (a lane's host phase overlaps the others' calls).
    ``thread``: the kernel work of every tick in one worker thread (as the server runs it), so
    the loop reads answers and sends requests while a lane's kernels run."""
    proc, base = loopback.start("chat", delay_ms, "/v1")
    client = TimedClient(max_in_flight + 16)
    try:
        every = make_arenas(arenas, players, months, base, max_in_flight)
        size = -(-arenas // lanes)
        batches = [LiveBatch(every[k : k + size], client=client) for k in range(0, arenas, size)]
        t0 = time.perf_counter()
        await asyncio.gather(*(b.atick() for b in batches))  # compiles the batched programs
        first_s = time.perf_counter() - t0
        sent0 = sum(a.llm.account.sent for a in every)
        client.spans.clear()
        ticks: list[tuple[float, float]] = []  # each month's (start, end), of one lane

        pool = ThreadPoolExecutor(1) if thread else None

        async def offload(fn: Callable[..., Any], *a: Any) -> Any:
            if pool is None:
                return fn(*a)
            return await asyncio.get_running_loop().run_in_executor(pool, fn, *a)

        async def play(batch: LiveBatch) -> None:
            while not batch.done:
                s0 = time.perf_counter()
                await batch.atick(offload)
                ticks.append((s0, time.perf_counter()))

        t0, c0 = time.perf_counter(), time.process_time()
        await asyncio.gather(*(play(b) for b in batches))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if pool is not None:
            pool.shutdown()
        spans = sorted(client.spans)
        # one lane, per month: from its start to its first request and from its last answer to
        # its end (the host's own phases, when no call is on the wire)
        idle = [
            (min(s for s, _ in inside) - a) + (b - max(e for _, e in inside))
            for a, b in ticks
            if lanes == 1 and (inside := [x for x in spans if a <= x[0] <= b])
        ]
        occ = occupancy(spans, t0, t0 + wall, max_in_flight)
        calls = sum(a.llm.account.sent for a in every) - sent0
        limiter = every[0].agents[0].calls.limiter
        fallbacks = sum(d.get("fallback", False) for a in every for r in a.records for d in r["decisions"])
        played = [a.turn for a in every]
        for b in batches:
            await b.aclose()
        bare = await floor(base, floor_calls, delay_ms, max_in_flight) if floor_calls > 0 else None
    finally:
        await client.aclose()
        proc.kill()
        proc.wait()
    bound = calls * delay_ms / 1000.0 / max_in_flight
    return {
        "arenas": arenas,
        "lanes": len(batches),
        "kernel_thread": thread,
        "players": players,
        "months": months,
        "months_played": min(played),
        "delay_ms": delay_ms,
        "max_in_flight": max_in_flight,
        "first_month_s": first_s,
        "calls": calls,
        "wall_s": wall,
        "bound_s": bound,
        "wall_over_bound": wall / bound if bound else None,
        "floor_over_bound": bare,
        "cpu_ms_per_call": 1e3 * cpu / calls if calls else None,
        "peak_in_flight": None if limiter is None else limiter.peak,
        "mean_in_flight_share": occ,
        "host_idle_ms_per_month": 1e3 * sum(idle) / len(idle) if idle else None,
        "fallbacks": fallbacks,
    }


def main() -> None:
    ap = parser(__doc__, arenas=200, players=5, months=12, max_in_flight=64)
    ap.add_argument("--delay-ms", type=float, default=50.0)
    ap.add_argument("--floor-calls", type=int, default=3000, help="bare POSTs timed after the run (0: none)")
    ap.add_argument("--lanes", type=int, default=4, help="LiveBatches the arenas are split into (1: one)")
    ap.add_argument(
        "--thread", action=argparse.BooleanOptionalAction, default=True, help="kernel work in a worker thread"
    )
    args = ap.parse_args()
    out = asyncio.run(
        run(
            args.arenas,
            args.players,
            args.months,
            args.delay_ms,
            args.max_in_flight,
            args.floor_calls,
            args.lanes,
            args.thread,
        )
    )
    Figures("llm_scale", args.json).emit("loopback", **out)
    print(
        f"{out['arenas']} arenas ({out['lanes']} lane(s), kernels "
        f"{'in a thread' if out['kernel_thread'] else 'inline'})"
        f" x {out['players']} LLM players x "
        f"{out['months_played']} months, "
        f"maxInFlight {out['max_in_flight']}, {out['delay_ms']:g} ms per answer\n"
        f"  months 2..: {out['calls']} calls in {out['wall_s']:.2f} s; bound calls x delay / maxInFlight "
        f"= {out['bound_s']:.2f} s -> {out['wall_over_bound']:.2f}x (target <= 1.3x)\n"
        f"  the bare transport on this machine now: {out['floor_over_bound'] or float('nan'):.2f}x the bound\n"
        f"  host CPU {out['cpu_ms_per_call']:.3f} ms per call (target <= 1 ms); peak in flight "
        f"{out['peak_in_flight']}, mean {out['mean_in_flight_share']:.0%} of the limit; fallbacks {out['fallbacks']}\n"
        f"  per month: {out['host_idle_ms_per_month'] or float('nan'):.0f} ms with no call on the wire (host phases); "
        f"first month (compile) {out['first_month_s']:.1f} s"
    )


if __name__ == "__main__":
    main()
