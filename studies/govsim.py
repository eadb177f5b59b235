# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # GovSim's commons: rule-based baselines beside the published LLM table
#
# **Question.** Which rows of GovSim's published table (Piatti et al. 2024, "Cooperate or
# Collapse", arXiv 2404.16698v4) does a simple rule already reproduce?
#
# `bdpd_jax.scenarios.govsim(scenario, experiment)` gives GovSim's arena: 5 players, 12 months,
# a pool of 100 that doubles after each harvest up to 100, collapse when fewer than 5 units are
# left, whole-unit requests and GovSim's unit-by-unit random allocation (`random_units`). Seven
# baselines play every cell of 3 scenarios x 4 experiments, `SIZE` arenas per cell:
#
# - `threshold taker`: each player takes its share of the sustainability threshold, (h // 2) // N;
# - `fixed 9`, `fixed 6`: each takes 9 (or 6) units every month;
# - `greedy 20`: each takes 20;
# - `3x defector`: one player takes 3x the threshold, the others take the threshold;
# - `end-game grab`: the threshold every month, the whole pool in the last one;
# - `whole pool`: everyone asks for the whole pool (the allocation alone decides the catch).
#
# Rules do not read text, so the wording experiments (universalization, no communication) and
# the three scenarios (which differ only in wording) change nothing for them: those cells are
# run anyway, as a check. The newcomer experiment changes the shape: 4 players for 15 months
# and a 5th who joins after 3 months (`activeFrom` 4), as GovSim's code runs it: the threshold
# divides by the 4 configured players throughout, and the metrics read the run as GovSim's
# analysis does (survival 12 for a run that never collapses, a collapse from month 12 on
# survives, means over the players present in the log; docs/semantics/game.md §19). Each
# baseline and shape is one compiled program; the 3 scenarios x 3
# same-shape experiments reuse it. Metrics are GovSim's §2.4 definitions (`govsim_*` columns);
# over-usage is Eq. 3 (catches above the per-player threshold over N m). The published
# over-usage of month-1 collapses (e.g. 35.71) is not a multiple of 4 %, which a mean of Eq. 3
# over 5 runs must be, so that column of that row cannot come from Eq. 3 and is not compared.

# %%
import dataclasses

import matplotlib

matplotlib.use("Agg")
import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax import ArenaConfig, Policy  # noqa: E402
from bdpd_jax.kernels.policies import BUILTINS  # noqa: E402
from bdpd_jax.lab import TRACES, outcomes  # noqa: E402
from bdpd_jax.scenarios import (  # noqa: E402
    EXPERIMENTS,
    GOVSIM_LABELS,
    GOVSIM_PERCENT,
    GOVSIM_PUBLISHED,
    GOVSIM_SCENARIOS,
    MONTHS,
    NEWCOMER_MONTHS,
    PLAYERS,
    govsim,
)
from bdpd_jax.study_output import figures_dir, save_figure, step, study_size  # noqa: E402

SIZE = study_size(1000)  # arenas per cell
OUT = figures_dir()


# %%
def fixed(units: float) -> Policy:
    return Policy(lambda obs, mem, key: (jnp.asarray(units, mem.dtype), mem), name=f"fixed_{units:g}")


def share(obs):
    """GovSim's per-player threshold from what every player sees: (pool // 2) // N."""
    return jnp.floor(jnp.floor(obs["commonsStock"] / 2) / obs["nPlayers"])


def grab(months: int) -> Policy:
    return Policy(
        lambda obs, mem, key: (jnp.where(obs["turn"] >= months, obs["commonsStock"], share(obs)), mem),
        name=f"end_game_grab_{months}",
    )


FIX9, FIX6, GREEDY, WHOLE = fixed(9), fixed(6), fixed(20), fixed(100)
DEFECTOR = Policy(lambda obs, mem, key: (3 * share(obs), mem), name="defector_3x")
GRABS = {m: grab(m) for m in (MONTHS, NEWCOMER_MONTHS)}


def baselines(months: int) -> dict[str, list]:
    n = PLAYERS
    return {
        "threshold taker": ["threshold_taker"] * n,
        "fixed 9": [FIX9] * n,
        "fixed 6": [FIX6] * n,
        "greedy 20": [GREEDY] * n,
        "3x defector": [DEFECTOR] + ["threshold_taker"] * (n - 1),
        "end-game grab": [GRABS[months]] * n,
        "whole pool": [WHOLE] * n,
    }


# Every player may play every baseline (its strategy index is a params leaf), so one compiled
# program per shape serves every baseline, scenario and wording experiment.
ALL = ("idle", "threshold_taker", FIX9, FIX6, GREEDY, DEFECTOR, *GRABS.values(), WHOLE)


def policy(s):
    return BUILTINS[s] if isinstance(s, str) else s


def cell(scenario: str, experiment: str, players: list) -> dict:
    """GovSim's metrics of SIZE arenas of one cell (numpy columns)."""
    cfg = ArenaConfig.model_validate(govsim(scenario, experiment, players=["idle"] * len(players)))
    prep = bdpd_jax.lab.prepare(cfg, extra_policies=ALL)
    game, params = prep.game, prep.params
    # the newcomer plays its strategy from the start: its activeFrom (a params leaf) keeps it out until month 4
    index = np.asarray([game.policies.index(policy(s)) for s in players], np.int32)
    params = dataclasses.replace(params, players=dataclasses.replace(params.players, strategy=index))
    return outcomes(prep, SIZE, params=params)


