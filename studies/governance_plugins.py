# ---
# jupytext:
#   text_representation:
#     extension: .py
#     format_name: percent
# ---

# %% [markdown]
# # Governance plugins: no governance, a graduated ladder, voluntary sanctioning, a regulator
#
# One mixed population on the seed's logistic commons: a compliant player (clips to its
# pacts, announces honestly), two defectors (aggressive) and an adaptive player. Every arena
# starts with a `harvest_cap` pact binding all four at the sustainable share (MSY / N). Arms:
#
# - **none**: the pact alone;
# - **ladder**: `sanction_graduated` [1, 3, 10] on every violation (000_* 2.4);
# - **voluntary (c, f)**: the `voluntary_sanction` plugin (Yoon & Armsworth 2025 style): the
#   compliant player always sanctions, the adaptive one reciprocally, the defectors never; a
#   sanctioner pays `c` per player fined, who pays `f` (costs x fines grid);
# - **agent (c<, s<)**: a mild constant `sanction` of 0.5 per violation plus a
#   `governance_agent` regulator: when the cooperation index falls below `c<` or the stock
#   ratio (stock / K) below `s<`, it imposes a harvest cap of 0.8 x the share on everyone from
#   the next turn and doubles the fine; when cooperation is back at 0.75 and the stock ratio
#   at 0.6 it lifts the cap and halves the fine again (never below the configured one); at
#   least 2 turns between actions (thresholds grid).
#
# Every cell runs `SIZE` arenas; the voluntary cells share one compiled program (cost and
# fine are params leaves), and so do the agent cells (thresholds are params leaves).

# %%
import copy

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax.study_output import figures_dir, save_figure, step, study_size  # noqa: E402

bdpd_jax.configure()
from bdpd_jax.kernels.metrics import METRICS  # noqa: E402

SIZE = study_size(1000)  # arenas per cell (CI: small)
TURNS = 30
N = 4
COSTS = [0.25, 1.0, 2.0]
FINES = [1.0, 3.0, 6.0]
COOP_BELOW = [0.0, 0.3]
STOCK_BELOW = [0.6, 0.75, 0.9]
OUT = figures_dir()

# The seed's logistic payload (noisy stock, hidden reserve and its collapse die), so the
# replicates of a cell differ and the rates below are rates, not one arena repeated.
SEED = bdpd_jax.default_config().model_dump(exclude={"players"})
BASE = {
    "model": {**SEED["model"], "maxPlayers": N, "minPlayers": N, "maxTurns": TURNS},
    "observability": SEED["observability"],
    "players": [
        {"strategy": "conservative", "talk": {"announce": "honest", "comply": True}},
        {"strategy": "aggressive", "intensity": 0.5},
        {"strategy": "aggressive", "intensity": 0.3},
        {"strategy": "adaptive"},
    ],
}
cap = BASE["model"]["regenRate"] * BASE["model"]["commonsCapacity"] / 4 / N
BASE["pacts"] = [{"parties": list(range(N)), "terms": {"type": "harvest_cap", "maxHarvest": cap}}]


def arm(kind: str, cost: float = 0.0, fine: float = 0.0, coop_below: float = 0.0, stock_below: float = 0.0) -> dict:
    cfg = copy.deepcopy(BASE)
    if kind == "ladder":
        cfg["perturbations"] = [
            {
                "id": "ladder",
                "type": "sanction_graduated",
                "trigger": {"kind": "pact_violation"},
                "payload": {"ladder": [1.0, 3.0, 10.0]},
            }
        ]
    if kind == "voluntary":
        cfg["plugins"] = [
            {
                "type": "voluntary_sanction",
                "id": "vs",
                "cost": cost,
                "fine": fine,
                "sanctioner": ["always", "never", "never", "reciprocal"],
            }
        ]
    if kind == "agent":  # a mild constant fine the regulator scales
        cfg["perturbations"] = [
            {"id": "fine", "type": "sanction", "trigger": {"kind": "pact_violation"}, "payload": {"amount": 0.5}}
        ]
        cfg["plugins"] = [
            {
                "type": "governance_agent",
                "id": "regulator",
                "coop_below": coop_below,
                "stock_below": stock_below,
                "coop_above": 0.75,
                "stock_above": 0.6,
                "cap": 0.8 * cap,
                "tighten": 2.0,
                "loosen": 0.5,
                "cooldown": 2,
            }
        ]
    return cfg


