"""Config validation: the seed payloads pass; every bad input is a clear ValueError."""

from __future__ import annotations

import copy
import math

import pytest
from payloads import MIXED_PLAYERS, SEED_LOGISTIC, SEED_SENECA, set_path

from bdpd_jax import ArenaConfig, simulate
from bdpd_jax.config.game import default_config


def test_seed_logistic_example_validates():
    cfg = ArenaConfig.model_validate(SEED_LOGISTIC)
    assert cfg.model.engine.collapse_die.sides == 6 and cfg.model.engine.use_hidden_reserve
    assert cfg.observability["regenRate"].visible is False


def test_seed_seneca_example_validates():
    cfg = ArenaConfig.model_validate(SEED_SENECA)
    assert cfg.model.engine_mode == "seneca" and cfg.model.engine.commons_initial == 1.0


def test_defaults_are_the_seeds():
    m = ArenaConfig.model_validate({}).model.engine
    assert (m.commons_initial, m.commons_capacity, m.regen_rate, m.threshold) == (150, 150, 0.12, 10)
    assert m.hidden_reserve_initial == 20 and m.use_hidden_reserve
    cfg = ArenaConfig.model_validate({})
    assert cfg.agent_timeout == 30000 and cfg.model.max_turns == 30


def _with(path: str, value) -> dict:
    """The seed's logistic payload with the mixed players, ``value`` set at ``path``."""
    return set_path({**SEED_LOGISTIC, "players": MIXED_PLAYERS}, path, value)


BAD = [
    ("model.engineMode", "lotka", "engineMode"),
    ("model.scheduler", "round-robin", "scheduler"),
    ("players.0.strategy", "greedy", "strategy"),
    ("model.regenRate", -0.1, "regenRate"),
    ("model.regenRate", math.nan, "regenRate"),
    ("model.commonsCapacity", math.inf, "commonsCapacity"),
    ("model.threshold", -1, "threshold"),
    ("model.minPlayers", 5, "minPlayers"),
    ("observability.commonsStock.noise", -0.5, "noise"),
    ("observability.fishCount", {"visible": True}, "fishCount"),
    ("model.colour", "blue", "colour"),
    ("players.1.intensity", 1.5, "intensity"),
    ("players.2.privateResource", -3, "privateResource"),
    ("model.collapseDie.successThreshold", 7, "successThreshold"),
    ("observability.nPlayers.resolution", "qualitative", "resolution"),
    ("observability.capitalStock", {"visible": True}, "capitalStock"),
    # valid ranges (docs/semantics.md "Valid ranges", bdpd_jax/config/limits.py)
    ("model.threshold", 151.0, "threshold"),
    ("model.regenRate", 1e39, "regenRate"),
    ("players.0.privateResource", 1e20, "privateResource"),
    ("model.maxTurns", 2**31, "maxTurns"),
    ("model.maxPlayers", 10**6, "maxPlayers"),
    ("model.collapseDie.sides", 2**40, "sides"),
    ("players.0.talk", {"pledge": {"turn": 2**31, "maxHarvest": 1.0}}, "turn"),
    (
        "perturbations",
        [{"id": "x", "type": "regen_shock", "trigger": {"kind": "turn", "turn": 2**31}, "payload": {"factor": 0.5}}],
        "turn",
    ),
    (
        "perturbations",
        [{"id": "s", "type": "sanction_graduated", "trigger": {"kind": "pact_violation"}, "payload": {"ladder": []}}],
        "ladder",
    ),
    ("pacts", [{"parties": [0], "terms": {"type": "no_aggression"}}] * 100, "pacts"),
]


@pytest.mark.parametrize("path,value,needle", BAD, ids=[b[0] + "=" + repr(b[1]) for b in BAD])
def test_bad_config_is_a_clear_error(path, value, needle):
    with pytest.raises(ValueError) as e:
        ArenaConfig.model_validate(_with(path, value))
    msg = str(e.value)
    assert needle in msg
    # the message shows the offending value
    assert repr(value) in msg or str(value) in msg or needle == "colour" or isinstance(value, (dict, list))


