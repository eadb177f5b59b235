# ---
# jupytext:
#   text_representation:
#     extension: .py
#     format_name: percent
# ---

# %% [markdown]
# # Governance sweep: pact tolerance x sanction ladder x share of compliant players
#
# Four players (two aggressive, two random) share the seed's logistic commons. Every arena
# starts with two active pacts binding all four: a `harvest_cap` at the sustainable share
# (MSY / N = r K / 4N) and a `no_aggression` with tolerance `tol`. A `sanction_graduated`
# spec with ladder `L` fires on every violation of either pact. The first `c x N` players
# comply (clip their requests to their pacts' limits) and announce honestly; the others
# neither comply nor announce. Every (tol, L, c) cell runs `SIZE` arenas, and the whole
# grid is one batch in one compiled program.

# %%
import copy
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax.study_output import figures_dir, save_figure, step, study_size  # noqa: E402

bdpd_jax.configure()
from bdpd_jax import ArenaConfig, lab  # noqa: E402
from bdpd_jax.kernels.metrics import METRICS  # noqa: E402

SIZE = study_size(2000)  # arenas per cell (CI: small)
TURNS = 30
TOLERANCES = [0.0, 0.1, 0.25, 0.5]
LADDERS = {"none": [0.0], "flat 1": [1.0], "1-3-10": [1.0, 3.0, 10.0], "5-10-20": [5.0, 10.0, 20.0]}
COMPLIANT = [0, 1, 2, 3, 4]  # players who comply, out of 4
N = 4
OUT = figures_dir()

# %%
BASE = {
    "model": {"maxPlayers": N, "minPlayers": N, "maxTurns": TURNS, "regenRate": 0.12, "commonsCapacity": 150.0},
    "players": [{"strategy": s} for s in ("aggressive", "aggressive", "random", "random")],
}
cap = BASE["model"]["regenRate"] * BASE["model"]["commonsCapacity"] / 4 / N


def cell_config(tol: float, ladder: list[float], c: int) -> ArenaConfig:
    cfg = copy.deepcopy(BASE)
    for i, p in enumerate(cfg["players"]):
        p["talk"] = {"announce": "honest", "comply": True} if i < c else {"announce": "none"}
    cfg["pacts"] = [
        {"parties": list(range(N)), "terms": {"type": "harvest_cap", "maxHarvest": cap}},
        {"parties": list(range(N)), "terms": {"type": "no_aggression", "tolerance": tol}},
    ]
    cfg["perturbations"] = [
        {
            "id": "ladder",
            "type": "sanction_graduated",
            "trigger": {"kind": "pact_violation"},
            "payload": {"ladder": ladder},
        }
    ]
    return ArenaConfig.model_validate(cfg)


cells = [(t, name, c) for t in TOLERANCES for name in LADDERS for c in COMPLIANT]
runs = [
    bdpd_jax.lab.prepare(cell_config(t, LADDERS[name], c), governance={"pact_slots": 2, "ladder_width": 3})
    for t, name, c in cells
]  # one Game for every cell (lab.rollout checks it): one compiled program
B = len(cells) * SIZE
step(f"{len(cells)} cells x {SIZE} arenas in one program")
before = lab.TRACES["run"]
out = lab.rollout(runs, SIZE, turns=TURNS, history=True)
state, rec = out.state, out.records
print(f"{len(cells)} cells x {SIZE} arenas = {B} arenas, {lab.TRACES['run'] - before} compilation(s)")

# %%
survived = np.asarray(~state.collapsed).reshape(len(cells), SIZE).mean(axis=1)
played = rec.played  # [T, B]
metrics = rec.metrics  # derived from the records when asked (kernels/metrics.py)
per_metric = {}
for name in METRICS:
    v = np.where(played, metrics[name], np.nan)  # [T, B]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        per_arena = np.nanmean(v, axis=0)  # NaN where the metric was null every turn
        per_metric[name] = np.nanmean(per_arena.reshape(len(cells), SIZE), axis=1)


def grid(values: np.ndarray) -> np.ndarray:
    """cells -> [ladder, tolerance, compliant]."""
    g = np.empty((len(LADDERS), len(TOLERANCES), len(COMPLIANT)))
    for (t, name, c), v in zip(cells, values):
        g[list(LADDERS).index(name), TOLERANCES.index(t), COMPLIANT.index(c)] = v
    return g


panels = {"survival rate": grid(survived), **{m: grid(per_metric[m]) for m in METRICS}}

# %%
fig, axes = plt.subplots(len(panels), len(LADDERS), figsize=(3.2 * len(LADDERS), 2.4 * len(panels)), squeeze=False)
for r, (title, g) in enumerate(panels.items()):
    finite = g[np.isfinite(g)]
    vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    for col, lname in enumerate(LADDERS):
        ax = axes[r, col]
        im = ax.imshow(g[col], origin="lower", aspect="auto", vmin=vmin, vmax=vmax, cmap="viridis")
        ax.set_xticks(range(len(COMPLIANT)), [f"{c}/{N}" for c in COMPLIANT])
        ax.set_yticks(range(len(TOLERANCES)), [str(t) for t in TOLERANCES])
        if r == 0:
            ax.set_title(f"ladder {lname}")
        if col == 0:
            ax.set_ylabel(f"{title}\ntolerance")
        if r == len(panels) - 1:
            ax.set_xlabel("compliant players")
    fig.colorbar(im, ax=axes[r, :].tolist(), shrink=0.8)
save_figure(fig, "governance_sweep.png", dpi=90)

# %% [markdown]
# ## Conclusion (computed from the numbers above)

# %%
surv = panels["survival rate"]
by_c = surv.mean(axis=(0, 1))
by_ladder = surv.mean(axis=(1, 2))
by_tol = surv.mean(axis=(0, 2))
print(
    f"Survival {'rises' if by_c[-1] > by_c[0] else 'falls' if by_c[-1] < by_c[0] else 'stays'} from {by_c[0]:.2f} "
    f"with no compliant player to {by_c[-1]:.2f} with all {N} complying "
    f"(averaged over tolerance and ladder); the ladder moves it between {by_ladder.min():.2f} "
    f"({list(LADDERS)[int(by_ladder.argmin())]}) "
    f"and {by_ladder.max():.2f} ({list(LADDERS)[int(by_ladder.argmax())]}), tolerance between {by_tol.min():.2f} "
    f"and {by_tol.max():.2f}; "
    f"{int((surv >= 0.99).sum())} of {surv.size} cells survive in at least 99% of arenas."
)
