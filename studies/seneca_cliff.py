# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # The Seneca cliff with players: who keeps the commons for 3000 turns?
#
# The seed's Seneca payload (004_* §A.2.1: R0 = 1, k1 = 0.03, k2 = 0.30, l2 = 0.01) run for
# 3000 turns (the seed: "substantive Seneca exploration requires maxTurns >= 3000"), with the
# harvest coupling of docs/semantics.md §9: requests, harvests and wealth in R units, a
# built-in player asking up to `harvestScale x capacity(w)` (default 1e-4 x (1 + 0.05 w)).
# The players see R, C and P with 5 % Gaussian noise (the seed payload hides R and P; rcp
# needs both), which is what makes arenas of one table differ.
#
# Six strategy tables of 4 players each: `idle` (the pure Bardi run), `aggressive`,
# `conservative`, `adaptive`, `rcp`, and the seed's mix (rcp, conservative, adaptive,
# aggressive), `SIZE` arenas each. One compiled program serves all six: every player may
# play every built-in (its strategy index is a params leaf), so only the leaf changes.

# %%
import copy
import dataclasses
import warnings

import jax.numpy as jnp
import numpy as np

import bdpd_jax
from bdpd_jax.study_output import figures_dir, save_figure, step, study_size

bdpd_jax.configure()
from bdpd_jax import lab  # noqa: E402

SIZE = study_size(1024)  # arenas per strategy table
TURNS, EVERY, CHUNK = 3000, 10, 1000  # turns, record every k-th turn, turns per compiled chunk
FIG = figures_dir()
BUILTINS = ("idle", "aggressive", "conservative", "adaptive", "rcp")
TABLES = {s: (s,) * 4 for s in BUILTINS} | {"mix": ("rcp", "conservative", "adaptive", "aggressive")}
SEED_SENECA = {  # 004_* A.2.1, verbatim
    "model": {
        "name": "seneca_lab_01",
        "engineMode": "seneca",
        "scheduler": "simultaneous",
        "maxPlayers": 4,
        "minPlayers": 2,
        "maxTurns": 80,
        "commonsInitial": 1.0,
        "seneca": {"k1": 0.03, "k2": 0.30, "l2": 0.01},
    },
    "observability": {"capitalStock": {"visible": True, "noise": 0.0}, "pollutionLevel": {"visible": False}},
}
cfg = copy.deepcopy(SEED_SENECA)
cfg["model"]["maxTurns"] = TURNS
cfg["observability"] = {v: {"visible": True, "noise": 0.05} for v in ("commonsStock", "capitalStock", "pollutionLevel")}
cfg["players"] = [{"strategy": "idle"}] * 4
prep = bdpd_jax.lab.prepare(cfg, extra_policies=BUILTINS)  # every builtin compiled in: one program for all tables
game, params = prep.game, prep.params
index = {p.name: i for i, p in enumerate(game.policies)}
scale = float(params.engine.harvest_scale)
print(f"{SIZE} arenas x {TURNS} turns per table, {len(TABLES)} tables, harvestScale {scale:g}")


# %%
def run_table(k: int, players: tuple) -> dict:
    """One table: collapse turns int[B]; R, C, P, rcp-player-0 request float[T/EVERY, B]
    (NaN once the arena has collapsed)."""
    pb = lab.batch_params(prep, SIZE)
    strat = jnp.asarray(np.repeat([[index[s]] for s in players], SIZE, axis=1), jnp.int32)
    pb = dataclasses.replace(pb, players=dataclasses.replace(pb.players, strategy=strat))
    out = lab.rollout(
        prep, SIZE, turns=TURNS, chunk_turns=CHUNK, history=True, every=EVERY, arena_offset=k * SIZE, params=pb
    )
    state, rec = out.state, out.records
    alive = np.asarray(rec.played) & ~np.asarray(rec.collapsed)  # [T', B]
    keep = lambda x: np.where(alive, np.asarray(x, float), np.nan)  # noqa: E731
    collapsed = np.asarray(state.collapsed)
    return {
        "turn": np.asarray(rec.turn)[:, 0],
        "end": np.where(collapsed, np.asarray(state.collapse_turn), TURNS + 1),  # TURNS + 1: alive at the end
        "R": keep(rec.stock),
        "C": keep(rec.engine_extra["capital"]),
        "P": keep(rec.engine_extra["pollution"]),
        "h0": keep(np.asarray(rec.requested)[:, 0, :]),
        "w0": keep(np.asarray(rec.wealth)[:, 0, :]),
    }


