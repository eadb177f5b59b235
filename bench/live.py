"""Live arenas: LiveBatch (one batched kernel call per phase per turn, every player asked at
once) against the same arenas ticked one by one (one kernel call per arena per phase, each
arena's players asked together), in the same run.

Cases: ``http`` — N arenas x 4 HTTP players on loopback, the responder (bench/loopback.py:
a separate process on raw asyncio streams, so it neither shares this process's GIL nor costs
much CPU) answers
after ``--delay-ms``; ``builtin`` —
the same arenas with 4 built-in players (kernel and host overhead only). Compile time (the
first tick) is reported apart. ``--write`` saves the figures to bench/live_last.md
(bench/README.md keeps the ones quoted).

    .venv/bin/python bench/live.py [--arenas 100] [--turns 10] [--delay-ms 5] [--write]
"""

from __future__ import annotations

import asyncio
import copy
import gc
import os
import platform
import time
from pathlib import Path

import loopback
from harness import Figures, parser, setup  # bench/ is on a bench script's path

setup()  # the process settings before the host imports jax and equinox

from bdpd_jax.host.agents.transport import make_client  # noqa: E402
from bdpd_jax.host.live.arena import Arena  # noqa: E402
from bdpd_jax.host.live.live_batch import LiveBatch  # noqa: E402

HERE = Path(__file__).resolve().parent
FREEZE = True

CONFIG = {
    "model": {"maxPlayers": 4, "minPlayers": 4, "maxTurns": 1000},
    "observability": {
        "commonsStock": {"visible": True, "noise": 0.05},
        "nPlayers": {"visible": True},
        "othersHarvest": {"visible": True},
    },
    "agentTimeout": 2000,
}


def make_arenas(n: int, kind: str, url: str | None, client) -> list[Arena]:
    arenas = []
    for k in range(n):
        a = Arena(copy.deepcopy(CONFIG), seed=0, arena_index=k, client=client, fsync=False)
        # client None: each arena pools its own 4 connections (httpcore's pool scans every
        # connection per request, so one pool of 400 connections costs O(400^2) per turn)
        for i in range(4):
            if kind == "http":
                a.join({"agentType": "http", "name": f"h{i}", "url": url})
            else:
                a.join({"agentType": "builtin", "name": f"b{i}", "strategy": ("conservative", "adaptive")[i % 2]})
        arenas.append(a)
    return arenas


async def run_case(n: int, kind: str, turns: int, url: str | None, shared_client: bool = False) -> dict:
    client = make_client(max_connections=4 * n + 16) if shared_client else None
    out = {}
    # LiveBatch
    arenas = make_arenas(n, kind, url, client)
    batch = LiveBatch(arenas)
    t0 = time.perf_counter()
    await batch.atick()
    out["batch_first"] = time.perf_counter() - t0
    if FREEZE:
        gc.collect()
        gc.freeze()  # start-up objects leave the collector's scans (a long-running host's move)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(turns):
        await batch.atick()
    out["batch_run"] = time.perf_counter() - t0
    out["batch_cpu"] = time.process_time() - c0
    out["batch_played"] = sum(len(a.records) for a in arenas) - n
    fallbacks = sum(d.get("fallback", False) for a in arenas for r in a.records for d in r["decisions"])
    for a in arenas:
        await a.aclose()  # the arenas' connection pools
    # one by one
    arenas = make_arenas(n, kind, url, client)
    t0 = time.perf_counter()
    for a in arenas:
        await a.atick()
    out["single_first"] = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(turns):
        for a in arenas:
            await a.atick()
    out["single_run"] = time.perf_counter() - t0
    out["single_cpu"] = time.process_time() - c0
    out["single_played"] = sum(len(a.records) for a in arenas) - n
    fallbacks += sum(d.get("fallback", False) for a in arenas for r in a.records for d in r["decisions"])
    for a in arenas:
        await a.aclose()
    out["fallbacks"] = fallbacks
    if client is not None:
        await client.aclose()
    return out


OBS = {
    "turn": 3,
    "playerId": "h1",
    "commonsStock": 120.5,
    "regenRate": None,
    "myWealth": 12.25,
    "myCapacity": 1.6125,
    "nPlayers": 4,
    "othersWealth": {"h0": 1.5, "h2": 2.5, "h3": 3.5},
    "othersHarvest": {"h0": 0.5, "h2": 0.25, "h3": 1.0},
    "pacts": {"active": [], "proposed": []},
    "inbox": [],
}