COLS = GOVSIM_LABELS
PERCENT = GOVSIM_PERCENT
traces0 = TRACES["run"]
rows = []
step(f"the baselines in 3 scenarios x {len(EXPERIMENTS)} experiments, {SIZE} arenas per cell")
for experiment in EXPERIMENTS:
    months = NEWCOMER_MONTHS if experiment == "newcomer" else MONTHS
    for name, players in baselines(months).items():
        for scenario in GOVSIM_SCENARIOS:
            s = cell(scenario, experiment, players)
            means = {c: np.nanmean(np.asarray(s[c], float)) for c in COLS}  # equality: undefined at 0/0
            rows.append(
                {
                    "baseline": name,
                    "experiment": experiment,
                    "scenario": scenario,
                    **{COLS[c]: means[c] * (100 if c in PERCENT else 1) for c in COLS},
                }
            )
table = pd.DataFrame(rows)
print(f"compiled programs: {TRACES['run'] - traces0} (one per shape: 12 months x 5, and the newcomer's)")

# %%
# the scenarios differ only in wording: their rows must agree to the last digit
spread = table.groupby(["baseline", "experiment"])[list(COLS.values())].agg(lambda x: np.ptp(x.to_numpy()))
assert np.nanmax(spread.to_numpy()) < 1e-9, spread
assert TRACES["run"] - traces0 <= 2
cells = table.groupby(["baseline", "experiment"], sort=False)[list(COLS.values())].mean().round(2)
print(cells.to_string())

# %%
PUBLISHED = pd.DataFrame(  # arXiv 2404.16698v4; rate %, time, Gain, eff. %, eq. %, over-use %
    GOVSIM_PUBLISHED, columns=["row", "experiment", *COLS.values()]
).set_index("row")
print(PUBLISHED.to_string())
print(
    "Published over-usage of month-1 collapses (e.g. 35.71 +- 0.00) is not a multiple of 4 %, as a mean of Eq. 3 "
    "over 5 runs must be: it cannot come from Eq. 3, which this project implements; it is not compared."
)

# %%
# A published row is reproduced by a baseline when every published number is matched within
# 1 % (or 0.1 months / 0.5 units) in the same experiment; missing published numbers are not
# compared (the month-1 collapse row's over-usage cannot be Eq. 3, see above).
TOL = {"rate": 1.0, "time": 0.1, "Gain": 0.5, "eff.": 1.0, "eq.": 1.0, "over-use": 1.0}
default = cells.xs("default", level="experiment")


def matches(pub: pd.Series) -> list[str]:
    hit = []
    for name, row in cells.xs(pub["experiment"], level="experiment").iterrows():
        ok = all(np.isnan(pub[c]) or abs(row[c] - pub[c]) <= TOL[c] for c in TOL)
        if ok:
            hit.append(name)
    return hit


found = {r: matches(PUBLISHED.loc[r]) for r in PUBLISHED.index}
expected = {
    "threshold taker": (100, 12, 120, 100, 100, 0),
    "fixed 9": (100, 12, 108, 90, 100, 0),
    "greedy 20": (0, 1, 20, 16.67, None, None),
}
for name, want in expected.items():  # the expected baseline rows, from GovSim's rules
    got = default.loc[name]
    for c, w in zip(COLS.values(), want, strict=True):
        assert w is None or abs(got[c] - w) <= TOL[c], (name, c, got[c], w)
eq_whole = default.loc["whole pool", "eq."]
assert 85 <= eq_whole <= 95, eq_whole  # "all want the whole pool: mean equality ~ 0.90"

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 4.2))
names = list(default.index)
x = np.arange(len(names))
for ax, (col, label) in zip(
    axes,
    (("Gain", "mean gain per player"), ("rate", "survival rate %"), ("over-use", "over-usage % (Eq. 3)")),
    strict=True,
):
    for k, exp in enumerate(("default", "newcomer")):
        ax.bar(x + (k - 0.5) * 0.38, cells.xs(exp, level="experiment").loc[names, col], 0.38, label=exp)
    ax.set_xticks(x, names, rotation=40, ha="right")
    ax.set_title(label)
axes[0].axhline(71.36, color="k", ls=":", lw=1, label="GPT-4o, default fishery")
axes[0].legend(fontsize=8)
fig.suptitle(f"GovSim's commons: rule-based baselines ({SIZE} arenas per cell)")
fig.tight_layout()
save_figure(fig, "govsim.png", dpi=110)

# %% [markdown]
# ## Conclusion (computed from the numbers above)

# %%
lines = []
for r, hit in found.items():
    lines.append(f"- {r}: " + (f"reproduced by {', '.join(hit)}" if hit else "no rule here reproduces it"))
reproduced = [r for r, h in found.items() if h]
print(
    f"{len(reproduced)} of {len(PUBLISHED)} published rows are reproduced by a simple rule "
    f"({SIZE} arenas per cell; wording experiments and scenarios change nothing for rules):"
)
print("\n".join(lines))
print(
    f"Whole-pool requests under random_units: mean equality {eq_whole:.1f} %; "
    f"the published month-1 collapse over-usage (e.g. 35.71) is not Eq. 3, which gives "
    f"{default.loc['greedy 20', 'over-use']:.0f} % for everyone taking 20."
)