step(f"{len(TABLES)} strategy tables x {SIZE} arenas")
traces0 = lab.TRACES["run"]
res = {name: run_table(k, pl) for k, (name, pl) in enumerate(TABLES.items())}
print("compiled programs:", lab.TRACES["run"] - traces0, "(one for all tables)")


# %% [markdown]
# ## Survival: mean and median turns alive, with 95 % confidence intervals
#
# An arena alive after 3000 turns counts 3000 (censored): the means are lower bounds.


# %%
def survival_stats(end: np.ndarray) -> dict:
    life = np.minimum(end, TURNS).astype(float)
    n = len(life)
    m, se = life.mean(), life.std(ddof=1) / np.sqrt(n) if n > 1 else 0.0
    alive = (end > TURNS).mean()
    return {
        "mean": m,
        "lo": m - 1.96 * se,
        "hi": m + 1.96 * se,
        "median": float(np.median(life)),
        "alive": alive,
        "alive_ci": 1.96 * np.sqrt(alive * (1 - alive) / n),
    }


stats = {name: survival_stats(r["end"]) for name, r in res.items()}
print(f"{'table':13s} {'mean turns':>10s} {'95% CI':>19s} {'median':>7s} {'P(alive at 3000)':>18s}")
for name, s in stats.items():
    print(
        f"{name:13s} {s['mean']:10.1f} [{s['lo']:8.1f}, {s['hi']:8.1f}] {s['median']:7.0f} "
        f"{s['alive']:10.3f} +- {s['alive_ci']:.3f}"
    )

# %% [markdown]
# ## rcp's harvest against capital and pollution
#
# rcp requests `harvestScale x capacity(w) x f(rho) x min(1, C/C_peak) x C/(C + P)`
# (docs/semantics.md §9). Its *fraction* (request / (harvestScale x capacity(w))) shows the
# cut: the conservative tier times the two capital/pollution factors.

# %%
warnings.simplefilter("ignore", RuntimeWarning)  # nanmean over turns where every arena has collapsed
r = res["rcp"]
frac = r["h0"] / (scale * (1.0 + 0.05 * r["w0"]))
turn = r["turn"]
f_mean, c_mean, p_mean = np.nanmean(frac, axis=1), np.nanmean(r["C"], axis=1), np.nanmean(r["P"], axis=1)
i_cpk, i_ppk = int(np.nanargmax(c_mean)), int(np.nanargmax(p_mean))
i_early = int(np.searchsorted(turn, 500))
marks = (("turn 500", i_early), ("capital peak", i_cpk), ("pollution peak", i_ppk), ("turn 3000", len(turn) - 1))
for label, i in marks:
    print(
        f"rcp at {label:15s} (turn {turn[i]:4d}): C {c_mean[i]:.4f}  P {p_mean[i]:.4f}  "
        f"harvest fraction {f_mean[i]:.4f}"
    )

# %%
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

