"""Fuzzing bad input (issue 14): every config, join body and Policy output is either refused
with a ValueError naming the field, or runs to finite results, within a per-example deadline.

Accepted examples reuse one compiled program (fixed turns and batch, numbers only change
params), so an example costs milliseconds unless the mutation changes a static choice.
Few examples in CI; BDPD_HEAVY=1 runs more.
"""

from __future__ import annotations

import copy
import datetime
import math

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from payloads import HEAVY, MIXED_PLAYERS, SEED_LOGISTIC

import bdpd_jax
from bdpd_jax import ArenaConfig, Policy
from bdpd_jax.prepare.game import build

TURNS, ARENAS = 4, 2
DEADLINE = datetime.timedelta(seconds=60)  # generous: the machine is shared; a hang is minutes
EXAMPLES = 200 if HEAVY else 30


def _base() -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    cfg["players"][0]["talk"] = {"announce": "honest", "pledge": {"turn": 2, "maxHarvest": 3.0}}
    cfg["pacts"] = [{"parties": [0, 1], "terms": {"type": "harvest_cap", "maxHarvest": 4.0}}]
    cfg["perturbations"] = [
        {"id": "d", "type": "regen_shock", "trigger": {"kind": "turn", "turn": 2}, "payload": {"factor": 0.5}},
        {
            "id": "s",
            "type": "sanction_graduated",
            "trigger": {"kind": "pact_violation"},
            "payload": {"ladder": [1.0, 2.0]},
        },
    ]
    return cfg


