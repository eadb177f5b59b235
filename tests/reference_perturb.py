"""Plain-Python reference of the perturbation engine (Table A.1) and of the sequential and
wealth-weighted schedulers, extending tests/reference.py. Shares no code with kernels/:
written from docs/semantics.md §10."""

from __future__ import annotations

import math

from reference import RefArena, capacity


def gini(w: list[float]) -> float:
    n, tot = len(w), sum(max(x, 0.0) for x in w)
    if tot <= 0:
        return 0.0
    return sum(abs(a - b) for a in w for b in w) / (2 * n * tot)


class RefPerturbArena(RefArena):
    """RefArena plus perturbation specs (dicts in the config's JSON form), fired by ``begin``."""

    def __init__(self, model, observability, players, specs):
        super().__init__(dict(model), {k: dict(v) for k, v in observability.items()}, [dict(p) for p in players])
        self.specs = specs
        self.fired = [False] * len(specs)
        self.log: list[tuple] = []

    def trigger_value(self, var: str) -> float:
        K = self.m["commonsCapacity"]
        return {
            "commonsStock": self.stock,
            "commonsRatio": self.stock / K,
            "regenRate": self.m["regenRate"],
            "giniWealth": gini(self.wealth),
            "meanWealth": sum(self.wealth) / self.n,
            "minWealth": min(self.wealth),
            "totalHarvest": sum(self.last_actual),
        }[var]

    def due(self, spec, turn: int) -> bool:
        t = spec["trigger"]
        if t["kind"] == "turn":
            return t["turn"] == turn
        if t["kind"] == "threshold":
            x, v = self.trigger_value(t["variable"]), t["value"]
            return {"<": x < v, "<=": x <= v, ">": x > v, ">=": x >= v}[t["op"]]
        return False

    def begin(self):
        """Start of turn: evaluate every trigger on the current state, then apply in order."""
        if self.over:
            return
        turn = self.turn + 1
        due = [not f and self.due(s, turn) for s, f in zip(self.specs, self.fired, strict=True)]
        for i, (s, d) in enumerate(zip(self.specs, due, strict=True)):
            if d:
                self.fired[i] = True
                self.log.append((turn, s["id"], self.apply(s)))

    def apply(self, spec) -> float:
        ty, p = spec["type"], spec["payload"]
        if ty == "regen_shock":
            self.m["regenRate"] = max(self.m["regenRate"] * p["factor"], 0.0)
            return self.m["regenRate"]
        if ty == "regen_set":
            self.m["regenRate"] = p["value"]
            return p["value"]
        if ty == "capacity_shock":
            self.m["commonsCapacity"] *= p["factor"]
            return self.m["commonsCapacity"]
        if ty == "threshold_shift":
            self.m["threshold"] = max(self.m["threshold"] + p["delta"], 0.0) if "delta" in p else p["value"]
            return self.m["threshold"]
        if ty == "commons_shock":
            self.stock = max(self.stock + p["amount"], 0.0)
            return self.stock
        who = range(self.n) if p.get("player") is None else [p["player"]]
        if ty == "wealth_shock":
            for i in who:
                w = self.wealth[i]
                self.wealth[i] = max(w * p["factor"] if "factor" in p else w + p["amount"], 0.0)
            return sum(self.wealth[i] for i in who)
        if ty == "strategy_override":
            for i in who:
                self.players[i]["strategy"] = p["strategy"]
            return math.nan
        if ty == "observability_flip":
            name = p["variable"]
            spec = self._spec(name)
            vis = (not spec["visible"]) if p.get("visible") is None else p["visible"]
            self.obs_cfg[name] = {**spec, "visible": vis}
            return float(vis)
        raise ValueError(ty)


def serve_sequential(stock: float, requests_in_order: list[float]) -> list[float]:
    """No reserve: each player takes min(request, what its predecessors left)."""
    out = []
    for r in requests_in_order:
        take = min(r, stock)
        stock -= take
        out.append(take)
    return out


def water_fill(requests: list[float], wealth: list[float], delivered: float) -> list[float]:
    """min(r_i, lam c_i), sum = delivered, c_i = capacity(w_i); bisection on lam (reference)."""
    if sum(requests) <= delivered:
        return list(requests)
    c = [capacity(max(w, 0.0)) for w in wealth]
    lo, hi = 0.0, max(r / ci for r, ci in zip(requests, c, strict=True)) + 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if sum(min(r, mid * ci) for r, ci in zip(requests, c, strict=True)) > delivered:
            hi = mid
        else:
            lo = mid
    return [min(r, lo * ci) for r, ci in zip(requests, c, strict=True)]
