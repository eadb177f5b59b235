"""bdpd_jax.env.CommonsEnv: a fixed policy played through the env equals ``simulate`` with
the same policy as a ``Policy``, bit for bit; jit/vmap over keys and states; the action and
reward options; auto-reset; bad arguments."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from payloads import HEAVY

import bdpd_jax
from bdpd_jax.env import CommonsEnv

B, SEED = 3, 5


def _half(obs, mem, key):
    return 0.5 * obs["myCapacity"], mem


HALF = bdpd_jax.Policy(_half, name="half", memory_size=0)


def _config(governance: bool) -> dict:
    cfg = bdpd_jax.default_config().model_dump()  # observation noise, hidden reserve, collapse die
    cfg["players"][0]["strategy"] = HALF
    cfg["players"][1]["strategy"] = HALF
    if governance:  # a graduated ladder on a harvest cap: sanctions change wealth
        cfg["pacts"] = [{"parties": [0, 1, 2, 3], "terms": {"type": "harvest_cap", "maxHarvest": 1.125}}]
        cfg["perturbations"] = [
            {
                "id": "ladder",
                "type": "sanction_graduated",
                "trigger": {"kind": "pact_violation"},
                "payload": {"ladder": [1.0, 3.0, 10.0]},
            }
        ]
    return cfg


@functools.cache
def _simulated(governance: bool) -> bdpd_jax.Results:
    """``simulate`` of ``_config(governance)``, run once for the tests that compare with it."""
    return bdpd_jax.simulate(_config(governance), n_arenas=B, seed=SEED)


def _play(env: CommonsEnv, turns: int, actions: dict):
    keys = jax.vmap(lambda a: CommonsEnv.arena_key(SEED, a))(jnp.arange(B))
    _, st = jax.jit(jax.vmap(env.reset))(keys)
    step = jax.jit(jax.vmap(env.step_env))
    out = []
    for _ in range(turns):
        _, st, rew, dones, info = step(jnp.zeros((B, 2), jnp.uint32), st, actions)
        out.append((jax.device_get(info["record"]), jax.device_get(rew), jax.device_get(dones)))
    return out


# CI plays the ladder game (the env's turn with the governance layers and their sanctions);
# BDPD_HEAVY=1 adds the plain game: the same env code over a game without them (the family
# test below compares the plain game's numbers with simulate in CI)
GAMES = [pytest.param(True, id="ladder"), pytest.param(False, id="plain")]


@pytest.mark.heavy
@pytest.mark.parametrize("governance", GAMES if HEAVY else GAMES[:1])
def test_env_equals_simulate_bit_for_bit(governance):
    cfg = _config(governance)
    res = _simulated(governance)
    p = res.players.sort_values(["arena", "turn", "player"])
    env = CommonsEnv(cfg, learned=[0, 1])
    assert env.agents == ["agent_0", "agent_1"]
    turns = int(res.summary["turns_played"].max())
    played = _play(env, turns, {"agent_0": jnp.full((B,), 0.5), "agent_1": jnp.full((B,), 0.5)})
    for t, (rec, rew, _dones) in enumerate(played, start=1):
        for b in range(B):
            q = p[(p["arena"] == b) & (p["turn"] == t)]
            assert bool(rec.played[b]) == (len(q) > 0)
            if len(q) == 0:
                continue
            for col in ("requested", "actual", "wealth", "sanction"):
                assert np.array_equal(q[col].to_numpy(), np.asarray(getattr(rec, col))[b]), (t, b, col)
            assert rew["agent_0"][b] == rec.actual[b, 0]  # reward="harvest": what it received
    assert (p["sanction"] > 0).any() == governance  # the ladder fired (and only there)
    last = played[-1][2]
    assert np.array_equal(last["__all__"], np.ones(B, bool))  # every arena has ended
    s = res.summary.sort_values("arena")
    assert np.array_equal(s["survived"].to_numpy(), ~played[-1][0].collapsed)


def test_governance_and_learners_as_data_share_one_program():
    """A family env: the plain and the ladder game, and the ladder game with only slot 0
    learning (slot 1 plays its configured strategy and its agent's action is ignored), as
    params of one game; vmapped over the three in one trace, each equals simulate alone."""
    plain, ladder = _config(False), _config(True)
    env = CommonsEnv(plain, learned=[0, 1], family=[ladder])
    arms = [env.params_for(plain), env.params_for(ladder), env.params_for(ladder, learned=[0])]
    params = jax.tree.map(lambda *x: jnp.stack([jnp.asarray(v) for v in x]), *arms)
    keys = jax.vmap(lambda a: CommonsEnv.arena_key(SEED, a))(jnp.arange(B))
    own = jnp.asarray([0.5, 0.5, 1.0])  # agent_1's action: HALF's where it learns, ignored in arm 2
    traces = []

    @jax.jit
    def run(params, own):
        traces.append(1)

        def arm(p, a1):
            _, st = jax.vmap(env.reset, in_axes=(0, None))(keys, p)
            acts = {"agent_0": jnp.full((B,), 0.5), "agent_1": jnp.full((B,), a1)}

            def turn(st, _):
                _, st, _, _, info = jax.vmap(env.step_env)(jnp.zeros((B, 2), jnp.uint32), st, acts)
                return st, info["record"]

            return jax.lax.scan(turn, st, None, length=int(plain["model"]["maxTurns"]))[1]

        return jax.vmap(arm)(params, own)

    rec = jax.device_get(run(params, own))
    assert len(traces) == 1
    for i, governance in enumerate([False, True, True]):
        p = _simulated(governance).players.sort_values(["arena", "turn", "player"])
        for col in ("actual", "wealth", "sanction"):
            got = np.asarray(getattr(rec, col))[i]  # [T, B, N]
            played = np.asarray(rec.played)[i]
            want = np.full(got.shape, np.nan)
            want[p["turn"].to_numpy() - 1, p["arena"].to_numpy(), p["player"].to_numpy()] = p[col].to_numpy()
            assert np.array_equal(got[played], want[played]), (i, col)
    with pytest.raises(ValueError, match="learned"):
        env.params_for(ladder, learned=[2])
    with pytest.raises(ValueError, match="family"):
        CommonsEnv(plain, learned=[0, 1]).params_for(ladder)


@pytest.fixture(scope="module")
def env() -> CommonsEnv:
    return CommonsEnv(bdpd_jax.default_config(), learned=[0, 2], action="discrete", n_actions=5, reward="wealth")


@pytest.fixture(scope="module")
def batched(env):
    """``env``'s reset and step vmapped over 4 arenas and jitted: compiled once for the tests."""
    return jax.jit(jax.vmap(env.reset)), jax.jit(jax.vmap(env.step))


@pytest.fixture(scope="module")
def first(batched):
    """Turn 1 of 4 arenas (the shared batched reset): the observations and the states."""
    return batched[0](jax.random.split(jax.random.key(0), 4))  # typed keys, as the other tests


def test_spaces_and_observations(env, first):
    assert env.action_space("agent_2").n == 5
    obs, _ = first
    dim = env.observation_space("agent_0").shape[0]
    assert dim == 2 * len(env.obs_names) and obs["agent_0"].shape == (4, dim)
    seen = np.asarray(obs["agent_0"][0, dim // 2 :])
    names = env.obs_names
    assert seen[names.index("regenRate")] == 0.0  # hidden by the seed's observability
    assert seen[names.index("commonsStock")] == 1.0 and seen[names.index("othersWealth[0]")] == 0.0  # not oneself
    assert seen[names.index("othersHarvest[1]")] == 0.0  # no last harvest on turn 1


def test_discrete_top_action_is_full_capacity_and_wealth_reward(env, batched):
    """On the batched program of the tests below: the top action requests the whole capacity,
    and the wealth reward is the change of wealth over the turn (turn 1: no arena resets)."""
    reset, step = batched
    keys = jax.random.split(jax.random.key(1), 4)
    obs, st = reset(keys)
    acts = {"agent_0": jnp.full((4,), 4), "agent_2": jnp.full((4,), 2)}
    one = jax.tree.map(lambda x: x[0], st)
    req = env.requests(one, {"agent_0": jnp.asarray(4), "agent_2": jnp.asarray(2)})
    cap = np.asarray(obs["agent_0"])[0, env.obs_names.index("myCapacity")]  # the seed shows own capacity exactly
    assert float(req[0]) == pytest.approx(float(cap)) and float(req[1]) == 0.0
    _, st2, rew, dones, _ = step(keys, st, acts)
    assert not np.asarray(dones["__all__"]).any()
    gain = np.asarray(st2.arena.wealth[:, 2] - st.arena.wealth[:, 2])
    np.testing.assert_allclose(np.asarray(rew["agent_2"]), gain, rtol=1e-6)
    assert (gain != 0).any()  # agent_2 harvested half its capacity


def test_vmap_auto_reset_and_determinism(batched):
    keys = jax.random.split(jax.random.key(7), 4)
    reset, step = batched
    acts = {"agent_0": jnp.full((4,), 4), "agent_2": jnp.full((4,), 4)}  # greedy: the commons collapses

    def run():
        _, st = reset(keys)
        ends = np.zeros(4, bool)
        steps = []
        for t in range(40):
            _, st, rew, dones, _ = step(jax.random.split(jax.random.key(t), 4), st, acts)
            ends |= np.asarray(dones["__all__"])
            steps.append(np.asarray(st.step))
        return ends, np.stack(steps), np.asarray(st.arena.wealth)

    a, b = run(), run()
    assert a[0].all()  # every arena ended at least once in 40 turns
    assert (a[1] == 0).any()  # ... and was reset (the step counter restarts)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)  # same keys -> bit-identical


def test_bad_arguments_name_the_field():
    cfg = bdpd_jax.default_config()
    for kw, field in (
        ({"learned": [4]}, "learned"),
        ({"learned": [0, 0]}, "learned"),
        ({"action": "box"}, "action"),
        ({"reward": "gain"}, "reward"),
        ({"action": "discrete", "n_actions": 1}, "n_actions"),
    ):
        with pytest.raises(ValueError, match=field):
            CommonsEnv(cfg, **kw)


@pytest.mark.parametrize(
    ("actions", "match"),
    [
        ({"agent_0": 2**40, "agent_2": 1}, r"actions\['agent_0'\]: 1099511627776 is outside int32"),
        ({"agent_0": 1, "agent_2": None}, r"actions\['agent_2'\]: must be a number .* got None"),
        (
            {"agent_0": jnp.zeros(3, jnp.int32), "agent_2": 1},
            r"actions\['agent_0'\]: must be one value .* shape \(3,\)",
        ),
        ({"agent_0": 1, "agent_2": np.zeros((2, 2))}, r"actions\['agent_2'\]: must be one value .* shape \(2, 2\)"),
        ({"agent_0": np.int64(2**40), "agent_2": 1}, r"actions\['agent_0'\]: 1099511627776 is outside int32"),
        ({"agent_0": "1", "agent_2": 1}, r"actions\['agent_0'\]: must be a number .* got '1'"),
        ({"agent_0": jnp.asarray(True), "agent_2": 1}, r"actions\['agent_0'\]: must hold a number .* bool"),
        ([1, 2], r"actions: must be a dict keyed by agent \['agent_0', 'agent_2'\], got \[1, 2\]"),
        ({"agent_0": 1}, r"actions: no action for \['agent_2'\]"),
        ({"agent_0": 1, "agent_2": 1, "agent_1": 1}, r"actions: unknown agent\(s\) \['agent_1'\]"),
    ],
)
def test_step_checks_each_agents_action_at_the_edge(env, first, actions, match):
    """Issue 35: a bad action is a ValueError naming the agent and the value, raised before
    JAX sees it (nothing runs), from ``step`` and from ``step_env``/``requests``."""
    st = jax.tree.map(lambda x: x[0], first[1])  # one arena's state
    with pytest.raises(ValueError, match=match):
        env.step(jax.random.key(0), st, actions)
    with pytest.raises(ValueError, match=match):
        env.requests(st, actions)


def test_a_vmapped_step_checks_one_arenas_action(env, first):
    keys = jax.random.split(jax.random.key(0), 4)
    st = first[1]
    acts = {"agent_0": jnp.zeros((4, 3), jnp.int32), "agent_2": jnp.zeros((4,), jnp.int32)}
    with pytest.raises(ValueError, match=r"actions\['agent_0'\]: must be one value .* shape \(3,\)"):
        jax.vmap(env.step)(keys, st, acts)


def test_jaxmarl_wrappers_import():
    """The README's promise that JaxMARL's wrappers apply: gymnax (under them) needs six."""
    from jaxmarl.wrappers.baselines import LogWrapper

    assert callable(LogWrapper)


def test_import_prints_nothing_and_keeps_the_callers_streams():
    """JaxMARL prints "Importing submoduled environments..." and resets sys.stdout/sys.stderr
    when imported; importing bdpd_jax.env does neither (a fresh process: jaxmarl not yet loaded)."""
    import subprocess
    import sys

    code = (
        "import io, sys; out, err = io.StringIO(), io.StringIO(); sys.stdout, sys.stderr = out, err; "
        "import bdpd_jax.env; kept = sys.stdout is out and sys.stderr is err; "
        "sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__; print(kept, repr(out.getvalue()))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "True ''\n", r.stdout
