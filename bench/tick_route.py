"""What one ``POST /api/arenas/{id}/tick`` costs through the server's app (FastAPI's
``TestClient``, in process): the median and p90 over N ticks of one arena of 4 built-in
players (the tick runs whole in a worker, ``Ticker.step``), and the rendering of its answer
alone, on the same answers: the pydantic way (``Ticked`` validated, dumped to JSON values,
then ``json.dumps``, what a ``response_model`` costs) against one ``orjson`` pass (what the
route now sends), and the SSE ``tick`` event's text (``live.sse``) against the three passes
it made before (``json.dumps``, ``json.loads``, a walk replacing NaN, ``json.dumps``).

    .venv/bin/python bench/tick_route.py [--ticks 200] [--json PATH]
"""

from __future__ import annotations

import copy
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from harness import Figures, parser, setup  # noqa: E402
from payloads import SEED_LOGISTIC  # noqa: E402

setup()

import orjson  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from bdpd_jax.host.server import create_app  # noqa: E402
from bdpd_jax.host.server import models as M  # noqa: E402
from bdpd_jax.host.server.live import sse  # noqa: E402


def body(ticks: int) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(
        maxTurns=ticks + 2,
        regenRate=0.5,
        commonsInitial=1500,
        commonsCapacity=1500,
        threshold=0,
        collapseDie={"sides": 6, "successThreshold": 0},
    )
    cfg["players"] = [{"strategy": s, "name": f"b{k}"} for k, s in enumerate(["conservative"] * 4)]
    return {**cfg, "seed": 3, "turns": ticks + 2}


def nan_to_none(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [nan_to_none(v) for v in obj]
    return obj


def three_passes(rec: dict) -> str:
    """The SSE data as it was rendered before (``plain_json`` then ``json.dumps``)."""
    return json.dumps(nan_to_none(json.loads(json.dumps(rec))), separators=(",", ":"))


def stats(xs: list[float]) -> tuple[float, float]:
    xs = sorted(xs)
    return statistics.median(xs) * 1e3, xs[int(0.9 * (len(xs) - 1))] * 1e3


def per_call(fn, items: list, reps: int = 5) -> list[float]:
    """Seconds per call of ``fn`` on each item (the best of ``reps``)."""
    out = []
    for x in items:
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            fn(x)
            best = min(best, time.perf_counter() - t0)
        out.append(best)
    return out


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--ticks", type=int, default=200)
    args = ap.parse_args()
    figs = Figures("tick_route", args.json)
    with tempfile.TemporaryDirectory() as tmp, TestClient(create_app(tmp, workers=1)) as client:
        made = client.post("/api/arenas", json=body(args.ticks)).json()
        url, owner = f"/api/arenas/{made['arenaId']}", {"X-Owner-Key": made["ownerKey"]}
        client.post(f"{url}/start", headers=owner).raise_for_status()
        t0 = time.perf_counter()
        client.post(f"{url}/tick", headers=owner).raise_for_status()
        first = time.perf_counter() - t0
        whole, answers = [], []
        for _ in range(args.ticks):
            t0 = time.perf_counter()
            r = client.post(f"{url}/tick", headers=owner)
            whole.append(time.perf_counter() - t0)
            r.raise_for_status()
            answers.append(r.json())
    assert all(a["tick"] is not None for a in answers), "the game ended before the last tick"
    ticked = TypeAdapter(M.Ticked)
    cases = {
        "POST /tick (whole request)": whole,
        "answer: Ticked validated + dumped + json.dumps": per_call(
            lambda a: json.dumps(ticked.dump_python(ticked.validate_python(a), mode="json"), allow_nan=False), answers
        ),
        "answer: one orjson pass": per_call(orjson.dumps, answers),
        "SSE tick: three passes (before)": per_call(lambda a: three_passes(a["tick"]), answers),
        "SSE tick: live.sse as it is": per_call(lambda a: sse("tick", a["tick"]), answers),
    }
    print(f"first tick (compiles): {first * 1e3:.0f} ms")
    figs.emit("first_tick", ms=first * 1e3)
    print("| case | n | median (ms) | p90 (ms) |")
    print("|---|---|---|---|")
    for name, xs in cases.items():
        med, p90 = stats(xs)
        print(f"| {name} | {len(xs)} | {med:.3f} | {p90:.3f} |")
        figs.emit(name, n=len(xs), median_ms=med, p90_ms=p90)


if __name__ == "__main__":
    main()