async def agent_cpu(n: int, url: str, rounds: int = 10) -> float:
    """Host CPU per HTTP decision of the agent path alone (envelope JSON, request, answer
    parsing; no kernel, no records): N clients x 4 HttpAgents asked at once, ``rounds`` times."""
    from bdpd_jax.host.agents.http import HttpAgent

    clients = [make_client(8) for _ in range(n)]
    agents = [HttpAgent(url, 2000, client=c) for c in clients for _ in range(4)]
    await asyncio.gather(*(a.decide(OBS, 10.0) for a in agents))  # connections up
    c0 = time.process_time()
    for _ in range(rounds):
        await asyncio.gather(*(a.decide(OBS, 10.0) for a in agents))
    cpu = time.process_time() - c0
    for c in clients:
        await c.aclose()
    return 1e3 * cpu / (rounds * len(agents))


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--arenas", type=int, default=100)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--delay-ms", type=float, default=5.0)
    ap.add_argument("--write", action="store_true", help="write the figures into bench/live_last.md")
    ap.add_argument("--no-freeze", action="store_true", help="skip gc.freeze() after the first tick")
    ap.add_argument("--cases", default="http,builtin")
    ap.add_argument("--agent-cpu", action="store_true", help="only the agent path's CPU per HTTP decision")
    ap.add_argument("--long-ticks", type=int, help="only the long built-in LiveBatch run (bench/live_long.py)")
    args = ap.parse_args()
    out = Figures("live", args.json)
    if args.long_ticks:
        import live_long

        return live_long.main(["--arenas", str(args.arenas), "--ticks", str(args.long_ticks)])
    global FREEZE
    FREEZE = not args.no_freeze
    proc, url = loopback.start("harvest", args.delay_ms, "/decide")
    if args.agent_cpu:
        try:
            ms = asyncio.run(agent_cpu(args.arenas, url))
            print(f"agent path: {ms:.3f} ms host CPU per HTTP decision")
            out.emit("agent_cpu", arenas=args.arenas, cpu_ms_per_decision=ms, target_ms=0.25)
        finally:
            proc.kill()
        return
    rows = []
    try:
        for kind in args.cases.split(","):
            # builtin turns are short: more of them, but fewer than the ~63 turns these arenas survive
            turns = args.turns if kind == "http" else 50
            r = asyncio.run(run_case(args.arenas, kind, turns, url))
            for mode in ("batch", "single"):
                run = r[f"{mode}_run"]
                rows.append(
                    {
                        "case": kind,
                        "mode": "LiveBatch" if mode == "batch" else "one by one",
                        "first": r[f"{mode}_first"],
                        "run": run,
                        "tps": turns / run,
                        "turns": turns,
                        "atps": r[f"{mode}_played"] / run,
                        "fallbacks": r["fallbacks"],
                        "cpu_ms": 1e3 * r[f"{mode}_cpu"] / (4 * r[f"{mode}_played"]),
                    }
                )
            print(rows[-2], rows[-1], flush=True)
            for row in rows[-2:]:
                out.emit(arenas=args.arenas, delay_ms=args.delay_ms, **row)  # row["case"] is the case
    finally:
        proc.kill()
        proc.wait()
    dev = f"CPU ({os.cpu_count()} cores, {platform.machine()})"
    lines = [
        "| Case | Mode | First tick (compile) | Turns | Run | turns/s | arena-turns/s | host CPU per decision |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['mode']} | {r['first']:.2f} s | {r['turns']} | {r['run']:.2f} s "
            f"| {r['tps']:.2f} | {r['atps']:.0f} | {r['cpu_ms']:.3f} ms |"
        )
    speed = {k: [r for r in rows if r["case"] == k] for k in args.cases.split(",")}
    ratio = {k: v[0]["tps"] / v[1]["tps"] for k, v in speed.items()}
    table = "\n".join(lines)
    print(table)
    print(
        "LiveBatch speed-up: "
        + ", ".join(f"{k} {v:.1f}x" for k, v in ratio.items())
        + (f"; fallbacks (http case) {speed['http'][0]['fallbacks']}" if "http" in speed else "")
    )
    if args.write and set(speed) == {"http", "builtin"}:
        cmd = f".venv/bin/python bench/live.py --arenas {args.arenas} --turns {args.turns} --delay-ms {args.delay_ms:g}"
        text = README.format(
            cmd=cmd,
            dev=dev,
            table=table,
            arenas=args.arenas,
            load=os.getloadavg()[0],
            delay=args.delay_ms,
            http=ratio["http"],
            builtin=ratio["builtin"],
            fallbacks=speed["http"][0]["fallbacks"],
        )
        (HERE / "live_last.md").write_text(text)


README = """# Live-arena benchmark

| Script | What it measures |
|---|---|
| `bench/live.py` | {arenas} live arenas x 4 players, advanced by a `LiveBatch` (one batched kernel call per phase per turn, all 4 x {arenas} players asked in one `asyncio.gather`) and, in the same run, the same arenas ticked one by one (two kernel calls per arena per turn, each arena's 4 players asked together). Case `http`: HTTP players on loopback, responder in a separate process answering after {delay:g} ms; case `builtin`: built-in players only (kernel + host overhead). The first tick (compile, connection set-up) is reported apart. |

Last figures (`{cmd}`; turns timed after the first, {dev}; other jobs were sharing the
machine, load average ~{load:.1f}):

{table}

A "turn" is one turn of all {arenas} arenas. LiveBatch speed-up: **{http:.1f}x** with HTTP
players, **{builtin:.1f}x** with built-in players. Fallbacks in the HTTP case (a player not
answering within `agentTimeout` = 2 s): {fallbacks}.

One by one, the HTTP case cannot beat 100 rounds x 5 ms = 0.5 s of waiting per turn; the
LiveBatch waits 5 ms once and is bound by the host's CPU per request instead.

Where the time goes: with HTTP players both modes pay the host's per-request cost (aiohttp +
asyncio + the observation envelope; "host CPU per decision" is the process's CPU time over
the timed turns divided by the decisions, kernel calls included; the responder runs in
another process) — the LiveBatch overlaps all 4 x {arenas} waits instead of {arenas} rounds
of 4 and makes 2 kernel calls per turn instead of 2 x {arenas}. Each arena pools its own
connections.
"""  # noqa: E501  (a Markdown table row is one line)


if __name__ == "__main__":
    main()
