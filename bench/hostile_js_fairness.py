"""Fair code execution (issue 23): an honest JS player's tick time while other arenas run
hostile code on the same JS worker pool.

One shared ``JsPool`` (2 workers, as on the issue's machine); every arena ticks in its own
thread, back to back, as auto-ticking arenas of the server do. The honest arena: one code
player (the package's example agent) and three builtins. Each hostile arena: four code
players whose ``decide`` runs a native BigInt loop QuickJS cannot interrupt, so every call
overruns its 50 ms and its worker is killed. Prints the honest arena's tick time (median and
p90 over ``TICKS`` ticks) alone and beside 1, 2 and 4 hostile arenas, and the ratio to alone
(the issue's bound: 2x).

    .venv/bin/python bench/hostile_js_fairness.py [--ticks 30] [--json PATH]
"""

from __future__ import annotations

import copy
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from harness import Figures, parser, setup  # noqa: E402
from payloads import SEED_LOGISTIC  # noqa: E402

setup()

from bdpd_jax.host.agents.js_pool import JsPool  # noqa: E402
from bdpd_jax.host.live.arena import Arena  # noqa: E402

HONEST = (ROOT / "bdpd_jax/host/server/web/example_agent.js").read_text()
HOSTILE = "function decide(obs, memory) { let x = 3n; for (;;) x = x * x; }"
TICKS = 30  # per phase; --ticks


def arena(pool: JsPool, codes: list[str], builtins: int, seed: int) -> Arena:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(
        {
            "maxTurns": 10_000,
            "minPlayers": len(codes) + builtins,
            "maxPlayers": len(codes) + builtins,
            "threshold": 0,
            "collapseDie": {"sides": 6, "successThreshold": 0},
        }
    )
    cfg["players"] = [{"strategy": "conservative", "name": f"b{k}"} for k in range(builtins)]
    a = Arena(cfg, seed=seed, executor=pool, fsync=False)
    for k, code in enumerate(codes):
        a.join({"agentType": "code", "name": f"js{k}", "strategyCode": code})
    a.start()
    return a


def measure(pool: JsPool, n_hostile: int) -> list[float]:
    honest = arena(pool, [HONEST], 3, seed=1)
    bad = [arena(pool, [HOSTILE] * 4, 0, seed=10 + k) for k in range(n_hostile)]
    stop = threading.Event()

    def spin(a: Arena) -> None:
        while not stop.is_set() and not a.done:
            a.tick()

    threads = [threading.Thread(target=spin, args=(a,), daemon=True) for a in bad]
    for t in threads:
        t.start()
    time.sleep(0.5 if bad else 0.0)  # the hostile arenas are under way (and penalised, when the pool is fair)
    honest.tick()  # its first tick compiles
    times = []
    for _ in range(TICKS):
        t0 = time.perf_counter()
        honest.tick()
        times.append((time.perf_counter() - t0) * 1000)
    stop.set()
    for t in threads:
        t.join(timeout=30)
    fallbacks = sum(
        d.get("fallback", False) for r in honest.records for d in r["decisions"] if d.get("agentType") == "code"
    )
    print(f"#   honest fallbacks in its last {len(honest.records)} ticks: {fallbacks}; pool kills so far: {pool.kills}")
    for a in (honest, *bad):
        a.close()
    return times


def main() -> None:
    global TICKS
    ap = parser(__doc__)
    ap.add_argument("--ticks", type=int, default=TICKS)
    a = ap.parse_args()
    TICKS = a.ticks
    figs = Figures("hostile_js_fairness", a.json)
    pool = JsPool(2)
    pool.warm()
    solo = None
    print("| hostile arenas | honest tick median (ms) | p90 (ms) | median / alone |")
    print("|---|---|---|---|")
    measure(pool, 0)  # warm-up: the honest game's compile, not measured
    warm = arena(pool, [HOSTILE] * 4, 0, seed=99)
    warm.tick()  # the hostile game's compile, so no phase measures a compile
    warm.close()
    for n in (0, 1, 2, 4, 0):
        t = sorted(measure(pool, n))
        med, p90 = statistics.median(t), t[int(0.9 * (len(t) - 1))]
        solo = solo or med
        print(f"| {n} | {med:.1f} | {p90:.1f} | {med / solo:.2f}x |", flush=True)
        figs.emit(f"hostile_{n}", hostile_arenas=n, ticks=TICKS, median_ms=med, p90_ms=p90, over_alone=med / solo)
    pool.close()


if __name__ == "__main__":
    main()
