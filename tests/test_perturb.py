"""Perturbations (Table A.1): each type against the plain-Python reference turn by turn,
trigger semantics, same-turn order, strategy overrides, config-time rejection, the
owner-fired kernel, the Results frame, and one compile for a shock size x timing sweep."""

from __future__ import annotations

import copy
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference_perturb import RefPerturbArena
from test_reference import assert_turn_matches, compiled, draws, successes

from bdpd_jax import simulate
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.kernels import rng
from bdpd_jax.kernels.perturb import TYPES, apply_perturbation
from bdpd_jax.kernels.turn import begin, step
from bdpd_jax.prepare.game import broadcast_batch, build
from bdpd_jax.prepare.perturbations import compile_spec

PLAYERS = [
    {"strategy": "conservative", "privateResource": 30},
    {"strategy": "aggressive", "intensity": 0.5, "privateResource": 20},
    {"strategy": "random", "privateResource": 50},
    {"strategy": "conservative", "privateResource": 5},
]


def config(specs, **model):
    m = {
        "maxPlayers": 4,
        "minPlayers": 2,
        "maxTurns": 20,
        "commonsInitial": 120,
        "commonsCapacity": 150,
        "regenRate": 0.12,
        "threshold": 10,
        "hiddenReserveInitial": 20,
        **model,
    }
    return {
        "model": m,
        "observability": {
            "commonsStock": {"visible": True, "noise": 0.05},
            "commonsRatio": {"visible": False},
            "regenRate": {"visible": True},
            "othersWealth": {"visible": True, "noise": 0.1},
            "othersHarvest": {"visible": True},
        },
        "players": copy.deepcopy(PLAYERS),
        "perturbations": specs,
    }


def spec(id_, type_, payload, turn=3, trigger=None):
    return {"id": id_, "type": type_, "trigger": trigger or {"kind": "turn", "turn": turn}, "payload": payload}


CASES = {
    "regen_shock": [spec("a", "regen_shock", {"factor": 0.3})],
    "regen_set": [spec("a", "regen_set", {"value": 0.4}, turn=2)],
    "commons_shock": [
        spec("a", "commons_shock", {"amount": -40.0}),
        spec("b", "commons_shock", {"amount": 25.0}, turn=6),
    ],
    "capacity_shock": [spec("a", "capacity_shock", {"factor": 0.6})],
    "wealth_shock": [
        spec("a", "wealth_shock", {"factor": 0.5, "player": 2}),
        spec("b", "wealth_shock", {"amount": -8.0}, turn=5),
    ],
    "strategy_override": [spec("a", "strategy_override", {"player": 0, "strategy": "aggressive"}, turn=4)],
    "observability_flip": [
        spec("a", "observability_flip", {"variable": "commonsStock"}),
        spec("b", "observability_flip", {"variable": "commonsRatio", "visible": True}, turn=5),
    ],
    "threshold_shift": [spec("a", "threshold_shift", {"delta": 40.0}, turn=4)],
    "threshold_triggers": [
        spec(
            "g",
            "wealth_shock",
            {"amount": 3.0, "player": 3},
            trigger={"kind": "threshold", "variable": "giniWealth", "op": "<", "value": 0.3},
        ),
        spec(
            "s",
            "regen_shock",
            {"factor": 0.5},
            trigger={"kind": "threshold", "variable": "commonsStock", "op": "<", "value": 110},
        ),
        spec(
            "h",
            "commons_shock",
            {"amount": -5.0},
            trigger={"kind": "threshold", "variable": "totalHarvest", "op": ">=", "value": 5.0},
        ),
    ],
}


@functools.cache
def _begin(game, x64: bool):
    """One jitted ``begin`` per game (and dtype mode), shared by the cases."""
    return jax.jit(lambda k, s, p: begin(game, k, s, p))


