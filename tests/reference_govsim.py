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
    agents: int | None = None,
    join_after: int | None = None,
    first_threshold: int = 10,
) -> dict:
    """Play GovSim months with the given whole-unit requests [T][N]; stop at collapse.

    As GovSim's environment code runs them (concurrent_env.py, perturbation_env.py): the
    first ``agents`` columns act from month 1 (its config's num_agents; default all), the
    rest are inserted once ``join_after`` months are done (insert_outsider); before that
    their requests are not asked. Month 1's threshold is reset()'s literal 10; later months'
    is (pool // 2) // num_agents with the configured count, never updated by the insertion.
    Returns per month the pool before harvesting, the catches [N] (0 for an agent not yet
    inserted), the per-agent threshold and the agents present; and whether it collapsed."""
    n_all = len(requests[0]) if requests else 0
    n0 = n_all if agents is None else agents
    pool, th = pool0, first_threshold
    pools, catches, thresholds, present, collapsed = [], [], [], [], False
    for t, req in enumerate(requests, start=1):
        here = n_all if join_after is not None and t > join_after else n0
        pools.append(pool)
        thresholds.append(th)
        present.append(here)
        got = allocate([int(r) for r in req[:here]], pool, pick, t)
        catches.append(got + [0] * (n_all - here))
        left = pool - sum(got)
        if left < collapse_below:
            collapsed = True
            break
        pool = min(cap, 2 * left)
        th = threshold(pool, n0)
    return {"pools": pools, "catches": catches, "thresholds": thresholds, "present": present, "collapsed": collapsed}


def gini(x: Sequence[float]) -> float:
    n, tot = len(x), sum(x)
    return sum(abs(a - b) for a in x for b in x) / (2 * n * tot)


def metrics(trace: dict, months: int, n: int, f0: float, horizon: int | None = None) -> dict:
    """GovSim's metrics of one run (§2.4) as its analysis code reads a log: survival time m
    (the collapse month; ``horizon``, its analysis's 12, for a run that never collapses;
    default the run's length), survived (no collapse before month ``horizon``: the
    Kaplan-Meier estimate at 12 censors a collapse in month 12), each agent's gain R_i, the
    mean gain over the agents present in the log, efficiency min(1, sum R / (T f0)),
    equality 1 - Gini over the agents present (NaN at 0/0) and over-usage: their catches
    above the month's per-agent threshold over the agent-months in the log."""
    h = months if horizon is None else horizon
    m = len(trace["catches"])
    present = trace.get("present", [n] * m)
    here = max(present) if present else n
    gains = [sum(c[i] for c in trace["catches"]) for i in range(n)]
    total = sum(gains)
    over = sum(
        1 for c, th, k in zip(trace["catches"], trace["thresholds"], present, strict=True) for x in c[:k] if x > th
    )
    return {
        "govsim_survival_time": m if trace.get("collapsed", m < months) else min(h, m),
        "govsim_survived": (not trace.get("collapsed", m < months)) or m >= h,
        "govsim_total_gain": float(total),
        "govsim_gain": total / here,
        "govsim_efficiency": min(1.0, total / (months * f0)),
        "govsim_equality": 1.0 - gini(gains[:here]) if total > 0 else float("nan"),
        "govsim_over_usage": over / sum(present),
        "gains": gains,
    }
