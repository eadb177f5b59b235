"""studies/govsim_llm.py, the operator's GovSim run with LLM players: its arguments, the
missing-endpoint message, the arena it builds (no network: a scripted stub model)."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest
from fake_llm import BASE, FakeClient, completion, tool_call
from payloads import SEED_LOGISTIC

from bdpd_jax.host.players import LivePlayerConfig

PATH = Path(__file__).resolve().parents[2] / "studies" / "govsim_llm.py"
ENV = {"BDPD_LLM_BASE_URL": BASE, "BDPD_LLM_MODEL": "m", "BDPD_LLM_API_KEY": "sk-test"}


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("govsim_llm", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_missing_endpoint_exits_naming_the_variables(script):
    with pytest.raises(SystemExit) as exc:
        script.main([], env={})
    msg = str(exc.value.code)
    assert all(k in msg for k in ENV)
    with pytest.raises(SystemExit) as exc:
        script.main([], env={**ENV, "BDPD_LLM_MODEL": ""})
    assert "BDPD_LLM_MODEL" in str(exc.value.code) and "BDPD_LLM_BASE_URL" not in str(exc.value.code)
    assert script.endpoint(ENV) == (BASE, "m")


@pytest.mark.parametrize(
    "argv",
    [
        ["--scenario", "moon"],
        ["--experiment", "x"],
        ["--rounds", "21"],
        ["--rounds", "-1"],
        ["--temperature", "3"],
        ["--timeout-ms", "0"],
        ["--rules-file", "/no/such/file"],
        ["--seed", "x"],
    ],
)
def test_bad_arguments_are_refused(script, argv, capsys):
    with pytest.raises(SystemExit) as exc:
        script.parse_args(argv)
    assert exc.value.code == 2 and argv[0] in capsys.readouterr().err


def test_arguments_defaults_and_the_arena_they_build(script, tmp_path):
    a = script.parse_args([])
    assert (a.scenario, a.experiment, a.rounds, a.temperature) == ("fishery", "default", 9, 0.0)
    rules = tmp_path / "rules.txt"
    rules.write_text("the lake")
    assert script.parse_args(["--rules-file", str(rules), "--experiment", "newcomer"]).rules_file == rules
    cfg = {**copy.deepcopy(SEED_LOGISTIC), "players": [{"strategy": "conservative", "name": f"f{i}"} for i in range(5)]}
    out, names = script.llm_arena_config(cfg, "default", 9)
    assert names == [f"f{i}" for i in range(5)] and "players" not in out and "players" in cfg
    assert out["discussion"] == {"rounds": 9, "nextSpeaker": "named"}
    assert script.llm_arena_config(cfg, "no_communication", 9)[0]["discussion"]["rounds"] == 0
    spec = LivePlayerConfig.model_validate(script.player_spec("f0", "m", "the lake", 0.0, 1000))
    assert (spec.fallback_harvest, spec.rules_text, spec.credential) == (0.0, "the lake", "govsim")
    assert script.govsim_metrics({"govsim_gain": 20.0, "govsim": {"govsim_survived": True}, "x": 1}) == {
        **dict.fromkeys(script.METRICS),
        "govsim_gain": 20.0,
        "govsim_survived": True,
    }


def test_runs_five_llm_players_through_the_live_host(script, monkeypatch, tmp_path, capsys):
    """The whole script with the scenario replaced by the seed's arena and the model by a
    stub (the GovSim config itself comes with issue 25's scenarios)."""
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxPlayers=5, minPlayers=5, maxTurns=2)
    cfg["players"] = [{"strategy": "conservative", "name": f"f{i}"} for i in range(5)]
    monkeypatch.setattr(script, "scenario_config", lambda s, e: (cfg, "A lake of fish."))

    def answer(url, req):
        if json.loads(req["messages"][-1]["content"]).get("phase") == "discussion":
            return completion([tool_call(0, "speak", {"text": "two each"})])
        return completion([tool_call(0, "harvest", {"amount": 2})])

    client = FakeClient(answer)
    monkeypatch.setattr("bdpd_jax.host.arena_callers.own_client", lambda specs, n: client)
    monkeypatch.setenv("BDPD_LLM_API_KEY", "sk-test")  # the operator's credential reads it at every call
    assert script.main(["--rounds", "2", "--out", str(tmp_path / "a")], env=ENV) == 0
    out = capsys.readouterr().out
    assert "5 LLM players" in out and all(m in out for m in script.METRICS)
    assert client.headers and all(h["authorization"] == "Bearer sk-test" for h in client.headers)
    turns = [json.loads(x) for x in (tmp_path / "a" / "turns.jsonl").read_text().splitlines()]
    assert [len(t.get("discussion", {}).get("utterances", [])) for t in turns] == [2, 0]
    assert all(q["messages"][0]["content"].startswith("A lake of fish.") for _, q in client.requests)


def test_scenario_config_reads_the_scenarios_module(script, monkeypatch):
    """The GovSim config and its rules text come from ``bdpd_jax.scenarios`` (issue 25's other
    items); without that module the script says so."""
    import sys
    import types

    monkeypatch.setitem(sys.modules, "bdpd_jax.scenarios", None)  # not importable
    with pytest.raises(SystemExit, match="bdpd_jax.scenarios.govsim is missing"):
        script.scenario_config("fishery", "default")
    fake = types.ModuleType("bdpd_jax.scenarios")
    fake.govsim = lambda s, e: {**copy.deepcopy(SEED_LOGISTIC), "players": None, "tag": [s, e]}
    fake.govsim_rules = lambda s, e: f"rules of {s}/{e}"
    monkeypatch.setitem(sys.modules, "bdpd_jax.scenarios", fake)
    cfg, rules = script.scenario_config("pasture", "newcomer")
    assert cfg["tag"] == ["pasture", "newcomer"] and rules == "rules of pasture/newcomer"
    del fake.govsim_rules
    assert script.scenario_config("pasture", "default")[1] is None