def play_with_reference(cfg_dict, seed=3, turns=20, rtol=1e-9):
    cfg = ArenaConfig.model_validate(cfg_dict)
    game, params = build(cfg)
    x64 = bool(jax.config.jax_enable_x64)
    model = cfg.model.model_dump()
    model["collapseDie"] = cfg.model.engine.collapse_die.model_dump()
    obs_cfg = {k: v.model_dump() for k, v in cfg.observability.items()}
    ref = RefPerturbArena(model, obs_cfg, [p.model_dump() for p in cfg.players], cfg_dict["perturbations"])
    key = rng.arena_key(seed, 0)
    jinit, jdecide, jstep = compiled(game, x64)
    jbegin = _begin(game, x64)
    state = jinit(params)
    n = game.n_players
    fired = []
    for t in range(1, turns + 1):
        zs, us, u_die = draws(game, key, t, n)
        state, rec0 = jbegin(key, state, params)
        ref.begin()
        fired += [(t, cfg_dict["perturbations"][i]["id"]) for i in np.nonzero(np.asarray(rec0["perturb"]["fired"]))[0]]
        req_k, state = jdecide(key, state, params)
        req_k = getattr(req_k, "requests", req_k)
        if not ref.over:
            obs = [ref.observe(i, zs[i]) for i in range(n)]
            req_r = [ref.decide(i, obs[i], us[i]) for i in range(n)]
            np.testing.assert_allclose(np.asarray(req_k), req_r, rtol=rtol, atol=1e-9, err_msg=f"requests t={t}")
        state, rec = jstep(key, state, req_k, params)
        out = ref.step(list(np.asarray(req_k, float)), successes(u_die, model))
        if out is None:
            assert not bool(rec.played)
            continue
        assert_turn_matches(rec, out, t, rtol)
    assert fired == [(t, i) for t, i, _ in ref.log]
    return ref


def padded(specs, pad, n_slots):
    """``specs`` then the first of ``pad`` up to ``n_slots`` slots. The pads are manual specs,
    never fired by the run (test_manual_trigger_never_fires_by_itself); runs padded with every
    type any of them uses are one Game (same types, same slot count): one compiled program."""
    return specs + pad[: n_slots - len(specs)]


def manual(*kinds):
    return [spec(f"pad{i}", t, p, trigger={"kind": "manual"}) for i, (t, p) in enumerate(kinds)]


# every type, then fillers: one Game for all the reference cases (one init/begin/decide/step)
REF_PAD = manual(
    ("regen_shock", {"factor": 0.5}),
    ("regen_set", {"value": 0.3}),
    ("commons_shock", {"amount": -1.0}),
    ("capacity_shock", {"factor": 0.5}),
    ("wealth_shock", {"amount": 1.0}),
    ("strategy_override", {"player": 0, "strategy": "aggressive"}),
    ("observability_flip", {"variable": "commonsStock"}),
    ("threshold_shift", {"delta": 1.0}),
    ("regen_set", {"value": 0.1}),
    ("regen_set", {"value": 0.2}),
)
REF_SLOTS = 11


@pytest.mark.parametrize("case", sorted(CASES))
def test_type_matches_reference_x64(case):
    with jax.enable_x64(True):
        ref = play_with_reference(config(padded(CASES[case], REF_PAD, REF_SLOTS)))
    assert ref.log, "the perturbation never fired"


def test_every_type_is_covered():
    assert {s["type"] for c in CASES.values() for s in c} == set(TYPES)
    assert {s["type"] for s in REF_PAD[: REF_SLOTS - max(map(len, CASES.values()))]} == set(TYPES)


# the types the _sim runs use: all of them one Game, one compiled program (4 arenas, 20 turns)
SIM_PAD = manual(
    ("regen_shock", {"factor": 0.5}),
    ("regen_set", {"value": 0.3}),
    ("wealth_shock", {"amount": 1.0}),
    ("strategy_override", {"player": 3, "strategy": "aggressive"}),
    ("regen_set", {"value": 0.1}),
)
SIM_SLOTS = 6


def _sim(specs, **model):
    return simulate(config(padded(specs, SIM_PAD, SIM_SLOTS), **model), n_arenas=4, seed=5)


def test_turn_trigger_fires_exactly_once():
    r = _sim([spec("d", "regen_shock", {"factor": 0.9}, turn=4)])
    p = r.perturbations
    assert list(p["turn"]) == [4] * 4 and sorted(p["arena"]) == [0, 1, 2, 3]
    assert np.allclose(p["value"], 0.12 * 0.9)


