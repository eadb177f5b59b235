"""Plain-Python reference of the governance layer, written from the seed text (000_* 2.1-2.4,
001_* 'Pacts', 003_* 'Cheap Talk'). Shares no code with kernels/: pacts are dicts, players are
indices, null is None.
"""

from __future__ import annotations

import math

EPS = 1e-6
TERM_TYPES = ("harvest_cap", "no_aggression")


class RefRegistry:
    """001_*: proposed -> active (all parties accepted, proposer implicit) | rejected."""

    def __init__(self, n_slots: int):
        self.n_slots = n_slots
        self.pacts: list[dict] = []
        self.dropped = 0
        self.invalid = 0
        self.prior: dict[tuple[int, str], int] = {}  # (player, termType) -> violations so far

    def _valid(self, terms: dict) -> bool:
        if terms["type"] == "harvest_cap":
            return terms["maxHarvest"] > 0
        if terms["type"] == "no_aggression":
            return terms.get("tolerance", 0.0) >= 0
        return False

    def propose(self, proposer: int, parties: set[int], terms: dict, turn: int):
        if not self._valid(terms):
            self.invalid += 1
            return None
        if len(self.pacts) >= self.n_slots:
            self.dropped += 1
            return None
        parties = set(parties) | {proposer}
        pact = {
            "id": len(self.pacts),
            "proposer": proposer,
            "parties": parties,
            "terms": dict(terms),
            "status": "proposed",
            "accepted": {proposer},
            "proposedTurn": turn,
            "acceptedTurn": None,
            "violationCount": 0,
        }
        self.pacts.append(pact)
        self._maybe_activate(pact, turn)
        return pact["id"]

    def pledge(self, player: int, max_harvest: float, turn: int):
        return self.propose(player, {player}, {"type": "harvest_cap", "maxHarvest": max_harvest}, turn)

    def _maybe_activate(self, pact, turn):
        if pact["status"] == "proposed" and pact["parties"] <= pact["accepted"]:
            pact["status"] = "active"
            pact["acceptedTurn"] = turn

    def accept(self, pid: int, player: int, turn: int):
        if pid is None or pid >= len(self.pacts):
            return
        pact = self.pacts[pid]
        if pact["status"] == "proposed" and player in pact["parties"]:
            pact["accepted"].add(player)
            self._maybe_activate(pact, turn)

    def reject(self, pid: int, player: int):
        if pid is None or pid >= len(self.pacts):
            return
        pact = self.pacts[pid]
        if pact["status"] == "proposed" and player in pact["parties"]:
            pact["status"] = "rejected"

    def check_violations(self, actual: list[float], playing: list[bool]) -> list[dict]:
        """End of turn: events {partyId, pactId, termType, ordinal} in pact order."""
        decisions = [a for a, p in zip(actual, playing, strict=True) if p]
        group_mean = sum(decisions) / len(decisions) if decisions else 0.0
        events = []
        for pact in self.pacts:
            if pact["status"] != "active":
                continue
            t = pact["terms"]
            for party in sorted(pact["parties"]):
                if not playing[party]:
                    continue
                a = actual[party]
                if t["type"] == "harvest_cap":
                    breach = a > t["maxHarvest"] + EPS
                else:
                    breach = a > group_mean * (1 + t.get("tolerance", 0.0)) + EPS
                if breach:
                    pact["violationCount"] += 1
                    key = (party, t["type"])
                    self.prior[key] = self.prior.get(key, 0) + 1
                    events.append(
                        {"partyId": party, "pactId": pact["id"], "termType": t["type"], "ordinal": self.prior[key]}
                    )
        return events


def ladder_amount(ladder: list[float], k: int) -> float:
    """000_* 2.4: ladder[min(k - 1, len - 1)]."""
    return ladder[min(k - 1, len(ladder) - 1)]


def sanctions(specs: list[dict], events: list[dict], n: int) -> tuple[list[float], int]:
    """Every matching spec fires once per event. specs: {termType|None, ladder}. Returns
    (amount per player, number of players sanctioned)."""
    amount = [0.0] * n
    hit = set()
    for e in events:
        for s in specs:
            if s["termType"] is None or s["termType"] == e["termType"]:
                amount[e["partyId"]] += ladder_amount(s["ladder"], e["ordinal"])
                hit.add(e["partyId"])
    return amount, len(hit)


def metrics(
    actual: list[float], announced: list[float | None], sanction_count: int, regen: float, share_defined: bool = True
) -> dict:
    """Table 2.1 of 000_*, one turn, all N players playing. None = null; without a defined
    share (no regeneration measured) cooperation_index and silent_defection are null."""
    n = len(actual)
    share = regen / n
    said = [i for i in range(n) if announced[i] is not None]
    over = [a > share + EPS for a in actual]
    if not share_defined:
        return {
            **metrics(actual, announced, sanction_count, regen),
            "cooperation_index": None,
            "silent_defection": None,
        }
    return {
        "cooperation_index": sum(not o for o in over) / n,
        "lie_score": (sum(abs(announced[i] - actual[i]) for i in said) / len(said)) if said else None,
        "announce_frequency": len(said) / n,
        "silent_defection": sum(1 for i in range(n) if announced[i] is None and over[i]) / n,
        "sanction_rate": sanction_count / n,
    }


