# ---
# jupytext:
#   text_representation:
#     extension: .py
#     format_name: percent
# ---

# %% [markdown]
# # Learned players: independent PPO on the seed's commons
#
# `bdpd_jax.env.CommonsEnv` turns an arena into a JaxMARL multi-agent environment. Here
# independent PPO learners (one small actor-critic per slot, no parameter sharing, optax's
# Adam; JaxMARL's IPPO is a script in its repository, not part of the installed package, so a
# compact PPO is written below on optax and equinox) play the seed's logistic commons
# (model and observability) in three tables of the same four players:
#
# - **4 learned**, no governance;
# - **4 learned + ladder**: a `harvest_cap` pact at the sustainable share and a
#   `sanction_graduated` ladder 1-3-10 on every violation;
# - **2 learned + 2 aggressive** built-in players.
#
# The three tables are one game: the env is built with the others as its `family`, and
# `CommonsEnv.params_for` gives each table's numbers (governance, and which slots learn) as
# params leaves of the same shapes. So every table and every seed trains in ONE compiled
# program (`vmap` over tables x seeds), and the built-in players are evaluated by the same
# evaluation program, on the same arenas (same keys) as the learners.
#
# Actions are 11 fractions of capacity; rewards are the change in wealth (so fines count).
# The figure shows each table's learning curves (one line per seed, their mean in bold)
# against the built-in strategies' return on the same config, and the survival of
# learned and built-in players.
#
# Full size (the default: 256 arenas per update, 120 updates, 4 seeds) ran in 30 min (9.8 CPU
# min) on a shared 2-core machine; `BDPD_STUDY_SIZE=16` (CI: 3 updates, 2 seeds) in ~23 s.

# %%

import matplotlib

matplotlib.use("Agg")
import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
import pandas as pd  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax.env import CommonsEnv  # noqa: E402
from bdpd_jax.study_output import figures_dir, save_figure, step, study_size  # noqa: E402

SIZE = study_size(256)  # parallel arenas per update (CI: small)
FULL = SIZE >= 64
UPDATES = 120 if FULL else 3
SEEDS = 4 if FULL else 2  # independent trainings per table (vmapped)
EPOCHS, GAMMA, LAMBDA, CLIP, LR = 4, 0.99, 0.95, 0.2, 3e-3
N_ACT, N = 11, 4
OUT = figures_dir()
HEURISTICS = ("conservative", "aggressive")

SEED = bdpd_jax.default_config().model_dump(exclude={"players"})
share = SEED["model"]["regenRate"] * SEED["model"]["commonsCapacity"] / 4 / N
LADDER = {
    "pacts": [{"parties": list(range(N)), "terms": {"type": "harvest_cap", "maxHarvest": share}}],
    "perturbations": [
        {
            "id": "ladder",
            "type": "sanction_graduated",
            "trigger": {"kind": "pact_violation"},
            "payload": {"ladder": [1.0, 3.0, 10.0]},
        }
    ],
}
TABLE = ["conservative", "conservative", "aggressive", "aggressive"]  # the configured players of every table


def table(ladder: bool, strategies: list[str] = TABLE) -> dict:
    return {
        "model": SEED["model"],
        "observability": SEED["observability"],
        "players": [{"strategy": s} for s in strategies],
        **(LADDER if ladder else {}),
    }


ARMS = {  # name: (config, learned slots); a learned slot's configured strategy is replaced by the learner
    "4 learned": (table(False), [0, 1, 2, 3]),
    "4 learned + ladder": (table(True), [0, 1, 2, 3]),
    "2 learned + 2 aggressive": (table(False), [0, 1]),
}
# one game for every table: the first table's env with the others as its family
configs = [cfg for cfg, _ in ARMS.values()]
ENV = CommonsEnv(configs[0], action="discrete", n_actions=N_ACT, reward="wealth", family=configs[1:])
AGENTS = ENV.agents  # every slot is an agent; a table's own learners are data (LEARNS)
# stacked in numpy: stacking each leaf with jnp would compile one small program per leaf shape
stack = lambda trees: jax.tree.map(lambda *x: np.stack([np.asarray(v) for v in x]), *trees)  # noqa: E731
PARAMS = stack([ENV.params_for(cfg, slots) for cfg, slots in ARMS.values()])  # [A, ...]
LEARNS = jnp.asarray([[i in slots for i in range(N)] for _, slots in ARMS.values()])  # bool[A, N]
# the built-in baselines: each table with its learned slots playing a built-in strategy (no learner)
BUILTIN = stack(
    [
        ENV.params_for(
            {**cfg, "players": [{"strategy": h} if i in slots else p for i, p in enumerate(cfg["players"])]}, []
        )
        for h in HEURISTICS
        for cfg, slots in ARMS.values()
    ]
)  # [H * A, ...], heuristic-major