def test_threshold_trigger_fires_first_turn_it_holds_and_never_again():
    lvl = 100.0
    r = _sim(
        [
            spec(
                "low",
                "wealth_shock",
                {"amount": 1.0},
                trigger={"kind": "threshold", "variable": "commonsStock", "op": "<", "value": lvl},
            )
        ],
        threshold=0,
        commonsInitial=150,
        regenRate=0.02,
    )
    p, turns = r.perturbations, r.turns
    assert len(p) > 0 and p.groupby("arena").size().max() == 1
    for a, row in p.set_index("arena").iterrows():
        st = turns[turns.arena == a].set_index("turn")["stock"]
        start = {t: (150.0 if t == 1 else st[t - 1]) for t in st.index}  # stock at the start of turn t
        first = min(t for t in st.index if start[t] < lvl)
        assert row["turn"] == first


def test_same_turn_perturbations_apply_in_list_order():
    a = spec("mul", "regen_shock", {"factor": 0.5})
    b = spec("set", "regen_set", {"value": 0.2})
    p1 = _sim([a, b]).perturbations.query("arena == 0")
    p2 = _sim([b, a]).perturbations.query("arena == 0")
    assert list(p1["id"]) == ["mul", "set"] and list(p1["value"]) == pytest.approx([0.06, 0.2])
    assert list(p2["id"]) == ["set", "mul"] and list(p2["value"]) == pytest.approx([0.2, 0.1])


def test_strategy_override_switches_target_on_its_turn_only():
    r = _sim([spec("mule", "strategy_override", {"player": 3, "strategy": "aggressive"}, turn=6)])
    pl = r.players
    for (t, p), g in pl.groupby(["turn", "player"]):
        want = PLAYERS[p]["strategy"] if (p != 3 or t < 6) else "aggressive"
        assert set(g["strategy"]) == {want}, (t, p)
    assert list(r.perturbations["strategy"].unique()) == ["aggressive"]


def test_owner_fired_equals_trigger_fired():
    s = spec("c", "commons_shock", {"amount": -30.0}, turn=1)
    cfg = ArenaConfig.model_validate(config([s]))
    game, params = build(cfg)
    key = rng.arena_key(0, 0)
    init = jax.jit(game.init)(params)  # jitted: one program each, not one per eager op
    st_trig, _ = jax.jit(lambda k, st: begin(game, k, st, params))(key, init)
    manual = {**s, "trigger": {"kind": "manual"}}
    slot = compile_spec(manual, cfg, game.policies)
    st_own, rec = jax.jit(lambda st, sl: apply_perturbation(game, st, sl, params))(init, slot)
    assert float(st_own.engine.stock) == pytest.approx(float(st_trig.engine.stock)) == pytest.approx(90.0)
    assert float(rec["value"]) == pytest.approx(90.0)
    assert not bool(st_own.extra["perturb"]["fired"][0])  # owner firings are not deduplicated


def test_manual_trigger_never_fires_by_itself():
    r = _sim([spec("m", "regen_set", {"value": 0.0}, trigger={"kind": "manual"})])
    assert len(r.perturbations) == 0


@pytest.mark.parametrize(
    "bad,match",
    [
        (spec("k", "capacity_shock", {"factor": 0.5}), "does not have"),
        (spec("t", "threshold_shift", {"delta": 1.0}), "does not have"),
        (spec("r", "regen_shock", {"factor": 0.5}), "does not have"),
    ],
)
def test_rejects_types_the_engine_lacks(bad, match):
    cfg = {
        "model": {"engineMode": "seneca", "maxPlayers": 4, "minPlayers": 2},
        "players": [{"strategy": "conservative"}] * 2,
        "perturbations": [bad],
    }
    with pytest.raises(ValueError, match=match):
        ArenaConfig.model_validate(cfg)


@pytest.mark.parametrize(
    "bad,match",
    [
        (spec("w", "wealth_shock", {"factor": 0.5, "player": 9}), "player"),
        (spec("o", "strategy_override", {"player": 0, "strategy": "nope"}), "strategy"),
        (spec("f", "observability_flip", {"variable": "capitalStock"}), "not produced"),
        (spec("x", "threshold_shift", {}), "exactly one"),
        (
            spec(
                "y",
                "regen_shock",
                {"factor": 0.5},
                trigger={"kind": "threshold", "variable": "capitalStock", "op": "<", "value": 1},
            ),
            "not produced",
        ),
        (spec("z", "regen_shock", {"factor": 0.5}, trigger={"kind": "sometimes"}), "trigger"),
    ],
)
def test_rejects_bad_specs_naming_the_field(bad, match):
    with pytest.raises(ValueError, match=match):
        ArenaConfig.model_validate(config([bad]))


