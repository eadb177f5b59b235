"""Environment benchmark: agent-steps per second of ``bdpd_jax.env.CommonsEnv`` (4 learned
players on the seed's logistic payload, random discrete actions, auto-reset) against
JaxMARL's own ``MPE_simple_spread_v3`` (3 agents) on the same machine, same loop.

    .venv/bin/python bench/env.py                  # 1024 envs x 128 steps
    .venv/bin/python bench/env.py --envs 64 --steps 32   # smoke

Each env runs ``jit(scan(vmap(env.step)))`` over ``--steps`` steps of ``--envs`` envs with
uniform random actions, compiled ahead (``lower().compile()``, reported apart) and timed as
the best of ``--repeat`` runs with ``block_until_ready``. agent-steps = envs x steps x agents.
Figures: bench/README.md, "Environment".
"""

from __future__ import annotations

import time

from harness import Figures, compile_seconds, parser, setup


def measure(env, envs: int, steps: int, repeat: int) -> tuple[float, float]:
    import jax
    import jax.numpy as jnp

    agents = env.agents

    def run(key):
        obs, st = jax.vmap(env.reset)(jax.random.split(key, envs))

        def one(st, k):
            ks = jax.random.split(k, len(agents) + 1)
            acts = {
                a: jax.vmap(env.action_space(a).sample)(jax.random.split(ks[i], envs)) for i, a in enumerate(agents)
            }
            _, st, rew, _, _ = jax.vmap(env.step)(jax.random.split(ks[-1], envs), st, acts)
            return st, sum(jnp.sum(r) for r in rew.values())

        return jax.lax.scan(one, st, jax.random.split(key, steps))[1].sum()

    compile_s, f = compile_seconds(jax.jit(run), jax.random.key(0))
    best = float("inf")
    for i in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(f(jax.random.key(i + 1)))
        best = min(best, time.perf_counter() - t0)
    return envs * steps * len(agents) / best, compile_s


def main() -> None:
    ap = parser(__doc__, envs=1024, steps=128, repeat=3)
    a = ap.parse_args()
    setup(compile_cache=False)
    import jaxmarl

    import bdpd_jax
    from bdpd_jax.env import CommonsEnv

    figs = Figures("env", a.json)
    ours = CommonsEnv(bdpd_jax.default_config(), action="discrete", n_actions=11)
    peer = jaxmarl.make("MPE_simple_spread_v3")
    for name, env in (("bdpd_jax CommonsEnv (4 agents)", ours), ("JaxMARL MPE_simple_spread_v3 (3 agents)", peer)):
        rate, comp = measure(env, a.envs, a.steps, a.repeat)
        print(f"{name}: {a.envs} envs x {a.steps} steps: {rate:,.0f} agent-steps/s (compile {comp:.1f} s)")
        figs.emit(name, envs=a.envs, steps=a.steps, agent_steps_per_s=rate, compile_s=comp)


if __name__ == "__main__":
    main()