def test_player_count_outside_bounds():
    cfg = _with("players", MIXED_PLAYERS[:3])
    with pytest.raises(ValueError, match=r"players: 3 players is outside \[minPlayers=4, maxPlayers=4\]"):
        ArenaConfig.model_validate(cfg)


@pytest.mark.parametrize(
    "field,value,why",
    [("threshold", 101.0, "collapsed at any stock"), ("commonsInitial", 101.0, "starts at most full")],
)
def test_a_govsim_number_above_its_capacity_names_both(field, value, why):
    cfg = {"model": {"engineMode": "govsim", field: value}}  # GovSim's cap: 100
    with pytest.raises(ValueError, match=rf"model.{field}: {value} is above commonsCapacity=100.0 \(.*{why}"):
        ArenaConfig.model_validate(cfg)


def test_unknown_top_level_key():
    with pytest.raises(ValueError, match="agentTimeOut"):
        ArenaConfig.model_validate({**SEED_LOGISTIC, "agentTimeOut": 5})


def test_seneca_rejects_hidden_reserve():
    cfg = copy.deepcopy(SEED_SENECA)
    cfg["model"]["useHiddenReserve"] = True
    with pytest.raises(ValueError, match=r"model.useHiddenReserve: not a field of engineMode=.seneca"):
        ArenaConfig.model_validate(cfg)


def test_run_without_players_is_a_clear_error():
    with pytest.raises(ValueError, match="players"):
        simulate(SEED_LOGISTIC, n_arenas=2)


@pytest.mark.parametrize("kw", [{"n_arenas": 0}, {"seed": -1}, {"turns": 0}, {"chunk_turns": -2}])
def test_bad_run_arguments(kw):
    args = {"n_arenas": 1, **kw}
    with pytest.raises(ValueError, match=next(iter(kw))):
        simulate(default_config(), **args)


