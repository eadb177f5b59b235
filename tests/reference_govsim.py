"""GovSim's commons in plain Python, written from the definitions of issue 25 (GovSim's code
and paper, Piatti et al. 2024 §2.4), independent of the kernels: the pool, the unit-by-unit
allocation, collapse and regrowth, and the six metrics. Who gets each unit of the allocation
comes from a ``pick`` callable (``uniform_pick(draw)`` is GovSim's draw), so the kernels'
counter-based choices can be fed in; ``allocation_law`` is the allocation's exact law.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

Draw = Callable[[int, int], float]
#: (month, the players still short, units left) -> the player who gets the next unit
Pick = Callable[[int, list[int], int], int]


def uniform_pick(draw: Draw) -> Pick:
    """GovSim's draw: the floor(u * len(open))-th player still short, u = draw(month, k) for
    the month's k-th unit."""
    count: dict[int, int] = {}

    def pick(turn: int, open_: list[int], left: int) -> int:
        k = count.get(turn, 0)
        count[turn] = k + 1
        return open_[min(int(math.floor(draw(turn, k) * len(open_))), len(open_) - 1)]

    return pick


def allocate(requests: Sequence[int], pool: int, pick: Pick | None, turn: int) -> list[int]:
    """Everyone gets their request if the total fits; else units one at a time, each to an
    agent drawn uniformly among those who still want more (``pick``), until the pool is empty."""
    if sum(requests) <= pool:
        return list(requests)
    assert pick is not None
    got = [0] * len(requests)
    left = pool
    while left > 0:
        open_ = [i for i, r in enumerate(requests) if got[i] < r]
        if not open_:
            break
        got[pick(turn, open_, left)] += 1
        left -= 1
    return got


def allocation_law(requests: Sequence[int], pool: int) -> dict[tuple[int, ...], float]:
    """The exact law of GovSim's allocation (small cases): the probability of every final
    catch vector, the process followed unit by unit over all its branches."""
    if sum(requests) <= pool:
        return {tuple(requests): 1.0}
    states: dict[tuple[int, ...], float] = {(0,) * len(requests): 1.0}
    for _ in range(pool):
        nxt: dict[tuple[int, ...], float] = {}
        for got, p in states.items():
            open_ = [i for i, r in enumerate(requests) if got[i] < r]
            for i in open_:
                g = got[:i] + (got[i] + 1,) + got[i + 1 :]
                nxt[g] = nxt.get(g, 0.0) + p / len(open_)
            if not open_:
                nxt[got] = nxt.get(got, 0.0) + p
        states = nxt
    return states


def threshold(pool: int, n: int) -> int:
    """The per-agent sustainability threshold (h // 2) // N of GovSim's doubling pool."""
    return (pool // 2) // n


def run(
    requests: Sequence[Sequence[int]],
    *,
    pool0: int = 100,
    cap: int = 100,
    collapse_below: int = 5,
    pick: Pick | None = None,
) -> dict:
    """Play GovSim months with the given whole-unit requests [T][N]; stop at collapse.
    Returns the per-month pools before harvesting, catches and per-agent thresholds."""
    pool = pool0
    pools, catches, thresholds = [], [], []
    for t, req in enumerate(requests, start=1):
        n = len(req)
        pools.append(pool)
        thresholds.append(threshold(pool, n))
        got = allocate([int(r) for r in req], pool, pick, t)
        catches.append(got)
        left = pool - sum(got)
        if left < collapse_below:
            break
        pool = min(cap, 2 * left)
    return {"pools": pools, "catches": catches, "thresholds": thresholds}


def gini(x: Sequence[float]) -> float:
    n, tot = len(x), sum(x)
    return sum(abs(a - b) for a in x for b in x) / (2 * n * tot)


def metrics(trace: dict, months: int, n: int, f0: float) -> dict:
    """GovSim's metrics of one run (§2.4): survival time m, survived (m == T), each agent's
    gain R_i, the mean gain, efficiency min(1, sum R / (T f0)), equality 1 - Gini (NaN at
    0/0) and over-usage: catches above the month's per-agent threshold over N m."""
    m = len(trace["catches"])
    gains = [sum(c[i] for c in trace["catches"]) for i in range(n)]
    total = sum(gains)
    over = sum(1 for c, th in zip(trace["catches"], trace["thresholds"], strict=True) for x in c if x > th)
    return {
        "govsim_survival_time": m,
        "govsim_survived": m == months,
        "govsim_total_gain": float(total),
        "govsim_gain": total / n,
        "govsim_efficiency": min(1.0, total / (months * f0)),
        "govsim_equality": 1.0 - gini(gains) if total > 0 else float("nan"),
        "govsim_over_usage": over / (n * m),
        "gains": gains,
    }
