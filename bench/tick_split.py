"""Where a live tick's time goes between its waits: the kernel pieces a tick hands to its
``offload`` (bdpd_jax/host/live/sync_loop.py), timed one by one, against the cost of one hop to a
worker thread (``run_in_executor``, as the server's ``Workers.offload`` makes).

One arena alone (as the server ticks an arena with external players): 2 conservative
builtins and 1 scripted player that uses three tools every turn (a broadcast, an
announcement, a pledge: the pact kernels run), so the envelopes, the tool dispatch and the
records do their full work; the scripted player answers at once, so no network is timed.
Prints the first tick (it compiles) and the median and p90 of each piece over the later
ticks; the rest of the tick (envelopes, the players asked) runs on the loop. docs/semantics/
live/arena.md "One event loop" says what the server chose from these figures.

    .venv/bin/python bench/tick_split.py [--ticks 200] [--json PATH]
"""

from __future__ import annotations

import asyncio
import copy
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from harness import Figures, parser, setup  # noqa: E402
from payloads import SEED_LOGISTIC  # noqa: E402

setup()

from bdpd_jax.host.live.arena import Arena  # noqa: E402

TOOLS = [
    {"tool": "broadcast", "text": "hello"},
    {"tool": "announce_intended_harvest", "value": 1.25},
    {"tool": "pledge", "maxHarvest": 2.0},
]


def arena(out_dir: str, ticks: int) -> Arena:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(minPlayers=3, maxPlayers=3, threshold=0, collapseDie={"sides": 6, "successThreshold": 0})
    cfg["players"] = [{"strategy": "conservative", "name": f"b{k}"} for k in range(2)]
    a = Arena(cfg, seed=1, out_dir=out_dir, fsync=False, turns=ticks + 1)
    a.join({"agentType": "scripted", "name": "s", "script": [{"harvest": 0.5, "actions": TOOLS}]})
    a.start()
    return a


async def measure(ticks: int) -> tuple[float, dict[str, list[float]], list[float]]:
    pieces: dict[str, list[float]] = {}

    async def timed(fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        pieces.setdefault(getattr(fn, "__name__", "?").lstrip("_"), []).append(time.perf_counter() - t0)
        return out

    with tempfile.TemporaryDirectory() as tmp:
        a = arena(tmp, ticks)
        t0 = time.perf_counter()
        await a.atick(timed)
        first = time.perf_counter() - t0
        pieces.clear()
        whole = []
        for _ in range(ticks):
            t0 = time.perf_counter()
            await a.atick(timed)
            whole.append(time.perf_counter() - t0)
        a.close()
    return first, pieces, whole


async def hop_seconds(n: int = 2000) -> float:
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(2) as ex:
        t0 = time.perf_counter()
        for _ in range(n):
            await loop.run_in_executor(ex, int)
        return (time.perf_counter() - t0) / n


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--ticks", type=int, default=200)
    args = ap.parse_args()
    figs = Figures("tick_split", args.json)
    first, pieces, whole = asyncio.run(measure(args.ticks))
    hop = asyncio.run(hop_seconds())
    print(f"first tick (compiles): {first * 1e3:.0f} ms; one run_in_executor hop: {hop * 1e3:.3f} ms")
    figs.emit("first_tick", ms=first * 1e3)
    figs.emit("hop", ms=hop * 1e3)
    print("| piece (offloaded) | calls | median (ms) | p90 (ms) |")
    print("|---|---|---|---|")
    n = min(len(xs) for xs in pieces.values())
    on_loop = [w - sum(xs[k] for xs in pieces.values()) for k, w in enumerate(whole[:n])]
    rows = [*pieces.items(), ("on the loop (the rest of the tick)", on_loop), ("whole tick", whole)]
    for name, xs in rows:
        xs = sorted(xs)
        med, p90 = statistics.median(xs), xs[int(0.9 * (len(xs) - 1))]
        print(f"| {name} | {len(xs)} | {med * 1e3:.3f} | {p90 * 1e3:.3f} |")
        figs.emit(name, calls=len(xs), median_ms=med * 1e3, p90_ms=p90 * 1e3)


if __name__ == "__main__":
    main()
