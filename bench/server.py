"""The live server under load (issue 13): ``bdpd serve`` in its own process, measured from here.

* ``/api/health`` p50 / p99 and the round trip of a manual ``POST /tick`` on a probe arena,
  while N arenas (4 built-in players each) auto-tick every 20 ms (N = 1, 20, 100), and while 20 auto-tick
  and a new arena compiles its first tick;
* SSE fan-out: C clients on one auto-ticking arena: every tick received once, in order, and
  the spread between the first and the last client receiving a tick;
* server memory (RSS) per live arena, and what closing them gives back;
* ``--many N`` (issue 16 item 4): N served arenas x 4 built-in players auto-ticking, total
  arena-turns/s and ``/api/health`` p50 / p99 while they run, with the server's grouped ticks
  (one batched kernel call per phase per tick for every arena of a compiled game) and with
  ``--no-group-ticks`` (each arena ticked alone), one server after the other in one run.

Run: ``.venv/bin/python bench/server.py [--quick]``.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

AUTO_MS = 20.0  # the auto-tick interval of the loaded arenas
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from harness import Figures, parser  # noqa: E402  (bench/ is on a bench script's path)
from payloads import SEED_LOGISTIC  # noqa: E402


def _payload(turns: int, players=("conservative", "aggressive", "adaptive", "random")) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    # no collapse
    cfg["model"].update(maxTurns=turns, commonsCapacity=1e12, commonsInitial=1e12, minPlayers=2, maxPlayers=8)
    cfg["players"] = [{"strategy": s} for s in players]
    return cfg


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads)."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def _pct(xs, q) -> float:
    return float(np.percentile(np.asarray(xs) * 1000, q))


class Server:
    def __init__(self, root: Path, extra: list[str] = ()) -> None:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bdpd_jax", "serve", "--port", str(self.port), "--arenas", str(root), *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.base = f"http://127.0.0.1:{self.port}"
        self.owners: dict[str, dict] = {}
        self.client = httpx.Client(base_url=self.base, timeout=300, trust_env=False)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                self.client.get("/api/health")
                return
            except httpx.TransportError:
                time.sleep(0.2)
        raise RuntimeError("server did not start")

    def create(self, cfg, start: str | None = "auto", interval: float = AUTO_MS) -> tuple[str, dict]:
        r = self.client.post("/api/arenas", json={**cfg, "seed": 1})
        assert r.status_code == 200, r.text
        c = r.json()
        owner = {"X-Owner-Key": c["ownerKey"]}
        self.owners[c["arenaId"]] = owner
        if start:
            r = self.client.post(
                f"/api/arenas/{c['arenaId']}/start", headers=owner, json={"tickMode": start, "tickIntervalMs": interval}
            )
            assert r.status_code == 200, r.text
        return c["arenaId"], c

    def health(self, n: int, gap: float = 0.01) -> list[float]:
        out = []
        for _ in range(n):
            t0 = time.perf_counter()
            self.client.get("/api/health")
            out.append(time.perf_counter() - t0)
            time.sleep(gap)
        return out

    def close_all(self) -> None:
        """Close every arena this bench created (auto ticks stop; they leave memory)."""
        for aid, owner in self.owners.items():
            self.client.delete(f"/api/arenas/{aid}", headers=owner)
        self.owners.clear()

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(timeout=30)


def load(srv: Server, n: int, samples: int) -> dict:
    ids = [srv.create(_payload(100_000))[0] for _ in range(n)]
    probe, c = srv.create(_payload(100_000), start="manual")
    owner = {"X-Owner-Key": c["ownerKey"]}
    srv.client.post(f"/api/arenas/{probe}/tick", headers=owner)  # warm
    time.sleep(1.0)
    t_before = {a["arenaId"]: a["turn"] for a in srv.client.get("/api/arenas").json()["arenas"]}
    t0 = time.perf_counter()
    health = srv.health(samples)
    ticks = []
    for _ in range(max(10, samples // 10)):
        t = time.perf_counter()
        srv.client.post(f"/api/arenas/{probe}/tick", headers=owner)
        ticks.append(time.perf_counter() - t)
    wall = time.perf_counter() - t0
    after = {a["arenaId"]: a["turn"] for a in srv.client.get("/api/arenas").json()["arenas"]}
    rate = sum(after.get(i, t_before[i]) - t_before[i] for i in ids) / wall
    rss = _rss_mb(srv.proc.pid)
    return {
        "n": n,
        "health_p50_ms": _pct(health, 50),
        "health_p99_ms": _pct(health, 99),
        "tick_p50_ms": _pct(ticks, 50),
        "tick_p99_ms": _pct(ticks, 99),
        "auto_turns_per_s": rate,
        "rss_mb": rss,
        "ids": ids + [probe],
    }


def compile_while_loaded(srv: Server, samples: int) -> dict:
    """20 arenas auto-tick; a new game shape (5 players) compiles its first tick meanwhile."""
    ids = [srv.create(_payload(100_000))[0] for _ in range(20)]
    time.sleep(1.0)
    aid, c = srv.create(_payload(50, ("conservative",) * 2 + ("random",) * 3), start="manual")
    done = []

    def first_tick():
        t = time.perf_counter()
        httpx.post(f"{srv.base}/api/arenas/{aid}/tick", headers={"X-Owner-Key": c["ownerKey"]}, timeout=300)
        done.append(time.perf_counter() - t)

    import threading

    th = threading.Thread(target=first_tick)
    th.start()
    health = []
    while not done:
        health += srv.health(1, gap=0.005)
    th.join()
    return {
        "compile_tick_s": done[0],
        "health_samples": len(health),
        "health_p50_ms": _pct(health, 50),
        "health_p99_ms": _pct(health, 99),
        "health_max_ms": max(health) * 1000,
        "ids": ids + [aid],
    }


def fanout(srv: Server, clients: int, turns: int) -> dict:
    aid, c = srv.create(_payload(turns), start=None)
    spec = {"X-Spectator-Token": c["spectatorToken"]}
    arrivals: list[dict[int, float]] = []

    async def listen(ready):
        got: dict[int, float] = {}
        async with (
            httpx.AsyncClient(base_url=srv.base, timeout=300, trust_env=False) as ac,
            ac.stream("GET", f"/api/arenas/{aid}/stream", headers=spec) as s,
        ):
            ev = None
            async for line in s.aiter_lines():
                if line.startswith("event: "):
                    ev = line[7:]
                    if ev == "init":
                        ready[0] += 1
                elif line.startswith("data: ") and ev == "tick":
                    turn = json.loads(line[6:])["turn"]
                    assert turn not in got
                    got[turn] = time.perf_counter()
        arrivals.append(got)

    async def main():
        ready = [0]
        tasks = [asyncio.create_task(listen(ready)) for _ in range(clients)]
        while ready[0] < clients:
            await asyncio.sleep(0.05)
        async with httpx.AsyncClient(base_url=srv.base, timeout=300, trust_env=False) as ac:
            await ac.post(
                f"/api/arenas/{aid}/start",
                headers={"X-Owner-Key": c["ownerKey"]},
                json={"tickMode": "auto", "tickIntervalMs": 20},
            )
        t0 = time.perf_counter()
        await asyncio.gather(*tasks)
        return time.perf_counter() - t0

    wall = asyncio.run(main())
    played = max(len(a) for a in arrivals)
    complete = sum(sorted(a) == list(range(1, played + 1)) for a in arrivals)
    spread = [max(a[t] for a in arrivals) - min(a[t] for a in arrivals) for t in range(1, played + 1)]
    return {
        "clients": clients,
        "turns": played,
        "complete_in_order": complete,
        "wall_s": wall,
        "spread_p50_ms": _pct(spread, 50),
        "spread_p99_ms": _pct(spread, 99),
    }


def memory(srv: Server, n: int) -> dict:
    base = _rss_mb(srv.proc.pid)
    made = [srv.create(_payload(100_000), start="manual") for _ in range(n)]
    for aid, c in made:
        srv.client.post(f"/api/arenas/{aid}/tick", headers={"X-Owner-Key": c["ownerKey"]})
    live = _rss_mb(srv.proc.pid)
    for aid, c in made:
        srv.client.post(f"/api/arenas/{aid}/close", headers={"X-Owner-Key": c["ownerKey"]})
        srv.owners.pop(aid, None)
    closed = _rss_mb(srv.proc.pid)
    return {
        "arenas": n,
        "rss_base_mb": base,
        "rss_live_mb": live,
        "per_arena_kb": (live - base) * 1024 / n,
        "rss_after_close_mb": closed,
    }


def many(srv: Server, n: int, window_s: float, interval_ms: float = AUTO_MS) -> dict:
    """N arenas auto-ticking every ``interval_ms``; once every one has ticked (compiles done),
    /api/health probed back to back (10 ms apart) for ``window_s`` while the turns are counted."""
    from concurrent.futures import ThreadPoolExecutor

    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()

    def start(aid):
        r = srv.client.post(
            f"/api/arenas/{aid}/start",
            headers=srv.owners[aid],
            json={"tickMode": "auto", "tickIntervalMs": interval_ms},
        )
        assert r.status_code == 200, r.text

    with ThreadPoolExecutor(8) as ex:  # all created, then all started, in parallel (each writes files)
        ids = list(ex.map(lambda _: srv.create(_payload(100_000), start=None)[0], range(n)))
        list(ex.map(start, ids))
    created = time.perf_counter() - t0
    deadline = time.monotonic() + 300
    while True:
        turns = {a["arenaId"]: a["turn"] for a in srv.client.get("/api/arenas").json()["arenas"]}
        if all(turns.get(i, 0) >= 2 for i in ids) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    warm = time.perf_counter() - t0 - created
    turns = {a["arenaId"]: a["turn"] for a in srv.client.get("/api/arenas").json()["arenas"]}
    t1, cpu1 = time.perf_counter(), _cpu_s(srv.proc.pid)
    health = []
    while time.perf_counter() - t1 < window_s:
        health += srv.health(1)
    after = {a["arenaId"]: a["turn"] for a in srv.client.get("/api/arenas").json()["arenas"]}
    wall, cpu = time.perf_counter() - t1, _cpu_s(srv.proc.pid) - cpu1
    played = sum(after.get(i, turns[i]) - turns[i] for i in ids)
    return {
        "n": n,
        "create_s": created,
        "warm_s": warm,
        "window_s": wall,
        "arena_turns": played,
        "arena_turns_per_s": played / wall,
        "server_cpu_s": cpu,
        "cpu_ms_per_arena_turn": 1000 * cpu / max(played, 1),
        "health_n": len(health),
        "health_p50_ms": _pct(health, 50),
        "health_p99_ms": _pct(health, 99),
        "health_max_ms": max(health) * 1000,
        "rss_mb": _rss_mb(srv.proc.pid),
        "load_before": load0,
        "load_after": os.getloadavg()[0],
    }


def group_tick_profile(n: int, ticks: int = 10) -> None:
    """In-process, no server: what one group tick of ``n`` such arenas costs (regrouped at the
    ticker's width, turns.jsonl written, one syncfs, the GC freeze), then a cProfile of 5."""
    import cProfile
    import pstats

    from bdpd_jax.host.live.arena import Arena
    from bdpd_jax.host.live.live_batch import freeze_history
    from bdpd_jax.host.server.durable import sync_files
    from bdpd_jax.host.server.ticker import batch_width

    with tempfile.TemporaryDirectory() as tmp:
        arenas = [Arena(copy.deepcopy(_payload(100_000)), seed=k, out_dir=f"{tmp}/{k}", fsync=False) for k in range(n)]
        for a in arenas:
            a.start()
        batch = Arena.regroup(arenas, batch_width(n))
        loop = asyncio.new_event_loop()
        paths = [a.out_dir / "turns.jsonl" for a in arenas]

        def one():
            loop.run_until_complete(batch.tick())
            sync_files(paths)
            freeze_history()

        for _ in range(3):
            one()
        t, c = time.perf_counter(), time.process_time()
        for _ in range(ticks):
            one()
        print(
            f"group tick of {n}: wall {(time.perf_counter() - t) / ticks * 1e3:.1f} ms, "
            f"CPU {(time.process_time() - c) / ticks * 1e3:.1f} ms"
        )
        pr = cProfile.Profile()
        pr.runcall(lambda: [one() for _ in range(5)])
        pstats.Stats(pr).sort_stats("cumulative").print_stats(20)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--quick", action="store_true", help="N = 1, 20 only; 50 SSE clients")
    ap.add_argument("--n", type=int, nargs="*", help="only these N (no compile, fan-out, memory parts)")
    ap.add_argument("--serve", default="", help="extra `bdpd serve` options, e.g. '--workers 2'")
    ap.add_argument("--many", type=int, help="N arenas auto-ticking, grouped vs --no-group-ticks (only this)")
    ap.add_argument("--window", type=float, default=15.0, help="--many: seconds measured")
    ap.add_argument("--only", choices=("grouped", "alone"), help="--many: one of the two servers")
    ap.add_argument("--group-profile", type=int, help="in-process profile of one group tick of N arenas (only this)")
    ap.add_argument(
        "--alone-n",
        type=int,
        help="--many: arenas of the --no-group-ticks server (default N; its "
        "arena-turns/s do not grow with N, and starting 1 000 of them takes minutes)",
    )
    args = ap.parse_args()
    out = Figures("server", args.json)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    if args.group_profile:
        group_tick_profile(args.group_profile)
        return
    if args.many:
        modes = {"grouped": ["--group-ticks"], "alone": ["--no-group-ticks"]}
        for opts in [v for k, v in modes.items() if args.only in (None, k)]:
            with tempfile.TemporaryDirectory() as tmp:
                srv = Server(Path(tmp), [*args.serve.split(), *opts])
                try:
                    n = args.alone_n if args.alone_n and "--no-group-ticks" in opts else args.many
                    r = many(srv, n, args.window)
                    print(
                        " ".join(opts),
                        json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()}),
                        flush=True,
                    )
                    out.emit("many", options=" ".join(opts), arenas=n, **r)
                finally:
                    srv.stop()
        return
    with tempfile.TemporaryDirectory() as tmp:
        srv = Server(Path(tmp), args.serve.split())
        print("serve options:", args.serve or "(defaults)")
        try:
            if args.n:
                for n in args.n:
                    r = load(srv, n, samples=300)
                    print(
                        json.dumps(
                            {k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items() if k != "ids"}
                        )
                    )
                    out.emit("load", arenas=n, **{k: v for k, v in r.items() if k != "ids"})
                    srv.close_all()
                return
            warm, c = srv.create(_payload(3), start="manual")  # import and first compile out of the way
            srv.client.post(f"/api/arenas/{warm}/tick", headers={"X-Owner-Key": c["ownerKey"]})
            r = memory(srv, 200)  # first, on a fresh heap
            print("memory", json.dumps({k: round(v, 1) for k, v in r.items()}))
            out.emit("memory", **r)
            for n in (1, 20) if args.quick else (1, 20, 100):
                r = load(srv, n, samples=300)
                print(json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items() if k != "ids"}))
                out.emit("load", arenas=n, **{k: v for k, v in r.items() if k != "ids"})
                srv.close_all()
            r = compile_while_loaded(srv, 300)
            print(
                "compile under load",
                json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items() if k != "ids"}),
            )
            out.emit("compile_under_load", **{k: v for k, v in r.items() if k != "ids"})
            srv.close_all()
            r = fanout(srv, 50 if args.quick else 200, 30)
            print("fan-out", json.dumps({k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items()}))
            out.emit("fanout", **r)
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
