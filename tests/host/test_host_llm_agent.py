"""LLM agent against a loopback OpenAI-compatible stub: tool parsing, malformed calls, cache prefix."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from host_stub_server import dead_port

from bdpd_jax.host.agents import AgentResult, LLMAgent, fallback_harvest
from bdpd_jax.host.agents.llm import parse_completion
from bdpd_jax.host.agents.tools import tool_schemas


def _run_turns(agent: LLMAgent, turns: list[tuple[dict, list]], wealth: float = 10.0) -> list[AgentResult]:
    async def main() -> list[AgentResult]:
        try:
            return [await agent.decide(obs, wealth, inbox=inbox) for obs, inbox in turns]
        finally:
            await agent.aclose()

    return asyncio.run(main())


def _agent(live_server, model: str, **kw) -> LLMAgent:
    return LLMAgent(
        f"{live_server.base}/v1",
        model,
        api_key_env="BDPD_TEST_NO_SUCH_KEY",
        player_id="alice",
        timeout_ms=kw.pop("timeout_ms", 2000),
        **kw,
    )


TURNS = [
    ({"turn": 1, "commonsStock": 150.0, "myWealth": 10.0}, []),
    (
        {"turn": 2, "commonsStock": 141.2, "myWealth": 10.8},
        [{"id": "m1", "turn": 1, "fromId": "bob", "scope": "broadcast", "text": "take 1 each?"}],
    ),
    (
        {"turn": 3, "commonsStock": 133.0, "myWealth": 11.5},
        [{"id": "m2", "turn": 2, "fromId": "carol", "scope": "announcement", "value": 1.8}],
    ),
]


def test_scripted_tool_calls_parsed_and_malformed_survive(live_server, stub_state) -> None:
    results = _run_turns(_agent(live_server, "scripted"), TURNS)
    for r in results:
        assert r.harvest == 0.75 and not r.fallback
        assert r.actions == [
            {"tool": "broadcast", "text": "let's all take 1"},
            {"tool": "pledge", "maxHarvest": 1.5},
            {"tool": "propose_pact", "parties": ["alice", "bob"], "terms": {"type": "harvest_cap", "maxHarvest": 2.0}},
            {"tool": "announce_intended_harvest", "value": 0.7},
        ]
        errors = r.error.split("; ")
        assert len(errors) == 4
        assert "tool_calls[1]" in errors[0] and "invalid JSON" in errors[0]
        assert "tool_calls[2]" in errors[1] and "launch_missiles" in errors[1]
        assert "tool_calls[3]" in errors[2] and "value" in errors[2]
        assert "tool_calls[7]" in errors[3] and "extra harvest" in errors[3]


def test_prefix_is_byte_identical_across_turns(live_server, stub_state) -> None:
    agent = _agent(live_server, "scripted")
    before = json.dumps(agent.prefix_messages())
    _run_turns(agent, TURNS)
    bodies = [json.loads(raw) for path, raw in stub_state["requests"] if path.endswith("/chat/completions")]
    assert len(bodies) == 3
    prefixes = {json.dumps(b["messages"][:-1], ensure_ascii=False).encode() for b in bodies}
    tools = {json.dumps(b["tools"]).encode() for b in bodies}
    assert len(prefixes) == 1 and len(tools) == 1  # cache-stable prefix
    assert json.dumps(agent.prefix_messages()) == before == json.dumps(bodies[0]["messages"][:-1])
    assert bodies[0]["tools"] == tool_schemas()
    tails = [b["messages"][-1] for b in bodies]
    assert all(t["role"] == "user" for t in tails) and len({t["content"] for t in tails}) == 3
    second = json.loads(tails[1]["content"])  # volatile tail only
    assert second["turn"] == 2 and second["inbox"] == TURNS[1][1]
    assert second["observation"]["commonsStock"] == 141.2
    assert "alice" in bodies[0]["messages"][0]["content"]


def test_no_talk_exposes_harvest_only(live_server, stub_state) -> None:
    agent = _agent(live_server, "scripted", no_talk=True)
    r = _run_turns(agent, TURNS[:1])[0]
    body = json.loads(stub_state["requests"][-1][1])
    assert [t["function"]["name"] for t in body["tools"]] == ["harvest"]
    assert "inbox" not in json.loads(body["messages"][-1]["content"])
    assert r.harvest == 0.75 and r.actions == []  # talk calls now rejected
    assert r.error.count("dropped") == 7


@pytest.mark.parametrize(
    "model,needle",
    [
        ("talk-only", "no valid harvest"),
        ("bad-harvest", "amount"),
        ("broken", "invalid JSON"),
    ],
)
def test_missing_or_bad_harvest_falls_back(live_server, model: str, needle: str) -> None:
    r = _run_turns(_agent(live_server, model), TURNS[:1], wealth=20.0)[0]
    assert r.fallback and r.harvest == pytest.approx(fallback_harvest(20.0))
    assert needle in r.error


def test_plain_json_answer_accepted(live_server) -> None:
    r = _run_turns(_agent(live_server, "plain-json"), TURNS[:1])[0]
    assert r.harvest == 0.9 and r.error is None


def test_deadline_and_dead_endpoint(live_server) -> None:
    t0 = time.perf_counter()
    r = _run_turns(_agent(live_server, "slow", timeout_ms=300), TURNS[:1])[0]
    assert r.fallback and "timeout" in r.error and time.perf_counter() - t0 < 0.3 + 0.15
    dead = LLMAgent(f"http://127.0.0.1:{dead_port()}/v1", "m", timeout_ms=500)
    r = _run_turns(dead, TURNS[:1])[0]
    assert r.fallback and "network" in r.error


def test_api_key_header_from_env(live_server, monkeypatch, stub_state) -> None:
    monkeypatch.setenv("BDPD_TEST_KEY", "sk-test")
    r = _run_turns(LLMAgent(f"{live_server.base}/v1", "m", api_key_env="BDPD_TEST_KEY"), TURNS[:1])[0]
    assert not r.fallback and stub_state["auth"][-1] == ("/v1/chat/completions", "Bearer sk-test")
    _run_turns(LLMAgent(f"{live_server.base}/v1", "m"), TURNS[:1])  # no credential: no header at all
    assert stub_state["auth"][-1] == ("/v1/chat/completions", None)


def test_parse_completion_edge_cases() -> None:
    assert parse_completion({})[0] is None
    assert parse_completion({"choices": []})[2] == ["response: no choices[0].message in completion"]
    call = {"function": {"name": "harvest", "arguments": {"amount": 1}}}  # dict args tolerated
    assert parse_completion({"choices": [{"message": {"tool_calls": [call]}}]})[0] == 1.0
    bad = {"choices": [{"message": {"tool_calls": [None, {"function": {"name": "harvest", "arguments": "[1]"}}]}}]}
    h, actions, errors = parse_completion(bad)
    assert h is None and len(errors) == 3


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="model"):
        LLMAgent("http://127.0.0.1:1/v1", "")
    with pytest.raises(ValueError, match="url"):
        LLMAgent("127.0.0.1/v1", "m")
    with pytest.raises(ValueError, match="timeout_ms"):
        LLMAgent("http://127.0.0.1:1/v1", "m", timeout_ms=-5)