# %% [markdown]
# ## A compact independent PPO
#
# Written for one table and one seed: `train(params, learns, key)` takes the table's numbers
# and which slots learn as data (a slot that does not learn plays its built-in strategy: its
# agent's actions are ignored by the env and its gradients are zeroed), and is vmapped over
# seeds and tables below.


# %%
class ActorCritic(eqx.Module):
    pi: eqx.nn.MLP
    v: eqx.nn.MLP

    def __init__(self, dim: int, key):
        k1, k2 = jax.random.split(key)
        self.pi = eqx.nn.MLP(dim, N_ACT, 64, 2, activation=jax.nn.tanh, key=k1)
        self.v = eqx.nn.MLP(dim, "scalar", 64, 2, activation=jax.nn.tanh, key=k2)

    def __call__(self, x):
        x = jnp.sign(x) * jnp.log1p(jnp.abs(x))  # symlog: stocks of 150 and flags of 1 on one scale
        return self.pi(x), self.v(x)


def apply(nets, obs):  # nets: one per agent (leading axis K); obs [K, E, D] -> logits [K, E, A], values [K, E]
    return eqx.filter_vmap(lambda net, o: jax.vmap(net)(o))(nets, obs)


E, T, K = SIZE, int(ENV.config.model.max_turns), len(AGENTS)
DIM = ENV.observation_space(AGENTS[0]).shape[0]
OPT = optax.adam(LR)  # elementwise: one Adam per agent's parameters
_, STATIC = eqx.partition(  # the nets' structure only: shapes, no weights computed
    eqx.filter_eval_shape(
        lambda: eqx.filter_vmap(lambda k: ActorCritic(DIM, k))(jax.random.split(jax.random.key(0), K))
    ),
    lambda x: isinstance(x, jax.ShapeDtypeStruct),
)
obs_of = lambda obs: jnp.stack([obs[a] for a in AGENTS])  # noqa: E731  [K, E, D]
acts_of = lambda act: {a: act[i] for i, a in enumerate(AGENTS)}  # noqa: E731


def play(nets, params, key, greedy):
    """One whole game on each of E fresh arenas of a table (``maxTurns`` turns from reset;
    an arena that ended stays frozen): -> per turn the inputs, actions, their log-probability,
    the values, rewards, whether the arena was live when the agents acted [T, K, E], and the
    turns' records. ``greedy`` (traced bool): the most likely action, else a sample."""
    obs, st = jax.vmap(ENV.reset, in_axes=(0, None))(jax.random.split(key, E), params)

    def one(carry, k):
        st, obs = carry
        x = obs_of(obs)
        logits, value = apply(nets, x)
        act = jnp.where(greedy, jnp.argmax(logits, -1), jax.random.categorical(k, logits))
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits), act[..., None], -1)[..., 0]
        live = jnp.broadcast_to(~st.done, value.shape)
        obs2, st2, rew, _, info = jax.vmap(ENV.step_env)(jax.random.split(k, E), st, acts_of(act))
        r = jnp.stack([rew[a] for a in AGENTS])
        return (st2, obs2), ((x, act, logp, value, r, live), info["record"])

    _, (traj, rec) = jax.lax.scan(one, (st, obs), jax.random.split(key, T))
    return traj, rec


def loss(net, x, act, logp0, adv, ret, live):
    logits, v = jax.vmap(net)(x)
    logp = jnp.take_along_axis(jax.nn.log_softmax(logits), act[:, None], -1)[:, 0]
    ratio = jnp.exp(logp - logp0)
    w = live / jnp.maximum(live.sum(), 1.0)  # the turns after an arena ended do not count
    pg = -(w * jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - CLIP, 1 + CLIP) * adv)).sum()
    ent = -(w * (jax.nn.softmax(logits) * jax.nn.log_softmax(logits)).sum(-1)).sum()
    return pg + 0.5 * (w * (v - ret) ** 2).sum() - 0.01 * ent


