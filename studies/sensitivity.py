# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Sensitivity: which parameters drive survival and inequality?
#
# **Question.** Over plausible ranges of five parameters, which ones explain the variance of
# (a) the commons' survival and (b) the final Gini coefficient of the players' gains?
#
# A governed arena in the style of `studies/governance_sweep.py` (the seed's logistic
# commons, K = 150, 40 turns; three aggressive players and one random one; a `harvest_cap`
# pact at the sustainable share and a `no_aggression` pact binding all four; a
# `sanction_graduated` spec firing on violations; only the random player complies and
# announces honestly) with five factors:
#
# | factor | config path(s) | range |
# |---|---|---|
# | regenRate | `model.regenRate` | 0.02 - 0.3 |
# | noise | `observability.commonsStock.noise` (relative Gaussian noise on the stock players see) | 0 - 0.5 |
# | intensity | `players[0..2].intensity` (the three aggressive players) | 0.1 - 1 |
# | tolerance | `pacts[1].terms.tolerance` (the no_aggression pact) | 0 - 0.5 |
# | ladder scale | `perturbations[ladder].payload.ladder` = scale x [1, 3, 10] | 0 - 3 |
#
# "Ladder scale" multiplies a fixed ladder: `sensitivity.sobol(..., transform=...)` maps each
# sampled factor row to config paths (`sensitivity.scale_list` writes the scaled ladder as a
# list value of one path). Sobol indices (Saltelli sampling, `N` base samples, `N (D + 2)`
# points) with `REPS` replicates per point and common random numbers; the Gini is
# `1 - equality` (GovSim's equality of the players' total gains).

# %%

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax.study_output import figures_dir, save_figure, step, study_size  # noqa: E402

bdpd_jax.configure()
from bdpd_jax import sensitivity  # noqa: E402

SIZE = study_size(1024)  # Sobol base samples (rounded down to a power of 2)
N_BASE = 2 ** int(np.floor(np.log2(max(SIZE, 4))))
REPS = 4 if SIZE < 64 else 16
TURNS = 40
N = 4
LADDER = [1.0, 3.0, 10.0]
OUT = figures_dir()

# %%
r, K = 0.12, 150.0
cap = r * K / 4 / N
CONFIG = {
    "model": {"maxPlayers": N, "minPlayers": N, "maxTurns": TURNS, "regenRate": r, "commonsCapacity": K},
    "observability": {"commonsStock": {"visible": True, "noise": 0.05}},
    "players": [
        *[{"strategy": "aggressive", "intensity": 0.5, "talk": {"announce": "none"}} for _ in range(3)],
        {"strategy": "random", "talk": {"announce": "honest", "comply": True}},
    ],
    "pacts": [
        {"parties": list(range(N)), "terms": {"type": "harvest_cap", "maxHarvest": cap}},
        {"parties": list(range(N)), "terms": {"type": "no_aggression", "tolerance": 0.1}},
    ],
    "perturbations": [
        {
            "id": "ladder",
            "type": "sanction_graduated",
            "trigger": {"kind": "pact_violation"},
            "payload": {"ladder": LADDER},
        }
    ],
}
PROBLEM = {
    "names": ["regenRate", "noise", "intensity", "tolerance", "ladder scale"],
    "bounds": [[0.02, 0.3], [0.0, 0.5], [0.1, 1.0], [0.0, 0.5], [0.0, 3.0]],
}


def to_paths(f: pd.DataFrame) -> pd.DataFrame:
    """Factor rows -> config paths (intensity sets the three aggressive players; the ladder is scaled)."""
    return pd.DataFrame(
        {
            "model.regenRate": f["regenRate"],
            "observability.commonsStock.noise": f["noise"],
            **{f"players[{i}].intensity": f["intensity"] for i in range(3)},
            "pacts[1].terms.tolerance": f["tolerance"],
            "perturbations[ladder].payload.ladder": sensitivity.scale_list(LADDER, f["ladder scale"]),
        }
    )


import warnings  # noqa: E402

step(f"Sobol analysis: base sample {N_BASE}, {REPS} replicates per point")
with warnings.catch_warnings(record=True) as caught:  # SALib warns when an output is constant
    warnings.simplefilter("always")
    si = sensitivity.sobol(
        CONFIG, PROBLEM, n=N_BASE, outputs=("survived", "gini"), replicates=REPS, seed=0, transform=to_paths
    )
constant = any("Constant values" in str(w.message) for w in caught)
n_points = N_BASE * (len(PROBLEM["names"]) + 2)
print(f"Sobol: {n_points} points x {REPS} replicates = {n_points * REPS} arenas")
print(si.round(3).to_string(index=False))

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
x = np.arange(len(PROBLEM["names"]))
for ax, out, title in zip(axes, ("survived", "gini"), ("survival", "final Gini of gains")):
    d = si[si["output"] == out].set_index("parameter").loc[PROBLEM["names"]]
    ax.bar(x - 0.2, d["S1"], 0.4, yerr=d["S1_conf"], capsize=3, label="first order S1")
    ax.bar(x + 0.2, d["ST"], 0.4, yerr=d["ST_conf"], capsize=3, label="total ST")
    ax.set_xticks(x, PROBLEM["names"], rotation=20)
    ax.set_title(f"Sobol indices: {title}")
    ax.axhline(0, color="k", lw=0.5)
axes[0].set_ylabel("index")
axes[0].legend()
fig.tight_layout()
save_figure(fig, "sensitivity.png", dpi=90)

# %% [markdown]
# ## Conclusion (computed from the numbers above)

# %%
lines = []
for out, title in (("survived", "survival"), ("gini", "the final Gini")):
    d = si[si["output"] == out].set_index("parameter")
    if constant and np.allclose(d[["S1", "ST"]].to_numpy(), 0.0):
        lines.append(f"{title[0].upper() + title[1:]} did not vary over the sample (no index to report).")
        continue
    order = d["ST"].sort_values(ascending=False)
    top, second = order.index[0], order.index[1]
    weak = [p for p in order.index if d.loc[p, "ST"] < 0.05]
    lines.append(
        f"For {title}, {top} dominates (ST = {order.iloc[0]:.2f}, S1 = {d.loc[top, 'S1']:.2f}), then {second} "
        f"(ST = {order.iloc[1]:.2f}); "
        + (
            f"{', '.join(weak)} matter{'s' if len(weak) == 1 else ''} little (ST < 0.05)."
            if weak
            else "every factor has ST >= 0.05."
        )
    )
print(" ".join(lines) + f" (N = {N_BASE} base samples, {REPS} replicates per point; intervals are SALib's bootstrap.)")