def gini(w: np.ndarray) -> np.ndarray:
    """Gini of each row (wealth floored at 0), 0 where the total is 0."""
    s = np.sort(np.maximum(w, 0.0), axis=1)
    tot = s.sum(axis=1)
    ranks = np.arange(1, s.shape[1] + 1)
    g = 2 * (s * ranks).sum(axis=1) / (s.shape[1] * np.where(tot > 0, tot, 1)) - (s.shape[1] + 1) / s.shape[1]
    return np.where(tot > 0, g, 0.0)


def measure(cfg: dict) -> dict:
    res = bdpd_jax.simulate(cfg, n_arenas=SIZE, seed=0, progress=False)
    s, t = res.summary, res.turns
    wealth = s[[f"wealth_{i}" for i in range(N)]].to_numpy(float)
    out = {
        "survival": float(s.survived.mean()),
        "gini": float(gini(wealth).mean()),
        "efficiency": float(s.efficiency.mean()),
    }
    for m in METRICS:
        out[m] = float(t[m].mean())  # NaN (null) turns skipped
    return out


cells = {"none": arm("none"), "ladder": arm("ladder")}
step(f"simulating every arm: {SIZE} arenas each")
for c in COSTS:
    for f in FINES:
        cells[f"voluntary c={c:g} f={f:g}"] = arm("voluntary", c, f)
for cb in COOP_BELOW:
    for sb in STOCK_BELOW:
        cells[f"agent c<{cb:g} s<{sb:g}"] = arm("agent", coop_below=cb, stock_below=sb)
results = {name: measure(cfg) for name, cfg in cells.items()}
for name, r in results.items():
    print(f"{name:>24}: " + ", ".join(f"{k} {v:.3f}" for k, v in r.items()))

# %%
panels = ["survival", "gini", "efficiency", *METRICS]
fig, axes = plt.subplots(2, 4, figsize=(15, 8))
names = list(results)
colors = ["#888888", "#1f77b4"] + ["#2ca02c" if n.startswith("agent") else "#d62728" for n in names[2:]]
for ax, key in zip(axes.ravel(), panels):
    vals = [results[n][key] for n in names]
    ax.barh(range(len(names)), vals, color=colors)
    ax.set_yticks(range(len(names)), names if ax in axes[:, 0] else [""] * len(names), fontsize=7)
    ax.set_title(key)
fig.tight_layout()
save_figure(fig, "governance_plugins.png", dpi=90)

# %% [markdown]
# ## Conclusion (computed from the numbers above)

# %%
vol = {n: r for n, r in results.items() if n.startswith("voluntary")}
best = max(vol, key=lambda n: vol[n]["survival"])
worst = min(vol, key=lambda n: vol[n]["survival"])
agents = {n: r for n, r in results.items() if n.startswith("agent")}
best_a = max(agents, key=lambda n: (agents[n]["survival"], agents[n]["cooperation_index"]))
worst_a = min(agents, key=lambda n: (agents[n]["survival"], agents[n]["cooperation_index"]))
none, ladder = results["none"], results["ladder"]
print(
    f"With the same mixed population, survival is {none['survival']:.2f} with the pact alone, "
    f"{ladder['survival']:.2f} under the graduated ladder and {vol[worst]['survival']:.2f}-{vol[best]['survival']:.2f} "
    f"under voluntary sanctioning (best: {best}); the ladder {'lowers' if ladder['gini'] < none['gini'] else 'raises'} "
    f"the final-wealth Gini from {none['gini']:.2f} to {ladder['gini']:.2f}, voluntary sanctioning gives "
    f"{min(v['gini'] for v in vol.values()):.2f}-{max(v['gini'] for v in vol.values()):.2f}, and the cooperation "
    f"index moves from {none['cooperation_index']:.2f} (none) to {ladder['cooperation_index']:.2f} (ladder) and "
    f"{vol[best]['cooperation_index']:.2f} ({best}). The threshold regulator gives survival "
    f"{agents[worst_a]['survival']:.2f}-{agents[best_a]['survival']:.2f}, cooperation "
    f"{min(a['cooperation_index'] for a in agents.values()):.2f}-"
    f"{max(a['cooperation_index'] for a in agents.values()):.2f} "
    f"and efficiency {min(a['efficiency'] for a in agents.values()):.2f}-"
    f"{max(a['efficiency'] for a in agents.values()):.2f} "
    f"(best: {best_a}), {'above' if agents[best_a]['survival'] > ladder['survival'] else 'not above'} the ladder "
    f"alone on survival and "
    f"{'above' if agents[best_a]['cooperation_index'] > ladder['cooperation_index'] else 'not above'} "
    f"it on cooperation."
)