def round3(x: float) -> float:
    return math.floor(x * 1000 + 0.5) / 1000


def voluntary_sanction(wealth, violated, over, against, fined_before, rules, cost, fine):
    """Yoon-style voluntary sanctioning, one turn, plain Python (issue 17).

    rules[j]: "never" | "always" | "reciprocal" | ("if_richer_than", w); against[i][j]: i broke a
    pact binding j; fined_before[j][i]: j fined i in an earlier turn. A player who broke a pact
    or over-harvested may be fined by each other player whose rule says so; a sanctioner acts
    only if it can pay cost for all its targets. Costs are taken first, then fines, each at
    most what the player holds. Returns (imposed[j][i], wealth after, fine taken, cost taken,
    fined_before after)."""
    n = len(wealth)
    imposed = [[False] * n for _ in range(n)]
    for j in range(n):
        r = rules[j]
        want = []
        for i in range(n):
            if i == j or not (violated[i] or over[i]):
                continue
            if (
                r == "always"
                or (r == "reciprocal" and (fined_before[i][j] or against[i][j]))
                or (isinstance(r, tuple) and wealth[j] > r[1])
            ):
                want.append(i)
        if wealth[j] >= cost * len(want):
            for i in want:
                imposed[j][i] = True
    w = list(wealth)
    paid = [0.0] * n
    for j in range(n):
        c = min(cost * sum(imposed[j]), max(w[j], 0.0))
        w[j] -= c
        paid[j] = c
    taken = [0.0] * n
    for i in range(n):
        f = min(fine * sum(imposed[j][i] for j in range(n)), max(w[i], 0.0))
        w[i] -= f
        taken[i] = f
    after = [[fined_before[j][i] or imposed[j][i] for i in range(n)] for j in range(n)]
    return imposed, w, taken, paid, after


# -- governance_agent (issue 17): the built-in regulator's rule and its effects ----------------
def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def governance_agent_rule(coop, ratio, turn, memory: dict, p: dict) -> dict:
    """What the regulator decides at the end of ``turn`` (applied at turn + 1), from the
    docs' rule: bad (coop < coop_below or ratio < stock_below; a null metric never counts)
    -> impose cap, scale x tighten, regen; good (coop >= coop_above and ratio >= stock_above,
    not bad) -> lift a cap in force, scale x loosen but not below 1; only when
    (turn + 1) - last >= max(cooldown, 1); nothing where the value is already in force.
    memory: cap (None = none), scale, regen (None), last (None = never). Returns
    {cap, ladder_scale, regen}, None where not taken (cap inf = lift)."""
    lt = lambda a, b: not _nan(a) and a < b  # noqa: E731
    ge = lambda a, b: not _nan(a) and a >= b  # noqa: E731
    bad = lt(coop, p["coop_below"]) or lt(ratio, p["stock_below"])
    good = ge(coop, p["coop_above"]) and ge(ratio, p["stock_above"]) and not bad
    ready = memory["last"] is None or (turn + 1 - memory["last"]) >= max(p["cooldown"], 1)
    out = {"cap": None, "ladder_scale": None, "regen": None}
    if not ready:
        return out
    if bad:
        if p["cap"] is not None and p["cap"] != memory["cap"]:
            out["cap"] = p["cap"]
        new = memory["scale"] * p["tighten"]
        if new != memory["scale"]:
            out["ladder_scale"] = new
        if p["regen"] is not None and p["regen"] != memory["regen"]:
            out["regen"] = p["regen"]
    elif good:
        if memory["cap"] is not None:
            out["cap"] = math.inf
        if memory["scale"] > 1:
            new = max(memory["scale"] * p["loosen"], 1.0)
            if new != memory["scale"]:
                out["ladder_scale"] = new
    return out


def governance_agent_apply(action: dict, memory: dict, turn: int) -> dict:
    """The memory after the action applies at ``turn`` (what the regulator has in force):
    cap (None after a lift), scale, regen, last (turn of the last action)."""
    m = dict(memory)
    valid_cap = action["cap"] is not None and action["cap"] > 0
    valid_scale = (
        action["ladder_scale"] is not None and math.isfinite(action["ladder_scale"]) and action["ladder_scale"] >= 0
    )
    valid_regen = action["regen"] is not None and math.isfinite(action["regen"]) and action["regen"] >= 0
    if valid_cap:
        m["cap"] = None if math.isinf(action["cap"]) else action["cap"]
    if valid_scale:
        m["scale"] = action["ladder_scale"]
    if valid_regen:
        m["regen"] = action["regen"]
    if valid_cap or valid_scale or valid_regen:
        m["last"] = turn
    return m