def param_leaves(tree, path=()):
    """Every (path, value) leaf of a JSON tree."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from param_leaves(v, path + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from param_leaves(v, path + (i,))
    else:
        yield path, tree


PATHS = [p for p, _ in param_leaves(_base())]
garbage = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.floats(-1e3, 1e3),
    st.integers(-(2**70), 2**70),
    st.integers(-3, 40),
    st.text(max_size=6),
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from([1e39, -1e39, 2**31, 2**32, 1e308, 1e-320, "NaN", "Infinity"]),
)


def _set(tree, path, value):
    node = tree
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def _finite(res) -> bool:
    wealth = res.summary[[c for c in res.summary.columns if c.startswith("wealth_")]].to_numpy(float)
    return bool(np.isfinite(wealth).all() and np.isfinite(res.turns["stock"].to_numpy(float)).all())


def _names_a_field(msg: str, path) -> bool:
    """The message names the mutated field (or, for a cross-field rule, the field it broke)."""
    keys = [str(k) for k in path if not isinstance(k, int)]
    return any(k in msg for k in keys)


@pytest.fixture(scope="module")
def warm():
    """Compile the base game once: accepted examples then run on the cached program."""
    res = bdpd_jax.simulate(_base(), n_arenas=ARENAS, turns=TURNS, progress=False)
    assert _finite(res)


@settings(
    max_examples=EXAMPLES,
    deadline=DEADLINE,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(path=st.sampled_from(PATHS), value=garbage)
def test_config_mutation_is_refused_cleanly_or_runs_finite(warm, path, value):
    cfg = _base()
    _set(cfg, path, value)
    try:
        res = bdpd_jax.simulate(cfg, n_arenas=ARENAS, turns=TURNS, progress=False)
    except ValueError as e:
        assert _names_a_field(str(e), path), f"{path}={value!r}: {e}"
        return
    assert _finite(res), f"{path}={value!r} ran to non-finite results"


@settings(max_examples=EXAMPLES // 2, deadline=DEADLINE, suppress_health_check=[HealthCheck.too_slow])
@given(
    blob=st.recursive(
        garbage,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(["model", "players", "pacts", "perturbations", "observability", "x"]), inner, max_size=3
            )
        ),
        max_leaves=8,
    )
)
def test_random_garbage_config_is_refused_with_a_value_error(blob):
    try:
        ArenaConfig.load(blob) if isinstance(blob, (dict, str)) else ArenaConfig.model_validate(blob)
    except ValueError:
        return
    # whatever validated is a config the kernels can build (no players: nothing to run)


# -- live join bodies (the host's join validation: Arena.join) -----------------------------------
JOIN_BASE = [
    {"agentType": "builtin", "name": "b", "strategy": "aggressive", "intensity": 0.5, "privateResource": 20.0},
    {
        "agentType": "scripted",
        "name": "s",
        "script": [{"harvest": 1.0, "actions": [{"tool": "broadcast", "text": "hi"}]}],
    },
    {"agentType": "http", "name": "h", "url": "http://127.0.0.1:9/decide", "timeoutMs": 100},
    {"agentType": "llm", "name": "l", "baseUrl": "http://127.0.0.1:9/v1", "model": "m"},
]
JOIN_OPERATOR = {"llmBaseUrls": ["http://127.0.0.1:9/v1"], "httpUrls": ["http://127.0.0.1:9/decide"]}


@pytest.fixture(scope="module")
def join_config():
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(minPlayers=2, maxPlayers=4, maxTurns=TURNS)
    return cfg


@settings(
    max_examples=EXAMPLES,
    deadline=DEADLINE,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    which=st.integers(0, len(JOIN_BASE) - 1),
    key=st.sampled_from(
        [
            "agentType",
            "name",
            "privateResource",
            "strategy",
            "intensity",
            "reductionFactor",
            "talk",
            "script",
            "url",
            "baseUrl",
            "model",
            "timeoutMs",
            "temperature",
            "rngSeed",
            "displayName",
            "extra",
        ]
    ),
    value=garbage,
)
def test_join_body_is_refused_cleanly_or_plays_finite(join_config, which, key, value):
    from bdpd_jax.host.live.arena import Arena

    body = {**copy.deepcopy(JOIN_BASE[which]), key: value}
    # the operator lets players choose the base bodies' endpoints, so each base body joins and a
    # refusal is the mutated field's
    arena = Arena(join_config, seed=3, fsync=False, operator=JOIN_OPERATOR)
    arena.join({"agentType": "builtin", "name": "anchor", "strategy": "conservative"})
    try:
        arena.join(body)
    except ValueError as e:
        assert key in str(e) or key == "displayName" and "name" in str(e) or key == "agentType", f"{key}={value!r}: {e}"
        return
    if body.get("agentType") not in ("builtin", "scripted"):
        return  # a valid network player: joining is what is checked here
    try:
        arena.start()
    except ValueError as e:  # cross-checks at start (the kernel config) name the field too
        assert _names_a_field(str(e), (key,)), f"{key}={value!r}: {e}"
        return
    rec = arena.tick()
    assert rec is not None and math.isfinite(rec["stock"])
    assert all(math.isfinite(d["wealth"]) for d in rec["decisions"])


# -- user Policy outputs ----------------------------------------------------------------------------
OUTPUTS = {
    "scalar": lambda o, m: o["myCapacity"] * 0.1,
    "python float": lambda o, m: 0.5,
    "int": lambda o, m: jnp.int32(1),
    "bool": lambda o, m: jnp.bool_(True),
    "vector": lambda o, m: o["othersWealth"],
    "string": lambda o, m: "lots",
    "complex": lambda o, m: 1j,
    "none": lambda o, m: None,
    "matrix": lambda o, m: jnp.zeros((2, 2)),
    "missing key": lambda o, m: o["fish"],
}
MEMORIES = {
    "same": lambda m: m,
    "wrong size": lambda m: jnp.zeros(m.shape[0] + 1),
    "string": lambda m: "mem",
    "none": lambda m: None,
    "2-D": lambda m: m.reshape(1, -1),
}


@settings(max_examples=EXAMPLES, deadline=DEADLINE, suppress_health_check=[HealthCheck.too_slow])
@given(
    h=st.sampled_from(sorted(OUTPUTS)),
    mem=st.sampled_from(sorted(MEMORIES)),
    arity=st.sampled_from([1, 2, 3]),
    memory_size=st.one_of(st.integers(-2, 5), st.just(1.5), st.just("2"), st.just(10**9)),
    name=st.one_of(st.just("mine"), st.just(""), st.just(5), st.none()),
)
def test_policy_is_refused_at_build_or_has_the_right_shape(h, mem, arity, memory_size, name):
    """Checked without compiling: ``build`` traces the policy abstractly (jax.eval_shape)."""

    def fn(o, m, k):
        out = (OUTPUTS[h](o, m), MEMORIES[mem](m))
        return out[:arity] if arity < 2 else out + (None,) * (arity - 2)

    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    try:
        cfg["players"][1] = {"strategy": Policy(fn, name=name, memory_size=memory_size)}
        build(ArenaConfig.model_validate(cfg))
    except ValueError as e:
        assert "strategy" in str(e) or "memory_size" in str(e) or "name" in str(e), str(e)
        return
    assert h in ("scalar", "python float", "int", "bool") and mem in ("same", "2-D") and arity == 2


def test_policy_outputs_nan_inf_and_huge_are_clamped_to_finite_results():
    """One compiled policy cycling through hostile harvests by turn (a NaN/inf/negative
    request is treated as 0 and flagged: docs/semantics.md §3); NaN memory is harmless."""
    values = jnp.asarray([jnp.nan, jnp.inf, -jnp.inf, -1e30, 1e30, 3e38, 0.5])

    def hostile(o, m, k):
        return values[o["turn"].astype(jnp.int32) % values.shape[0]], m * jnp.nan

    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"] = copy.deepcopy(MIXED_PLAYERS)
    cfg["players"][1] = {"strategy": Policy(hostile, name="hostile", memory_size=2)}
    res = bdpd_jax.simulate(cfg, n_arenas=ARENAS, turns=len(values) + 1, progress=False)
    assert _finite(res)
    flagged = res.players.loc[res.players["player"] == 1, "invalid"].to_numpy()
    assert flagged[: 3 * ARENAS].any()  # NaN and inf requests are flagged