def train(params, learns, key, eval_key):
    """One table (or built-in row: no slot learns), one seed: UPDATES PPO updates, then one
    greedy game on the arenas of ``eval_key`` (the same for every row) without learning. ->
    per iteration (UPDATES + 1): mean return per agent per game [K], and of the games each
    player's harvest [E, N], each agent's return [K, E] and whether the arena survived [E]."""
    k0, k1 = jax.random.split(key)
    params0 = eqx.filter(eqx.filter_vmap(lambda k: ActorCritic(DIM, k))(jax.random.split(k0, K)), eqx.is_array)

    def update(carry, xs):
        (net_arrays, opt_state), (key, greedy) = carry, xs
        nets = eqx.combine(net_arrays, STATIC)
        (x, act, logp, value, r, live), rec = play(nets, params, key, greedy)
        live = live.astype(jnp.float32)

        def gae(adv, t):  # reverse scan over turns; a game's last turn (or its end) bootstraps 0
            nxt = jnp.minimum(t + 1, T - 1)
            nl = jnp.where(t + 1 < T, live[nxt], 0.0)
            adv = (r[t] + GAMMA * nl * value[nxt] - value[t] + GAMMA * LAMBDA * nl * adv) * live[t]
            return adv, adv

        _, adv = jax.lax.scan(gae, jnp.zeros_like(value[0]), jnp.arange(T), reverse=True)
        ret = adv + value  # [T, K, E]
        n = jnp.maximum(live.sum((0, 2), keepdims=True), 1.0)
        mu = (adv * live).sum((0, 2), keepdims=True) / n
        sd = jnp.sqrt((((adv - mu) * live) ** 2).sum((0, 2), keepdims=True) / n)
        adv = (adv - mu) / (sd + 1e-8)
        flat = lambda y: jnp.moveaxis(y, 1, 0).reshape(K, T * E, *y.shape[3:])  # noqa: E731
        batch = tuple(flat(y) for y in (x, act, logp, adv, ret, live))
        grad = eqx.filter_vmap(eqx.filter_grad(loss))
        learn = (learns & ~greedy).astype(jnp.float32)  # a built-in's slot and the evaluation learn nothing

        def epoch(c, _):
            net_arrays, opt_state = c
            g = eqx.filter(grad(eqx.combine(net_arrays, STATIC), *batch), eqx.is_array)
            g = jax.tree.map(lambda y: y * learn.reshape(-1, *[1] * (y.ndim - 1)), g)
            upd, opt_state = OPT.update(g, opt_state, net_arrays)
            return (eqx.apply_updates(net_arrays, upd), opt_state), None

        (net_arrays, opt_state), _ = jax.lax.scan(epoch, (net_arrays, opt_state), None, length=EPOCHS)
        harvest = jnp.where(rec.played[..., None], rec.actual, 0.0).sum(0)  # [E, N]
        games = (r.sum(0).mean(-1), harvest, r.sum(0), ~rec.collapsed[-1])
        return (net_arrays, opt_state), games

    keys = jnp.concatenate([jax.random.split(k1, UPDATES), eval_key[None]])
    greedy = jnp.arange(UPDATES + 1) == UPDATES
    _, games = jax.lax.scan(update, (params0, OPT.init(params0)), (keys, greedy))
    return games


A = len(ARMS)
ROWS = [(a, "learned", s) for a in range(A) for s in range(SEEDS)] + [(a, h, 0) for h in HEURISTICS for a in range(A)]
take = lambda tree, idx: jax.tree.map(lambda x: x[jnp.asarray(idx)], tree)  # noqa: E731


@jax.jit
def study(params, learns, builtin, key):
    """Every table x every seed, and every built-in row, as rows of one vmapped program."""
    learned = [a for a, who, _ in ROWS if who == "learned"]
    rows = jax.tree.map(lambda u, v: jnp.concatenate([u, v]), take(params, learned), builtin)
    masks = jnp.concatenate([learns[jnp.asarray(learned)], jnp.zeros((len(ROWS) - len(learned), N), bool)])
    k_train, k_eval = jax.random.split(key)
    seeds = jax.random.split(k_train, SEEDS)[jnp.asarray([s for _, _, s in ROWS])]
    return jax.vmap(train, in_axes=(0, 0, 0, None))(rows, masks, seeds, k_eval)


def gini(g: np.ndarray) -> np.ndarray:
    """Gini of each row's (non-negative) gains; 0 where the total is 0."""
    s = np.sort(np.maximum(g, 0.0), axis=1)
    n, tot = s.shape[1], s.sum(axis=1)
    ranks = np.arange(1, n + 1)
    return np.where(tot > 0, 2 * (s * ranks).sum(1) / (n * np.where(tot > 0, tot, 1)) - (n + 1) / n, 0.0)


