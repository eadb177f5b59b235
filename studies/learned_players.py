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
# (model and observability) in three tables:
#
# - **4 learned**, no governance;
# - **4 learned + ladder**: a `harvest_cap` pact at the sustainable share and a
#   `sanction_graduated` ladder 1-3-10 on every violation;
# - **2 learned + 2 aggressive** built-in players.
#
# Actions are 11 fractions of capacity; rewards are the change in wealth (so fines count).
# The learners' survival, harvest and Gini are compared with built-in tables on the same
# configs.

# %%

import matplotlib

matplotlib.use("Agg")
import equinox as eqx  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402

import bdpd_jax  # noqa: E402
from bdpd_jax.env import CommonsEnv  # noqa: E402
from bdpd_jax.study_output import figures_dir, save_figure, step, study_size  # noqa: E402

SIZE = study_size(256)  # parallel arenas per update (CI: small)
UPDATES = 120 if SIZE >= 64 else 3
EPOCHS, GAMMA, LAMBDA, CLIP, LR = 4, 0.99, 0.95, 0.2, 3e-3
N_ACT, N = 11, 4
OUT = figures_dir()

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


def table(strategies: list[str], ladder: bool) -> dict:
    return {
        "model": SEED["model"],
        "observability": SEED["observability"],
        "players": [{"strategy": s} for s in strategies],
        **(LADDER if ladder else {}),
    }


ARMS = {  # name: (config, learned slots); a learned slot's configured strategy is replaced by the learner
    "4 learned": (table(["conservative"] * 4, False), [0, 1, 2, 3]),
    "4 learned + ladder": (table(["conservative"] * 4, True), [0, 1, 2, 3]),
    "2 learned + 2 aggressive": (table(["conservative", "conservative", "aggressive", "aggressive"], False), [0, 1]),
}


# %% [markdown]
# ## A compact independent PPO


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


def trainer(env: CommonsEnv):
    agents, E, T = env.agents, SIZE, int(env.config.model.max_turns)
    dim = env.observation_space(agents[0]).shape[0]
    opt = optax.adam(LR)  # elementwise: one Adam per agent's parameters
    nets0 = eqx.filter_vmap(lambda k: ActorCritic(dim, k))(jax.random.split(jax.random.key(0), len(agents)))
    params0, static = eqx.partition(nets0, eqx.is_array)  # arrays are carried; the rest is code

    def rollout(nets, st, obs, key):
        def one(carry, k):
            st, obs = carry
            x = jnp.stack([obs[a] for a in agents])  # [K, E, D]
            logits, value = apply(nets, x)
            ka, ks = jax.random.split(k)
            act = jax.random.categorical(ka, logits)
            logp = jnp.take_along_axis(jax.nn.log_softmax(logits), act[..., None], -1)[..., 0]
            obs2, st2, rew, dones, _ = jax.vmap(env.step)(
                jax.random.split(ks, E), st, {a: act[i] for i, a in enumerate(agents)}
            )
            r = jnp.stack([rew[a] for a in agents])
            return (st2, obs2), (x, act, logp, value, r, dones["__all__"])

        (st, obs), traj = jax.lax.scan(one, (st, obs), jax.random.split(key, T))
        return st, obs, traj

    def loss(net, x, act, logp0, adv, ret):
        logits, v = jax.vmap(net)(x)
        logp = jnp.take_along_axis(jax.nn.log_softmax(logits), act[:, None], -1)[:, 0]
        ratio = jnp.exp(logp - logp0)
        pg = -jnp.minimum(ratio * adv, jnp.clip(ratio, 1 - CLIP, 1 + CLIP) * adv).mean()
        ent = -(jax.nn.softmax(logits) * jax.nn.log_softmax(logits)).sum(-1).mean()
        return pg + 0.5 * ((v - ret) ** 2).mean() - 0.01 * ent

    def update(carry, key):
        params, opt_state, st, obs = carry
        nets = eqx.combine(params, static)
        st, obs, (x, act, logp, value, r, done) = rollout(nets, st, obs, key)
        _, last = apply(nets, jnp.stack([obs[a] for a in agents]))

        def gae(next_, t):  # reverse scan over turns: (advantage, next value)
            adv, nv = next_
            d = 1.0 - done[t].astype(jnp.float32)
            delta = r[t] + GAMMA * nv * d - value[t]
            adv = delta + GAMMA * LAMBDA * d * adv
            return (adv, value[t]), adv

        _, adv = jax.lax.scan(gae, (jnp.zeros_like(last), last), jnp.arange(T), reverse=True)
        ret = adv + value  # [T, K, E]
        adv = (adv - adv.mean((0, 2), keepdims=True)) / (adv.std((0, 2), keepdims=True) + 1e-8)
        flat = lambda y: jnp.moveaxis(y, 1, 0).reshape(len(agents), T * E, *y.shape[3:])  # noqa: E731
        batch = tuple(flat(y) for y in (x, act, logp, adv, ret))
        grad = eqx.filter_vmap(eqx.filter_grad(loss))

        def epoch(c, _):
            params, opt_state = c
            g = eqx.filter(grad(eqx.combine(params, static), *batch), eqx.is_array)
            upd, opt_state = opt.update(g, opt_state, params)
            return (eqx.apply_updates(params, upd), opt_state), None

        (params, opt_state), _ = jax.lax.scan(epoch, (params, opt_state), None, length=EPOCHS)
        episodes = jnp.maximum(done.sum(), 1)
        return (params, opt_state, st, obs), r.sum((0, 2)) / episodes  # mean return per agent per episode

    @jax.jit
    def train(key):
        k1, k2 = jax.random.split(key)
        obs, st = jax.vmap(env.reset)(jax.random.split(k1, E))
        (params, *_), curve = jax.lax.scan(update, (params0, opt.init(params0), st, obs), jax.random.split(k2, UPDATES))
        return params, curve

    @jax.jit
    def evaluate(params, key):  # greedy play of whole games on fresh arenas
        nets = eqx.combine(params, static)
        obs, st = jax.vmap(env.reset)(jax.random.split(key, E))

        def one(carry, _):
            st, obs = carry
            logits, _ = apply(nets, jnp.stack([obs[a] for a in agents]))
            act = jnp.argmax(logits, -1)
            obs2, st2, _, _, info = jax.vmap(env.step_env)(
                jax.random.split(key, E), st, {a: act[i] for i, a in enumerate(agents)}
            )
            return (st2, obs2), info["record"]

        _, rec = jax.lax.scan(one, (st, obs), None, length=T)
        return rec

    return train, evaluate


