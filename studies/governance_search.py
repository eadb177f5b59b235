# ---
# jupytext:
#   text_representation:
#     extension: .py
#     format_name: percent
# ---

# %% [markdown]
# # Governance search: the mildest graduated ladder that keeps the commons alive
#
# Four players share the seed's logistic commons (its model and observability): two
# conservative players who comply with a `harvest_cap` pact at the sustainable share
# (r K / 4N) and announce honestly, and two aggressive ones who do not. A
# `sanction_graduated` ladder of three rungs fines every violation. Which ladder charges the
# least in fines (`fines_total`, per arena over the game) while keeping at least 95 % of
# arenas alive?
#
# `bdpd_jax.search` (CMA-ES from evosax) searches the three rungs in [0, 30], each generation
# one batched sweep; a grid gets the same number of arena-evaluations. Then the found ladder
# against the seed's ladders (1-3-10 and 5-10-20), re-evaluated on fresh replicates, and the
# Pareto front of survival against fines (pymoo's NSGA-II).

# %%
import copy

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax.study_output import figures_dir, save_figure, step, study_size  # noqa: E402

SIZE = study_size(64)  # replicates per candidate (CI: small)
FULL = SIZE >= 32
POP, GENS = (16, 12) if FULL else (8, 2)
# replicates per ladder of the fresh re-evaluation; CI: 4 ladders x 2 SIZE = the search's batch
# of POP x SIZE, so the re-evaluation runs the search's compiled program instead of a new one
CHECK = 4 * SIZE if FULL else 2 * SIZE
N = 4
GOAL = 0.95
OUT = figures_dir()
RUNGS = [f"perturbations[ladder].payload.ladder[{i}]" for i in range(3)]
SPACE = {p: (0.0, 30.0) for p in RUNGS}

SEED = bdpd_jax.default_config().model_dump(exclude={"players"})
comply = {"strategy": "conservative", "talk": {"announce": "honest", "comply": True}}
BASE = {
    "model": SEED["model"],
    "observability": SEED["observability"],
    "players": [comply, copy.deepcopy(comply), {"strategy": "aggressive"}, {"strategy": "aggressive"}],
}
share = BASE["model"]["regenRate"] * BASE["model"]["commonsCapacity"] / 4 / N
BASE["pacts"] = [{"parties": list(range(N)), "terms": {"type": "harvest_cap", "maxHarvest": share}}]
BASE["perturbations"] = [
    {
        "id": "ladder",
        "type": "sanction_graduated",
        "trigger": {"kind": "pact_violation"},
        "payload": {"ladder": [1.0, 3.0, 10.0]},
    }
]

# %% [markdown]
# ## Search and grid, same budget

# %%
step(f"search: {GENS} generations of {POP} candidates x {SIZE} replicates")
res = bdpd_jax.search(
    BASE,
    SPACE,
    ("fines_total_mean", "min"),
    constraints={"survived_mean": (">=", GOAL)},
    population=POP,
    generations=GENS,
    replicates=SIZE,
    seed=0,
    progress=True,
)
budget = POP * GENS * SIZE
k = max(2, int(np.floor((POP * GENS) ** (1 / 3) + 1e-9)))
step("a grid of the same budget")
grid = bdpd_jax.sweep(
    BASE,
    grid={p: list(np.linspace(0.0, 30.0, k)) for p in RUNGS},
    replicates=SIZE,
    seed=0,
    history=True,
    common_random=True,
    progress=False,
)
gp = grid.points
g_ok = gp[gp["survived_mean"] >= GOAL]
grid_best = g_ok.sort_values("fines_total_mean").iloc[0] if len(g_ok) else None
print(
    f"search: {len(res.history)} candidates x {SIZE} replicates = {budget} arena-evaluations; "
    f"grid: {k}^3 = {len(gp)} points x {SIZE} = {len(gp) * SIZE}"
)

# %% [markdown]
# ## The found ladder against the seed's, on fresh replicates

# %%
found = [res.best["point"][p] for p in RUNGS]
ladders = {"search": found, "seed 1-3-10": [1.0, 3.0, 10.0], "seed 5-10-20": [5.0, 10.0, 20.0]}
if grid_best is not None:
    ladders["grid"] = [float(grid_best[p]) for p in RUNGS]