# %% [markdown]
# ## Train every table and seed at once, then evaluate learned and built-in players
#
# The built-in rows (each table's learned slots playing `conservative` or `aggressive`) run
# in the same program with no slot learning; every row's last game is greedy and played on
# the same arenas (one evaluation key), so learners and built-ins meet the same draws.

# %%
step(f"{A} tables x {SEEDS} seeds ({UPDATES} PPO updates of {SIZE} arenas) and the built-ins: one program")
ret_curve, harvest, ret, survived = jax.device_get(study(PARAMS, LEARNS, BUILTIN, jax.random.key(0)))
learns = np.asarray(LEARNS)
curves = {  # [S, U]: each seed's mean return per learner per game, over training
    name: np.asarray(ret_curve)[a * SEEDS : (a + 1) * SEEDS, :UPDATES][..., learns[a]].mean(-1)
    for a, name in enumerate(ARMS)
}
rows = []
for i, (a, who, s) in enumerate(ROWS):
    name, (_, slots) = list(ARMS.items())[a]
    h = np.asarray(harvest[i, -1])  # [E, N], the greedy game
    rows.append(
        {
            "table": name,
            "players": who,
            "seed": s,
            "survival": float(np.asarray(survived[i, -1]).mean()),
            "harvest": float(h[:, slots].mean()),
            "return": float(np.asarray(ret[i, -1])[slots].mean()),
            "gini": float(gini(h).mean()),
        }
    )
runs = pd.DataFrame(rows)
report = runs.groupby(["table", "players"], sort=False)[["survival", "harvest", "return", "gini"]].mean().reset_index()
print(report.round(3).to_string(index=False))

# %%
fig, ax = plt.subplots(1, A + 1, figsize=(4.2 * (A + 1), 4))
colors = {"conservative": "tab:green", "aggressive": "tab:red"}
for a, (name, c) in enumerate(curves.items()):
    x = np.arange(1, c.shape[1] + 1)
    for s in range(SEEDS):
        ax[a].plot(x, c[s], color="tab:blue", alpha=0.35, lw=0.8)
    ax[a].plot(x, c.mean(0), color="tab:blue", lw=2, label=f"PPO learners (mean of {SEEDS} seeds)")
    r = report[report.table == name].set_index("players")
    for h in HEURISTICS:
        ax[a].axhline(r.loc[h, "return"], color=colors[h], ls="--", label=f"built-in {h}")
    ax[a].axhline(r.loc["learned", "return"], color="tab:blue", ls=":", label="learners, greedy")
    ax[a].set(xlabel="PPO update", title=name)
ax[0].set_ylabel("return per learned slot per game (wealth gained)")
ax[0].legend(fontsize=8)
piv = report.pivot(index="table", columns="players", values="survival").loc[list(ARMS), ["learned", *HEURISTICS]]
piv.plot.bar(ax=ax[A], rot=10, color=["tab:blue", *(colors[h] for h in HEURISTICS)])
ax[A].set(ylabel="survival", title="learned vs built-in players")
fig.tight_layout()
save_figure(fig, "learned_players.png", dpi=110)

# %% [markdown]
# ## Conclusion (computed)

# %%
lines = [f"{UPDATES} PPO updates of {SIZE} arenas x {T} turns per table, {SEEDS} seeds, one compiled program."]
for name in ARMS:
    r = report[report.table == name].set_index("players")
    best_h = r.drop(index="learned")["harvest"].idxmax()
    sv, hv = r["survival"], r["harvest"]
    lines.append(
        f"{name}: learners keep {sv['learned']:.0%} of commons alive (conservative "
        f"{sv['conservative']:.0%}, aggressive {sv['aggressive']:.0%}), harvest {hv['learned']:.1f} per "
        f"learner per game against {hv[best_h]:.1f} for the best built-in ({best_h}), "
        f"Gini {r.loc['learned', 'gini']:.2f}."
    )
c = curves["4 learned"].mean(0)
surv = report[report.players == "learned"].set_index("table")["survival"]
lines.append(
    f"Without governance the learners' return moved by {c[-1] - c[0]:+.1f} over training; with the ladder the "
    f"learned survival is {surv['4 learned + ladder']:.0%} against {surv['4 learned']:.0%} without."
)
print("\n".join(lines))
