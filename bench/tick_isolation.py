"""An arena's tick never waits on another arena's players (issue 35): the worst manual tick of
an honest code arena B and of a built-ins-only arena C, alone and beside an arena A whose 12
code players run native BigInt loops (killed at their 50 ms deadline every tick), on one
served process (uvicorn in a thread, the server's own JS pool and workers).

B: one code player (the package's example agent) and three builtins; C: four builtins. Each
phase ticks B and C back to back (POST /tick, one client thread each) for ``--seconds``; A
auto-ticks (interval 0) in the second phase only. Prints the median, p99 and worst tick (ms)
of B and C per phase, B's code fallbacks, and ``--trace``: the kernel-slot holders (the
server's ``--workers`` slots) that held one longer than 20 ms beside A.

    .venv/bin/python bench/tick_isolation.py [--seconds 15] [--trace] [--json PATH]
"""

from __future__ import annotations

import copy
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "host")]

from harness import Figures, parser, setup  # noqa: E402
from payloads import SEED_LOGISTIC  # noqa: E402

setup()

import httpx  # noqa: E402
from server_helpers import keys_of, serve  # noqa: E402

HONEST = (ROOT / "bdpd_jax/host/server/web/example_agent.js").read_text()
HOSTILE = "function decide(obs, memory) { let x = 3n; for (;;) x = x * x; }"


def body(codes: int, builtins: int, seed: int) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    n = codes + builtins
    cfg["model"].update(
        maxTurns=100_000,
        minPlayers=n,
        maxPlayers=n,
        threshold=0,
        useHiddenReserve=False,
        commonsCapacity=1e12,
        commonsInitial=1e12,
    )  # no collapse: no arena ends within the run
    cfg["players"] = [{"strategy": "conservative", "name": f"b{k}"} for k in range(builtins)]
    return {**cfg, "seed": seed, "agentTimeout": 1000}


def make(http: httpx.Client, codes: list[str], builtins: int, seed: int) -> tuple[str, dict]:
    c = http.post("/api/arenas", json=body(len(codes), builtins, seed)).json()
    aid, (owner, akey, _) = c["arenaId"], keys_of(c)
    for k, code in enumerate(codes):
        r = http.post(
            f"/api/arenas/{aid}/join", headers=akey, json={"agentType": "code", "name": f"js{k}", "strategyCode": code}
        )
        r.raise_for_status()
    http.post(f"/api/arenas/{aid}/start", headers=owner).raise_for_status()
    http.post(f"/api/arenas/{aid}/tick", headers=owner).raise_for_status()  # its compile, not measured
    return aid, owner


def ticks(base: str, aid: str, owner: dict, seconds: float, out: list[float], fallbacks: list[int]) -> None:
    with httpx.Client(base_url=base, timeout=60, trust_env=False) as http:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t0 = time.perf_counter()
            r = http.post(f"/api/arenas/{aid}/tick", headers=owner)
            out.append((time.perf_counter() - t0) * 1000)
            if r.status_code != 200:
                print(f"# tick of {aid}: {r.status_code} {r.text[:300]}", flush=True)
                return
            rec = r.json()["tick"]
            fallbacks.append(sum(bool(d.get("fallback")) for d in rec["decisions"] if d.get("agentType") == "code"))


def phase(base: str, arenas: dict, seconds: float) -> dict[str, tuple[list[float], int]]:
    got: dict[str, tuple[list[float], list[int]]] = {k: ([], []) for k in arenas}
    threads = [
        threading.Thread(target=ticks, args=(base, aid, owner, seconds, *got[k]), daemon=True)
        for k, (aid, owner) in arenas.items()
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {k: (v[0], sum(v[1])) for k, v in got.items()}


def traced(log: list[tuple[str, float]]) -> None:
    """Log every piece of kernel work that held a kernel slot (``Workers.cpu``) longer than
    20 ms, by function: every server made from now on runs its pieces through a timed wrapper."""
    from bdpd_jax.host.server import live

    offload, run = live.Workers.offload, live.LiveArena.run

    def timed(fn):
        def call(*args):
            t0 = time.perf_counter()
            try:
                return fn(*args)
            finally:
                held = (time.perf_counter() - t0) * 1000
                if held > 20:
                    log.append((getattr(fn, "__qualname__", repr(fn)), round(held, 1)))

        return call

    async def timed_offload(self, fn, *args):
        return await offload(self, timed(fn), *args)

    async def timed_run(self, fn, *args):
        return await run(self, timed(fn), *args)

    live.Workers.offload = timed_offload
    live.LiveArena.run = timed_run


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--trace", action="store_true")
    a = ap.parse_args()
    figs = Figures("tick_isolation", a.json)
    log: list[tuple[str, float]] = []
    if a.trace:
        traced(log)
    with (
        tempfile.TemporaryDirectory() as root,
        serve(Path(root)) as base,
        httpx.Client(base_url=base, timeout=60, trust_env=False) as http,
    ):
        if True:
            bc = {"B": make(http, [HONEST], 3, 1), "C": make(http, [], 4, 2)}
            alone = phase(base, bc, a.seconds)
            aid, owner = make(http, [HOSTILE] * 12, 0, 3)
            log.clear()  # the holds beside A only
            http.post(f"/api/arenas/{aid}/mode", headers=owner, json={"tickMode": "auto", "tickIntervalMs": 0})
            time.sleep(1.0)  # A under way (and penalised by the JS pool)
            beside = phase(base, bc, a.seconds)
            http.post(f"/api/arenas/{aid}/close", headers=owner)
    print("| arena | phase | ticks | median (ms) | p99 (ms) | worst (ms) | code fallbacks |")
    print("|---|---|---|---|---|---|---|")
    for name in ("B", "C"):
        for label, res in (("alone", alone), ("beside A", beside)):
            t, fb = res[name]
            s = sorted(t)
            med, p99, worst = statistics.median(s), s[int(0.99 * (len(s) - 1))], s[-1]
            print(f"| {name} | {label} | {len(s)} | {med:.1f} | {p99:.1f} | {worst:.1f} | {fb} |", flush=True)
            figs.emit(f"{name} {label}", ticks=len(s), median_ms=med, p99_ms=p99, worst_ms=worst, fallbacks=fb)
    if log:
        print("# kernel work > 20 ms beside A:", sorted(log, key=lambda x: -x[1])[:12])


if __name__ == "__main__":
    main()
