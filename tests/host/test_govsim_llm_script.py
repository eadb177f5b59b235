"""studies/govsim_llm.py, GovSim with LLM players: its arguments, the missing-endpoint message,
the cells it builds, and a small run of its grid against a scripted endpoint (no network):
the table beside the published rows, and a second run that resumes from the folders."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from fake_llm import BASE, FakeClient, completion

from bdpd_jax.host.live.players import LivePlayerConfig
from bdpd_jax.scenarios import GOVSIM_NAMES, GOVSIM_SCENARIOS, govsim

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
        ["--seeds", "0"],
        ["--months", "0"],
        ["--temperature", "3"],
        ["--timeout-ms", "0"],
        ["--rules-file", "/no/such/file"],
        ["--architecture", "deep"],
        ["--seed", "x"],
    ],
)
def test_bad_arguments_are_refused(script, argv, capsys):
    with pytest.raises(SystemExit) as exc:
        script.parse_args(argv)
    assert exc.value.code == 2 and argv[0] in capsys.readouterr().err


def test_the_cells_it_builds(script):
    a = script.parse_args([])
    assert (a.scenarios, a.experiments, a.seeds, a.rounds, a.architecture) == (
        list(script.SCENARIOS),
        list(script.EXPERIMENTS),
        1,
        9,
        "govsim",
    )
    out, names = script.llm_arena_config(govsim("fishery", "newcomer"), "newcomer", 9, months=2)
    assert "players" not in out and out["model"]["maxTurns"] == 2 and len(names) == 5
    assert out["discussion"] == {"rounds": 9, "nextSpeaker": "named", "protocol": "govsim"}
    assert not [p for p in out.get("perturbations", []) if p.get("id") == "newcomer"]  # no builtin switch
    assert (
        script.llm_arena_config(govsim("pasture", "no_communication"), "no_communication", 9)[0]["discussion"]["rounds"]
        == 0
    )
    specs = script.cell_specs(a, "m", "pasture", "universalization")
    assert [s["name"] for s in specs] == list(GOVSIM_NAMES)
    s0 = LivePlayerConfig.model_validate(specs[0])
    assert (s0.architecture, s0.scenario, s0.fallback_harvest, s0.credential) == ("govsim", "pasture", 0.0, "govsim")
    assert "Think about this" not in s0.rules_text  # the month's sentence is told each month instead
    newcomer = script.cell_specs(a, "m", "fishery", "newcomer")
    assert newcomer[-1]["activeFrom"] == 4 and newcomer[-1]["persona"] == GOVSIM_SCENARIOS["fishery"].outsider
    assert all("activeFrom" not in s and s["persona"] == GOVSIM_SCENARIOS["fishery"].local for s in newcomer[:-1])
    assert script.govsim_metrics({"govsim_gain": 20.0, "govsim": {"govsim_survived": True}, "x": 1}) == {
        **dict.fromkeys(script.METRICS),
        "govsim_gain": 20.0,
        "govsim_survived": True,
    }


def answer(url: str, req: dict):
    """The scripted model: 10 tons, a two-line meeting, plain answers to the rest."""
    if url.endswith("/embeddings"):
        return 404, b"{}"
    prompt = req["messages"][-1]["content"]
    if "It is your turn to speak" in prompt:
        heard = prompt.split("The meeting so far:")[1]
        return completion([], content="Ten each.\n[END]" if "Ten each." in heard else "Ten each.")
    return completion([], content="A lesson." if "lessons" in prompt else "Answer: 10")


def test_a_small_grid_against_a_scripted_endpoint_and_its_resume(script, monkeypatch, tmp_path, capsys):
    client = FakeClient(answer)
    monkeypatch.setattr("bdpd_jax.host.live.arena_callers.own_client", lambda specs, n: client)
    monkeypatch.setenv("BDPD_LLM_API_KEY", "sk-test")  # the operator's credential reads it at every call
    argv = ["--scenario", "fishery", "--experiment", "default", "--experiment", "no_communication"]
    argv += ["--months", "2", "--rounds", "3", "--seeds", "2", "--max-in-flight", "3", "--out", str(tmp_path)]
    assert script.main(argv, env=ENV) == 0
    out = capsys.readouterr().out
    assert "fishery / default" in out and "published: GPT-4o, default fishery" in out
    assert 1 < client.peak_in_flight <= 3  # two seeds at once, under the endpoint's maxInFlight
    assert "fishery / default / seed 1: 2 months" in out
    assert client.headers and all(h.get("authorization") == "Bearer sk-test" for h in client.headers)
    turns = [json.loads(x) for x in (tmp_path / "fishery/default/seed-0/turns.jsonl").read_text().splitlines()]
    assert [len(t["discussion"]["utterances"]) for t in turns] == [2, 2]  # ended by its second speaker
    quiet = [json.loads(x) for x in (tmp_path / "fishery/no_communication/seed-0/turns.jsonl").read_text().splitlines()]
    assert all(t["discussion"]["utterances"] == [] and len(t["discussion"]["monthEnd"]) == 5 for t in quiet)
    n = len(client.requests)
    assert script.main(argv, env=ENV) == 0  # resumed: every cell is read from its folder
    assert len(client.requests) == n and "fishery / no_communication" in capsys.readouterr().out


def test_the_newcomer_cell_runs_its_outsider_as_an_llm_from_month_4(script, monkeypatch, tmp_path, capsys):
    """Issue 37 item 5 with the study: the outsider joins as an LLM after 3 months (GovSim's
    PerturbationEnv): it is neither asked to harvest nor heard in the meeting before month 4."""
    client = FakeClient(answer)
    monkeypatch.setattr("bdpd_jax.host.live.arena_callers.own_client", lambda specs, n: client)
    monkeypatch.setenv("BDPD_LLM_API_KEY", "sk-test")
    argv = [
        "--scenario",
        "fishery",
        "--experiment",
        "newcomer",
        "--months",
        "5",
        "--rounds",
        "2",
        "--out",
        str(tmp_path),
    ]
    assert script.main(argv, env=ENV) == 0
    assert "fishery / newcomer" in capsys.readouterr().out
    rows = (tmp_path / "fishery/newcomer/seed-0/turns.jsonl").read_text().splitlines()
    turns = [json.loads(x) for x in rows]
    outsider = GOVSIM_NAMES[-1]
    asked = [t["turn"] for t in turns for d in t["decisions"] if d["playerId"] == outsider and "harvest" in d]
    spoke = [t["turn"] for t in turns for u in t["discussion"]["utterances"] if u["speaker"] == outsider]
    assert len(turns) == 5 and asked == [4, 5]
    assert all(t >= 4 for t in spoke)
