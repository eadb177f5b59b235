# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Regeneration sweep: survival and collapse turn against regenRate x strategy mix
#
# **Question.** How fast must the commons regenerate for it to survive, and how does the
# answer move with the share of erratic harvesters among careful ones?
#
# The seed's logistic arena (K = S0 = 150, threshold 10, 40 turns) with four players:
# `k` random ones (a random harvest each turn) and `4 - k` conservative ones, `k = 0..4`.
# (An aggressive player, even at intensity 0.3, collapses the commons on almost the whole
# regenRate range with any companions: survival is then 0 or 1, nothing to estimate.) For each mix,
# one `bdpd_jax.sweep` runs a grid of `regenRate` values with `SIZE` replicates per point
# (common random numbers: replicate `r` of every point sees the same draws). Each mix
# changes the game's static structure (the strategies in play), so it is one compiled
# program per mix; every regenRate value and replicate of a mix shares it.

# %%
import copy

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax.study_output import figures_dir, save_figure, step, study_size  # noqa: E402

bdpd_jax.configure()
from bdpd_jax import default_config, sweep  # noqa: E402

SIZE = study_size(1000)  # replicates per (mix, regenRate) point
TURNS = 40
REGEN = np.round(np.linspace(0.01, 0.3, 30), 4)
N = 4
MIXES = {k: ["random"] * k + ["conservative"] * (N - k) for k in range(N + 1)}  # k random
OUT = figures_dir()

# %%
base = default_config().model_dump(exclude_unset=True, exclude={"players"})
base["model"] = {**base.get("model", {}), "maxTurns": TURNS, "maxPlayers": N, "minPlayers": N}


def mix_config(strategies: list[str]) -> dict:
    cfg = copy.deepcopy(base)
    cfg["players"] = [{"strategy": s} for s in strategies]
    return cfg


results = {}
step(f"{len(MIXES)} player mixes: a regenRate sweep of {SIZE} replicates per point each")
for k, strategies in MIXES.items():
    r = sweep(
        mix_config(strategies),
        grid={"model.regenRate": list(REGEN)},
        replicates=SIZE,
        seed=0,
        common_random=True,
        progress=False,
    )
    results[k] = r.points
print(
    f"{len(MIXES)} mixes x {len(REGEN)} regenRate values x {SIZE} replicates = {len(MIXES) * len(REGEN) * SIZE} arenas"
)

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
colors = plt.cm.viridis(np.linspace(0, 0.9, len(MIXES)))
for (k, p), col in zip(results.items(), colors):
    label = f"{k} random / {N - k} conservative"
    ax1.plot(p["model.regenRate"], p["survived_mean"], "-o", ms=3, color=col, label=label)
    ax1.fill_between(
        p["model.regenRate"], p["survived_ci_low"].clip(0, 1), p["survived_ci_high"].clip(0, 1), color=col, alpha=0.2
    )
    ax2.plot(p["model.regenRate"], p["collapse_turn_mean"], "-o", ms=3, color=col, label=label)
ax1.set(xlabel="regenRate", ylabel="survival probability", title=f"survival over {TURNS} turns (95% CI)")
ax2.set(xlabel="regenRate", ylabel="mean collapse turn (collapsed arenas)", title="collapse turn")
ax1.legend(fontsize=8)
fig.tight_layout()
save_figure(fig, "regen_sweep.png", dpi=90)

# %% [markdown]
# ## Conclusion (computed from the numbers above)


# %%
def threshold(p, level=0.9):
    ok = p.loc[p["survived_mean"] >= level, "model.regenRate"]
    return float(ok.min()) if len(ok) else None


parts = []
for k, p in results.items():
    t = threshold(p)
    parts.append(f"{k} random: {'never on this grid' if t is None else f'regenRate >= {t:g}'}")
ct = {
    k: np.nanmean(p["collapse_turn_mean"].to_numpy(float)) if p["collapse_turn_n"].sum() else np.nan
    for k, p in results.items()
}
low = results[0]["survived_mean"].mean()
high = results[N]["survived_mean"].mean()
finite = {k: v for k, v in ct.items() if np.isfinite(v)}
print(
    f"Survival of at least 90% needs: {'; '.join(parts)}. Averaged over the regenRate grid, survival "
    f"{'falls' if high < low else 'rises' if high > low else 'stays'} from {low:.2f} with no random player "
    f"to {high:.2f} with {N}"
    + (
        f"; collapses come earliest with {min(finite, key=finite.get)} random player(s) "
        f"(mean collapse turn {min(finite.values()):.1f}) and latest with {max(finite, key=finite.get)} "
        f"({max(finite.values()):.1f})."
        if finite
        else "; no arena collapsed."
    )
)