def test_load_from_path_and_missing_file(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(default_config().model_dump_json())
    assert ArenaConfig.load(p).model.name == "fishery_commons_v1"
    with pytest.raises(ValueError, match="no such file"):
        ArenaConfig.load(tmp_path / "missing.json")


def test_seneca_adaptive_needs_a_solver_with_an_error_estimate():
    cfg = copy.deepcopy(SEED_SENECA)
    cfg["model"]["seneca"] = {"adaptive": True}
    with pytest.raises(ValueError, match="seneca.solver.*'euler'"):
        ArenaConfig.model_validate(cfg)
    cfg["model"]["seneca"]["solver"] = "tsit5"
    assert ArenaConfig.model_validate(cfg).model.engine.seneca.adaptive


@pytest.mark.parametrize(
    "kw,needle",
    [
        ({"arena_offset": -1}, "arena_offset"),
        ({"arena_offset": 1.5}, "arena_offset"),
        ({"arena_offset": 2**32 - 1, "n_arenas": 2}, "arena_offset"),
        ({"n_arenas": 10**12}, "n_arenas"),
        ({"turns": 2**31}, "turns"),
        ({"n_arenas": True}, "n_arenas"),
        ({"n_arenas": 400_000_000, "turns": 30}, "n_arenas"),  # results that cannot fit in memory
    ],
)
def test_bad_run_ranges(kw, needle):
    with pytest.raises(ValueError, match=needle):
        simulate(default_config(), **{"n_arenas": 1, **kw})


@pytest.mark.parametrize(
    "field,bad",
    [
        ("seed", -1),
        ("seed", 2**32),
        ("max_batch", 0),
        ("max_batch", True),
        ("turns", 0),
        ("turns", 2**31),
        ("replicates", 0),
        ("memory_budget", 0),
    ],
)
def test_run_arguments_are_checked_alike_by_simulate_sweep_and_spec(field, bad):
    """One rule (limits.check_run_args): every entry point refuses a bad run argument with
    the same message, before anything is built."""
    import bdpd_jax
    from bdpd_jax.config.limits import check_run_args
    from bdpd_jax.sweeps.sweep_file import load_sweep_file

    with pytest.raises(ValueError) as ref:
        check_run_args(**{field: bad})
    message = str(ref.value)
    assert message.startswith(f"{field}: ") and repr(bad) in message
    cfg = default_config()
    calls = [lambda: bdpd_jax.sweep(cfg, grid={"model.regenRate": [0.1]}, **{field: bad})]
    if field not in ("replicates", "memory_budget"):
        calls.append(lambda: simulate(cfg, **{field: bad}))
    if field != "memory_budget":  # (a spec's size string is parsed first: its error quotes the string)
        calls.append(
            lambda: load_sweep_file(
                {"config": cfg.model_dump(mode="json"), "grid": {"model.regenRate": [0.1]}, field: bad}
            )
        )
    for call in calls:
        with pytest.raises(ValueError) as got:
            call()
        assert str(got.value) == message


def test_run_size_estimate_names_what_to_change():
    from bdpd_jax.config.limits import check_run_size, physical_memory

    big = physical_memory() // 100
    with pytest.raises(ValueError, match="history=False"):
        check_run_size(big, 1000, 4, history=True)
    assert check_run_size(1000, 1000, 4, history=False) < 1e6  # summaries only
    assert check_run_size(big // 1000, 1000, 4, history=True, streamed=True) < physical_memory()


@pytest.mark.parametrize(
    "kw,needle",
    [
        ({"memory_size": -1}, "memory_size"),
        ({"memory_size": 1.5}, "memory_size"),
        ({"name": 5}, "name"),
        ({"name": ""}, "name"),
        ({"fn": 5}, "fn"),
    ],
)
def test_bad_policy_fields_are_refused_at_validation(kw, needle):
    from bdpd_jax import Policy

    args = {"fn": lambda o, m, k: (0.0, m), **kw}
    cfg = {**copy.deepcopy(SEED_LOGISTIC), "players": copy.deepcopy(MIXED_PLAYERS)}
    cfg["players"][0] = {"strategy": Policy(**args)}
    with pytest.raises(ValueError, match=needle):
        ArenaConfig.model_validate(cfg)


def test_tick_interval_and_pact_slot_bounds():
    from bdpd_jax.config.limits import MAX_PACT_SLOTS, check_tick_interval
    from bdpd_jax.host.live.arena import Arena

    for bad in (math.inf, 1e308, -1, "10", math.nan, True):
        with pytest.raises(ValueError, match="tickIntervalMs"):
            check_tick_interval(bad)
    assert check_tick_interval(250) == 250.0
    for bad in (0, MAX_PACT_SLOTS + 1, 1.5, 10**9):
        with pytest.raises(ValueError, match="pactSlots"):
            Arena(SEED_LOGISTIC, pact_slots=bad)


def test_cli_bad_arguments_exit_2_with_a_message_and_no_traceback(tmp_path):
    from typer.testing import CliRunner

    from bdpd_jax.cli import app

    bad = tmp_path / "bad.json"
    bad.write_text('{"model": {"threshold": 500}}')
    runner = CliRunner()
    for args, needle in [
        (["run", "--arenas", "0"], "--arenas"),
        (["run", str(bad)], "threshold"),
        (["run", str(tmp_path)], "directory"),
        (["run", "--seed", "-1"], "seed"),
        (["run", "--out", str(bad), "-n", "2"], "--out"),
    ]:
        r = runner.invoke(app, args)
        out = r.output + (r.stderr if r.stderr_bytes is not None else "")
        assert r.exit_code == 2 and needle in out and "Traceback" not in out, (args, r.exit_code, out)