step("the found ladder against the seed's, on fresh replicates")
check = bdpd_jax.sweep(
    BASE,
    points=pd.DataFrame(list(ladders.values()), columns=RUNGS),
    replicates=CHECK,
    seed=12345,
    history=True,
    common_random=True,
    progress=False,
).points
check.insert(0, "ladder", list(ladders))
cols = ["ladder", *RUNGS, "survived_mean", "survived_ci_low", "fines_total_mean", "gini_mean", "efficiency_mean"]
print(check[cols].round(3).to_string(index=False))

# %% [markdown]
# ## Pareto front: survival against total fines

# %%
step("the Pareto front of survival and fines (NSGA-II)")
pareto = bdpd_jax.search(
    BASE,
    SPACE,
    [("survived_mean", "max"), ("fines_total_mean", "min")],
    method="nsga2",
    population=POP,
    generations=GENS,
    replicates=SIZE,
    seed=1,
)
front = pareto.front

# %%
h = res.history
best_by_gen = [h[(h.generation <= g) & h.feasible]["fines_total_mean"].min() for g in range(GENS)]
fig, ax = plt.subplots(1, 3, figsize=(15, 4.2))
ax[0].plot(range(GENS), best_by_gen, "o-", label="search: best feasible so far")
ax[0].scatter(h.generation, h.fines_total_mean, s=8, c=np.where(h.feasible, "tab:green", "tab:red"), alpha=0.5)
if grid_best is not None:
    ax[0].axhline(grid_best["fines_total_mean"], color="k", ls="--", label=f"grid ({len(gp)} points)")
ax[0].set(xlabel="generation", ylabel="total fines per arena", title="convergence (green: feasible)")
ax[0].legend()
xs = np.arange(3)
for i, (name, lad) in enumerate(ladders.items()):
    ax[1].bar(xs + 0.2 * i - 0.3, lad, width=0.2, label=name)
ax[1].set(xticks=xs, xticklabels=["rung 1", "rung 2", "rung 3"], ylabel="fine", title="ladders")
ax[1].legend()
ph = pareto.history
ax[2].scatter(ph.fines_total_mean, ph.survived_mean, s=8, c="0.7", label="evaluated")
ax[2].plot(front.fines_total_mean, front.survived_mean, "o-", c="tab:blue", label="Pareto front")
ax[2].axhline(GOAL, color="k", ls=":")
ax[2].set(xlabel="total fines per arena", ylabel="survival", title="survival vs fines")
ax[2].legend()
fig.tight_layout()
save_figure(fig, "governance_search.png", dpi=110)

# %% [markdown]
# ## Conclusion (computed)

# %%
row = check.set_index("ladder")
s, f = row.loc["search", "survived_mean"], row.loc["search", "fines_total_mean"]
lines = [
    f"The search's ladder {np.round(found, 2).tolist()} keeps {s:.1%} of arenas alive (fresh replicates, "
    f"CI low {row.loc['search', 'survived_ci_low']:.1%}) for {f:.1f} in fines per arena."
]
for name in ("seed 1-3-10", "seed 5-10-20", "grid"):
    if name in row.index:
        fn = row.loc[name, "fines_total_mean"]
        lines.append(
            f"{name}: survival {row.loc[name, 'survived_mean']:.1%}, fines {fn:.1f}"
            f" ({'more' if fn > f else 'fewer'} fines than the search's)."
        )
lines.append(
    f"Budgets: search {budget}, grid {len(gp) * SIZE} arena-evaluations (the largest cube grid within the "
    "search's); the grid's best feasible ladder charges "
    + (f"{grid_best['fines_total_mean']:.1f}" if grid_best is not None else "nothing feasible")
    + f", the search's {res.best['metrics']['fines_total_mean']:.1f} (its winner confirmed on "
    + f"{res.meta['confirm']} fresh replicates: {POP * res.meta['confirm']} arena-evaluations outside the budget)."
)
lines.append(
    f"The Pareto front has {len(front)} ladders, from survival {front.survived_mean.min():.1%} at "
    f"{front.fines_total_mean.min():.1f} in fines to {front.survived_mean.max():.1%} at "
    f"{front.fines_total_mean.max():.1f}."
)
print("\n".join(lines))