def gini(g: np.ndarray) -> np.ndarray:
    """Gini of each row's (non-negative) gains; 0 where the total is 0."""
    s = np.sort(np.maximum(g, 0.0), axis=1)
    n, tot = s.shape[1], s.sum(axis=1)
    ranks = np.arange(1, n + 1)
    return np.where(tot > 0, 2 * (s * ranks).sum(1) / (n * np.where(tot > 0, tot, 1)) - (n + 1) / n, 0.0)


def outcome(played, actual, collapsed, slots) -> dict:
    """played [T, 1, E], actual [T, N, E], collapsed [T, E] -> survival, harvest per learner, Gini."""
    harvest = np.where(played, actual, 0.0)
    per_player = harvest.sum(0)  # [N, E]
    return {
        "survival": float((~collapsed[-1]).mean()),
        "harvest": float(per_player[slots].mean()),
        "gini": float(gini(per_player.T).mean()),
    }


# %% [markdown]
# ## Train, evaluate, and the built-in tables on the same configs

# %%
curves, rows = {}, []
step(f"training and evaluating {len(ARMS)} arms")
for name, (cfg, slots) in ARMS.items():
    env = CommonsEnv(cfg, learned=slots, action="discrete", n_actions=N_ACT, reward="wealth")
    train, evaluate = trainer(env)
    nets, curve = train(jax.random.key(0))
    curves[name] = np.asarray(curve).mean(axis=1)
    rec = jax.device_get(evaluate(nets, jax.random.key(1)))
    played = np.asarray(rec.played)  # [T, E]
    actual = np.asarray(rec.actual).transpose(0, 2, 1)  # [T, E, N] -> [T, N, E]
    rows.append(
        {"table": name, "players": "learned", **outcome(played[:, None, :], actual, np.asarray(rec.collapsed), slots)}
    )
    for heur in ("conservative", "aggressive"):
        h = {**cfg, "players": [{"strategy": heur} if i in slots else p for i, p in enumerate(cfg["players"])]}
        res = bdpd_jax.simulate(h, n_arenas=SIZE, seed=1, progress=False)
        p = res.players
        tot = p.groupby(["arena", "player"]).actual.sum().unstack().to_numpy()  # [E, N]
        rows.append(
            {
                "table": name,
                "players": heur,
                "survival": float(res.summary.survived.mean()),
                "harvest": float(tot[:, slots].mean()),
                "gini": float(gini(tot).mean()),
            }
        )

import pandas as pd  # noqa: E402

report = pd.DataFrame(rows)
print(report.round(3).to_string(index=False))

# %%
fig, ax = plt.subplots(1, 2, figsize=(12, 4))
for name, c in curves.items():
    ax[0].plot(c, label=name)
ax[0].set(xlabel="PPO update", ylabel="mean return per learner per game (wealth gained)", title="learning curves")
ax[0].legend()
piv = report.pivot(index="table", columns="players", values="survival")
piv.plot.bar(ax=ax[1], rot=0)
ax[1].set(ylabel="survival", title="learned vs built-in players")
fig.tight_layout()
save_figure(fig, "learned_players.png", dpi=110)

# %% [markdown]
# ## Conclusion (computed)

# %%
lines = [f"{UPDATES} PPO updates of {SIZE} arenas x 30 turns per table."]
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
gain = curves["4 learned"][-1] - curves["4 learned"][0]
surv = report[report.players == "learned"].set_index("table")["survival"]
lines.append(
    f"Without governance the learners' return moved by {gain:+.1f} over training; with the ladder the "
    f"learned survival is {surv['4 learned + ladder']:.0%} against {surv['4 learned']:.0%} without."
)
print("\n".join(lines))
