"""Plain-Python reference of one logistic arena, written from the seed text (004_* A.1-A.3)
and docs/semantics.md. Shares no code with kernels/: it is what the kernels must match.

Random numbers are not generated here; the caller feeds the same draws the kernels use
(observation noise z per variable, a policy uniform per player, the die sequence).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

OWN_DEFAULT_VISIBLE = {"myWealth", "myCapacity", "turn"}


def capacity(w: float) -> float:
    return 1 + 0.05 * w


def die_rolls(successes: float) -> Iterator[bool]:
    """A die sequence given as 'successes before the first failure' (True = success)."""
    k = 0
    while True:
        yield k < successes
        k += 1


class RefArena:
    def __init__(self, model: dict, observability: dict, players: list[dict]):
        self.m = model
        self.obs_cfg = observability
        self.players = players
        self.n = len(players)
        self.stock = float(model["commonsInitial"])
        self.reserve = float(model["hiddenReserveInitial"]) if model["useHiddenReserve"] else 0.0
        self.wealth = [float(p.get("privateResource", 30.0)) for p in players]
        self.last_actual = [0.0] * self.n
        self.turn = 0
        self.collapsed = False
        self.collapse_turn = 0
        self.memory = [{} for _ in players]
        self.prev_env = self.env()

    # --- observation -------------------------------------------------------------------
    def env(self) -> dict:
        return {name: read(self) for name, read in ENV.items()}

    def _spec(self, name):
        spec = self.obs_cfg.get(name)
        if spec is None:
            return {"visible": name in OWN_DEFAULT_VISIBLE, "noise": 0.0, "resolution": "exact"}
        return {
            "visible": spec.get("visible", True),
            "noise": spec.get("noise", 0.0),
            "resolution": spec.get("resolution", "exact"),
        }

    def observe(self, i: int, z: dict) -> dict:
        """z: name -> standard normal (list for othersWealth/othersHarvest)."""
        out = {}
        env = self.env()
        for name in ENV:
            spec = self._spec(name)
            v = env[name]
            err = spec["noise"] * abs(v) * z[name]
            noisy = max(v + err, 0.0)
            if spec["resolution"] == "qualitative":
                scale = self.m["commonsCapacity"] if name != "commonsRatio" else 1.0
                q = noisy / scale
                noisy = scale * (0.2 if q <= 0.4 else 0.5 if q <= 0.6 else 0.8)
            elif spec["resolution"] == "sign":
                d = v - self.prev_env[name] + err  # the true change, then noised; 0 on turn 1
                noisy = float(int(d > 0) - int(d < 0)) if self.turn > 0 else 0.0
            out[name] = noisy if spec["visible"] else math.nan
        w = self.wealth[i]
        for name, v in (("myWealth", w), ("myCapacity", capacity(w))):
            spec = self._spec(name)
            out[name] = max(v + spec["noise"] * abs(v) * z[name], 0.0) if spec["visible"] else math.nan
        for name, vals in (("othersWealth", self.wealth), ("othersHarvest", self.last_actual)):
            spec = self._spec(name)
            out[name] = [
                max(v + spec["noise"] * abs(v) * z[name][j], 0.0)
                if spec["visible"] and j != i and (name != "othersHarvest" or self.turn > 0)
                else math.nan
                for j, v in enumerate(vals)
            ]
        return out

    # --- built-in heuristics (Table A.3) ------------------------------------------------
    def decide(self, i: int, obs: dict, u: float) -> float:
        p = self.players[i]
        strat = p["strategy"]
        cap = capacity(self.wealth[i])
        s = obs["commonsStock"]
        mem = self.memory[i]
        if strat == "aggressive":
            return cap if math.isnan(s) else min(cap, p.get("intensity", 0.5) * s)
        if strat in ("conservative", "rcp"):
            return cap * self._tier(obs)  # rcp on logistic: capitalStock is never observable
        if strat == "adaptive":
            falls = mem.get("falls", 0)
            if not math.isnan(s) and "prev" in mem and s < mem["prev"]:
                falls += 1
            else:
                falls = 0
            mem["falls"] = falls
            if not math.isnan(s):
                mem["prev"] = s
            f = p.get("reductionFactor", 1.0)
            cut = 0.3 * f if falls >= 2 else 0.2 * f if falls == 1 else 0.0
            return cap * 0.4 * min(max(1 - cut, 0.0), 1.0)
        if strat == "random":
            return cap * u
        if strat == "idle":
            return 0.0
        raise ValueError(strat)

    def _tier(self, obs: dict) -> float:
        s = obs["commonsStock"]
        rho = obs["commonsRatio"] if math.isnan(s) else s / self.m["commonsCapacity"]
        if math.isnan(rho):
            return 0.35
        return 0.60 if rho > 0.6 else 0.35 if rho > 0.4 else 0.10

    # --- the turn ------------------------------------------------------------------------
    @property
    def over(self) -> bool:
        return self.collapsed or self.turn >= self.m["maxTurns"]

    def step(self, requests: list[float], successes: float) -> dict | None:
        if self.over:
            return None
        req = [r if (math.isfinite(r) and r >= 0) else 0.0 for r in requests]
        invalid = [not (math.isfinite(r) and r >= 0) for r in requests]
        env_seen = self.env()
        demand = sum(req)
        from_stock = min(demand, self.stock)
        excess = demand - from_stock
        drawn, died = 0.0, False
        if self.m["useHiddenReserve"] and excess > 0:
            rolls = die_rolls(successes)
            remaining = excess
            while remaining > 0 and self.reserve - drawn > 0:
                if next(rolls):  # at or below successThreshold: one unit from the reserve
                    take = min(1.0, remaining, self.reserve - drawn)
                    drawn += take
                    remaining -= take
                else:  # above it: immediate, irreversible collapse
                    died = True
                    break
        self.reserve -= drawn
        delivered = from_stock + drawn
        actual = [r * delivered / demand if demand > 0 else 0.0 for r in req]
        self.stock = max(self.stock - from_stock, 0.0)
        self.wealth = [w + a for w, a in zip(self.wealth, actual, strict=True)]
        ended = died or self.stock < self.m["threshold"]
        regen = 0.0
        regen_measured = not ended
        if not ended:
            s, r, K = self.stock, self.m["regenRate"], self.m["commonsCapacity"]
            new = max(s + r * s * (1 - s / K), 0.0)
            regen = new - s
            self.stock = new
            ended = self.stock < self.m["threshold"]
        self.turn += 1
        self.last_actual = actual
        self.prev_env = env_seen
        if ended:
            self.collapsed = True
            self.collapse_turn = self.turn
        share = regen / self.n
        eps = 1e-6
        # no dynamics on a collapse turn: no regeneration measured, no share -> null metrics
        measured = regen_measured
        nan = float("nan")
        return {
            "turn": self.turn,
            "stock": self.stock,
            "regen": regen,
            "reserve_drawn": drawn,
            "collapsed": self.collapsed,
            "requested": req,
            "actual": actual,
            "wealth": list(self.wealth),
            "invalid": invalid,
            "cooperation_index": sum(a <= share + eps for a in actual) / self.n if measured else nan,
            "silent_defection": sum(a > share + eps for a in actual) / self.n if measured else nan,  # nobody announces
        }


# The environment variables a player may observe (004_* A.3), each with how the reference reads
# it off the arena: one table gives both the names and the values.
ENV: dict[str, Callable[[RefArena], float]] = {
    "commonsStock": lambda a: a.stock,
    "regenRate": lambda a: a.m["regenRate"],
    "commonsCapacity": lambda a: a.m["commonsCapacity"],
    "threshold": lambda a: a.m["threshold"],
    "commonsRatio": lambda a: a.stock / a.m["commonsCapacity"],
    "capitalStock": lambda a: math.nan,  # a logistic arena has no capital or pollution
    "pollutionLevel": lambda a: math.nan,
    "nPlayers": lambda a: float(a.n),
    "turn": lambda a: float(a.turn + 1),
}