fig, axes = plt.subplots(2, 3, figsize=(15, 8))
colors = dict(zip(TABLES, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
for ax, var, title in zip(axes[0], ("R", "C", "P"), ("resource R", "capital C", "pollution P")):
    for name, rr in res.items():
        x = rr[var]
        ok = np.isfinite(x).sum(axis=1) > 0
        mean = np.nanmean(x[ok], axis=1)
        lo, hi = np.nanpercentile(x[ok], 5, axis=1), np.nanpercentile(x[ok], 95, axis=1)
        ax.plot(rr["turn"][ok], mean, color=colors[name], label=name)
        ax.fill_between(rr["turn"][ok], lo, hi, color=colors[name], alpha=0.2)
    ax.set_title(f"{title}: mean and 5-95 % band (arenas alive)")
    ax.set_xlabel("turn")
    ax.grid(alpha=0.3)
axes[0, 0].legend(fontsize=8)
ax = axes[1, 0]
t_axis = np.arange(1, TURNS + 1)
for name, rr in res.items():
    ax.step(t_axis, (rr["end"][None, :] > t_axis[:, None]).mean(axis=1), color=colors[name], label=name, where="post")
ax.set_title("survival: fraction of arenas alive after turn t")
ax.set_xlabel("turn")
ax.set_ylim(-0.02, 1.02)
ax.grid(alpha=0.3)
ax.legend(fontsize=8)
ax = axes[1, 1]
ax.plot(turn, f_mean / max(f_mean[0], 1e-12), color="k", label="rcp harvest fraction (/ turn 10)")
ax.plot(turn, c_mean / np.nanmax(c_mean), color=colors["conservative"], label="C / max C")
ax.plot(turn, p_mean / np.nanmax(p_mean), color=colors["aggressive"], label="P / max P")
for i in (i_cpk, i_ppk):
    ax.axvline(turn[i], color="grey", ls=":")
ax.set_title("rcp's harvest against capital and pollution (rcp table)")
ax.set_xlabel("turn")
ax.grid(alpha=0.3)
ax.legend(fontsize=8)
ax = axes[1, 2]
names = list(stats)
ax.bar(
    names,
    [stats[n]["mean"] for n in names],
    color=[colors[n] for n in names],
    yerr=[stats[n]["hi"] - stats[n]["mean"] for n in names],
    capsize=4,
)
ax.set_title("mean turns alive (95 % CI; censored at 3000)")
ax.tick_params(axis="x", rotation=30)
ax.grid(alpha=0.3, axis="y")
fig.suptitle(f"Seneca cliff with players: seed payload, 3000 turns, {SIZE} arenas per table, harvestScale {scale:g}")
fig.tight_layout()
save_figure(fig, "seneca_cliff.png", dpi=110)

# %% [markdown]
# ## Conclusion (computed from the numbers above)

# %%
a, c = stats["aggressive"], stats["rcp"]
verdict = "outlive" if c["lo"] > a["hi"] else "do not clearly outlive"
drop = 1.0 - f_mean[i_ppk] / f_mean[i_early] if f_mean[i_early] > 0 else float("nan")
r_end = {n: float(np.nanmean(rr["R"][-1])) if np.isfinite(rr["R"][-1]).any() else 0.0 for n, rr in res.items()}
order = sorted(stats, key=lambda n: (-stats[n]["mean"], -r_end[n]))  # ties: more R left first
print(
    f"Over {SIZE} arenas per table, 4 rcp players {verdict} 4 aggressive players: {c['mean']:.0f} turns on average "
    f"(95% CI {c['lo']:.0f}-{c['hi']:.0f}, {c['alive']:.0%} alive at turn {TURNS}) against {a['mean']:.0f} "
    f"({a['lo']:.0f}-{a['hi']:.0f}); rcp's harvest fraction falls by {drop:.0%} from turn 500 to the pollution "
    f"peak (turn {turn[i_ppk]}, capital peak at turn {turn[i_cpk]}); the conservative table's median arena lives "
    f"{stats['conservative']['median']:.0f} turns and the mix's {stats['mix']['median']:.0f}; "
    f"R left at turn {TURNS} (mean over live arenas): rcp {r_end['rcp']:.3f}, conservative "
    f"{r_end['conservative']:.3f}, idle {r_end['idle']:.3f}; "
    f"ranking by mean survival, then R left: {', '.join(order)}."
)