def test_frame_round_trips_parquet(tmp_path):
    from bdpd_jax import Results

    r = _sim([spec("d", "regen_shock", {"factor": 0.5})])  # the 4-arena program of the tests above
    back = Results.from_parquet(r.to_parquet(tmp_path / "run"))
    assert back.perturbations[["arena", "turn", "id", "type", "target"]].equals(
        r.perturbations[["arena", "turn", "id", "type", "target"]]
    )


def test_size_by_timing_sweep_compiles_once():
    """Different shock sizes and turns are the same Game: one trace, one compiled program;
    and a batched sweep (params varying along the batch axis) runs through it too."""
    from bdpd_jax.run.simulate import TRACES, arena_keys, run_batch

    specs = lambda f, t: [spec("d", "regen_shock", {"factor": f}, turn=t)]  # noqa: E731
    _sim(specs(0.5, 3))  # the program of _sim's runs above
    before = TRACES["run"]
    for f, t in [(0.1, 2), (0.9, 7), (1.5, 11)]:
        _sim(specs(f, t))
    assert TRACES["run"] == before
    # one batch, 3 sizes x 3 turns along the batch axis
    game, params = build(ArenaConfig.model_validate(config(specs(0.5, 3))))
    sizes, times = np.meshgrid([0.2, 0.6, 1.0], [2, 5, 9])
    pb = broadcast_batch(params, 9)
    pp = pb.extra["perturb"]
    pp = type(pp)(
        **{
            **pp.__dict__,
            "value": jnp.asarray(sizes.reshape(1, -1), pp.value.dtype),
            "turn": jnp.asarray(times.reshape(1, -1), jnp.int32),
        }
    )
    import dataclasses

    pb = dataclasses.replace(pb, extra={**pb.extra, "perturb": pp})
    # the chunk program (simulate runs one chunk with history as one program of its own):
    # traced once, then the batch of sizes x turns runs through it with no new trace
    run_batch(game, broadcast_batch(params, 9), arena_keys(0, np.arange(9)), 20, 20, True)
    before = TRACES["run"]
    state, rec = run_batch(game, pb, arena_keys(0, np.arange(9)), 20, 20, True)
    assert TRACES["run"] == before
    r = np.asarray(state.extra["perturb"]["engine"]["regen_rate"])
    assert np.allclose(r, 0.12 * sizes.reshape(-1))
    fired_turn = np.argmax(np.asarray(rec.extra["perturb"]["begin"]["fired"])[:, 0, :], axis=0) + 1
    assert np.array_equal(fired_turn, times.reshape(-1))


def test_perturbable_game_without_specs_accepts_owner_firings():
    cfg = ArenaConfig.model_validate(config([]))
    game, params = build(cfg, perturb={"perturbable": True})
    slot = compile_spec(spec("k", "capacity_shock", {"factor": 0.5}, trigger={"kind": "manual"}), cfg, game.policies)
    st, rec = jax.jit(lambda s, sl: apply_perturbation(game, s, sl, params))(jax.jit(game.init)(params), slot)
    assert float(st.extra["perturb"]["engine"]["capacity"]) == pytest.approx(75.0)
    _, r = jax.jit(lambda k, s: step(game, k, s, jnp.zeros(4), params))(rng.arena_key(0, 0), st)  # sees K = 75
    assert float(r.regen) == pytest.approx(0.12 * 120 * (1 - 120 / 75), rel=1e-5)


def test_engine_agnostic_types_run_on_seneca():
    cfg = {
        "model": {"engineMode": "seneca", "maxPlayers": 4, "minPlayers": 2, "maxTurns": 10, "commonsInitial": 1000},
        "players": [{"strategy": "conservative"}, {"strategy": "random"}],
        "perturbations": [
            spec("w", "wealth_shock", {"factor": 0.0, "player": 1}, turn=3),
            spec("o", "strategy_override", {"player": 0, "strategy": "idle"}, turn=4),
            spec("c", "commons_shock", {"amount": -0.1}, turn=5),
        ],
    }
    r = simulate(cfg, n_arenas=2, seed=0)
    assert sorted(r.perturbations["id"].unique()) == ["c", "o", "w"]
    pl = r.players
    assert (pl[(pl.turn >= 4) & (pl.player == 0)]["requested"] == 0).all()
