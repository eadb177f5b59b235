"""Issue 17: a live governance agent (HTTP, LLM or scripted) attached by the owner at create
drives an external ``governance_agent`` plugin through the kernel's action set (GovAction):
live == batch for the same actions, replay == live, bad answers refused cleanly (the turn
goes on, the error is recorded, nothing else is lost), secrets stay the operator's."""

from __future__ import annotations

import asyncio
import copy
import json

import numpy as np
import pytest
from fake_llm import BASE, FakeClient, completion, tool_call
from fastapi.testclient import TestClient
from payloads import SEED_LOGISTIC

import bdpd_jax
from bdpd_jax.host.agents.transport import TransportError
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.governance_agent import MAX_GOV_RESPONSE_BYTES, parse_answer
from bdpd_jax.host.live.interrupt import INTERRUPTED
from bdpd_jax.host.live.replay import replay, strip_volatile

TURNS = 5
GOV_URL = "http://gov.test/act"


def _cfg(external: bool = True) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxPlayers=3, minPlayers=3, maxTurns=TURNS)
    cfg["players"] = [
        {"strategy": "aggressive", "intensity": 0.6, "name": "a"},
        {"strategy": "conservative", "name": "c"},
        {"strategy": "adaptive", "name": "d"},
    ]
    cfg["perturbations"] = [
        {
            "id": "s",
            "type": "sanction",
            "trigger": {"kind": "pact_violation"},
            "payload": {"amount": 0.5, "reason": "cap-breach"},
        }
    ]
    if not external:  # the built-in rule, made to act at every turn it can
        cfg["plugins"] = [
            {
                "type": "governance_agent",
                "id": "governance-agent",
                "coop_below": 0.0,
                "stock_below": 10.0,
                "cap": 1.0,
                "tighten": 2.0,
                "regen": 0.2,
                "cooldown": 1,
            }
        ]
    return cfg


# What the built-in rule above does (kernels/governance_agent.decide): at the end of turn 1
# it imposes the cap, doubles the scale and mandates regen; then only doubles the scale
# (cap and regen already in force). Its action binds the next turn; before turn 1, nothing.
BUILTIN_ACTIONS = [
    {},
    {"cap": 1.0, "ladder_scale": 2.0, "regen": 0.2},
    {"ladder_scale": 4.0},
    {"ladder_scale": 8.0},
    {"ladder_scale": 16.0},
]


def test_live_agent_equals_the_builtin_rule_in_batch(tmp_path):
    res = bdpd_jax.simulate(_cfg(external=False), n_arenas=1, seed=4)
    arena = Arena(
        _cfg(), seed=4, out_dir=tmp_path / "a", governance_agent={"kind": "scripted", "script": BUILTIN_ACTIONS}
    )
    assert [p.external for p in arena.config.plugins] == [True]
    recs = [arena.tick() for _ in range(TURNS)]
    pl, tu = res.players, res.turns
    for rec in recs:
        p = pl[pl.turn == rec["turn"]].sort_values("player")
        for key in ("wealth", "sanction", "actual"):
            np.testing.assert_array_equal(np.float32([d[key] for d in rec["decisions"]]), p[key].to_numpy())
        t = tu[tu.turn == rec["turn"]]
        np.testing.assert_array_equal(np.float32(rec["stock"]), t.stock.to_numpy()[0])
        np.testing.assert_array_equal(np.float32(rec["regen"]), t.regen.to_numpy()[0])
    assert [r["governance"]["action"] for r in recs] == BUILTIN_ACTIONS
    assert recs[1]["governance"]["applied"] == {"cap": 1.0, "ladder_scale": 2.0, "regen": 0.2}
    assert recs[0]["governance"]["applied"] == {"cap": None, "ladder_scale": None, "regen": None}
    assert any(r["sanctions"] for r in recs[1:])  # the regulator's cap is enforced
    s = [x for r in recs[2:] for x in r["sanctions"]]
    assert {x["amount"] for x in s if x["turn"] == 3} <= {2.0}  # 0.5 x scale 4
    reg = [p for p in recs[-1]["pacts"] if p["proposerId"] is None]
    assert len(reg) == 1 and reg[0]["status"] == "active" and reg[0]["terms"]["maxHarvest"] == 1.0
    arena.close()
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert meta["governanceAgent"] == {"kind": "scripted"}  # the script is the log's
    again = replay(tmp_path / "a")  # verify: every record equal
    assert [strip_volatile(r) for r in again.records] == [strip_volatile(r) for r in recs]


def test_live_batch_writes_each_arenas_action_into_its_own_slice():
    """Two arenas in one LiveBatch (one kernel call per phase): arena 0's agent gives the
    built-in rule's actions and plays the batched built-in run; arena 1's gives none."""
    from bdpd_jax.host.live.live_batch import LiveBatch

    res = bdpd_jax.simulate(_cfg(external=False), n_arenas=1, seed=4)
    arenas = [
        Arena(_cfg(), seed=4, governance_agent={"kind": "scripted", "script": BUILTIN_ACTIONS}),
        Arena(_cfg(), seed=4, arena_index=1, governance_agent={"kind": "scripted", "script": [{}]}),
    ]
    batch = LiveBatch(arenas, gc_freeze=False)
    batch.run()
    pl = res.players
    for rec in arenas[0].records:
        p = pl[pl.turn == rec["turn"]].sort_values("player")
        np.testing.assert_array_equal(np.float32([d["wealth"] for d in rec["decisions"]]), p.wealth.to_numpy())
    assert [r["governance"]["applied"]["ladder_scale"] for r in arenas[0].records] == [None, 2.0, 4.0, 8.0, 16.0]
    assert all(
        r["governance"]["applied"] == {"cap": None, "ladder_scale": None, "regen": None} for r in arenas[1].records
    )
    assert all(p["status"] == "inactive" for r in arenas[1].records for p in r["pacts"] if p["proposerId"] is None)
    batch.close()


def test_resumed_arena_reattaches_its_live_agent(tmp_path):
    arena = Arena(
        _cfg(), seed=4, out_dir=tmp_path / "r", governance_agent={"kind": "scripted", "script": BUILTIN_ACTIONS}
    )
    logged = [arena.tick() for _ in range(2)]  # then killed: never closed
    with pytest.raises(ValueError, match="governance_agent"):
        replay(tmp_path / "r", resume={})
    again = replay(tmp_path / "r", resume={}, governance_agent={"kind": "scripted", "script": [{"cap": 2.5}]})
    assert [strip_volatile(r) for r in again.records] == [strip_volatile(r) for r in logged]
    r3 = again.tick()
    assert r3["governance"]["action"] == {"cap": 2.5} and r3["governance"]["applied"]["cap"] == 2.5
    again.close()
    assert [r["turn"] for r in replay(tmp_path / "r").records] == [1, 2, 3]  # the folder replays whole


def _http_answers(url, obs):
    """By turn: the answer an HTTP regulator gives (some hostile)."""
    t = obs["turn"]
    return {
        1: b'{"cap": 1.5}',
        2: b'{"cap": -1, "ladder_scale": 3.0, "mood": "grim"}',  # negative cap, unknown key: dropped
        3: b'{"cap": "2", "regen": NaN}',  # not JSON (NaN)
        4: b'{"cap": "lift", "ladder_scale": true, "regen": 1e300}',  # bool, magnitude
        5: b'{"pad": "' + b"x" * (2 * MAX_GOV_RESPONSE_BYTES) + b'"}',  # over the cap
    }[t]


def test_http_agent_sees_the_last_turn_and_bad_answers_are_refused(tmp_path):
    client = FakeClient(_http_answers)
    arena = Arena(
        _cfg(),
        seed=5,
        client=client,
        out_dir=tmp_path / "h",
        governance_agent={"kind": "http", "url": GOV_URL, "timeoutMs": 500},
    )
    recs = [arena.tick() for _ in range(TURNS)]
    gov = [r["governance"] for r in recs]
    obs = [req for url, req in client.requests if url == GOV_URL]
    assert [o["turn"] for o in obs] == [1, 2, 3, 4, 5]
    assert obs[0]["last"] is None and obs[0]["players"] == ["a", "c", "d"]
    last = obs[1]["last"]
    assert last["turn"] == 1 and set(last["metrics"]) >= {"cooperation_index", "sanction_rate"}
    assert [p["wealth"] for p in last["players"]] == [d["wealth"] for d in recs[0]["decisions"]]
    assert "reserveDrawn" not in json.dumps(obs) and "messages" not in last  # no hidden reserve, no messages
    assert obs[1]["inForce"]["cap"] == 1.5 and obs[1]["history"][0]["action"] == {"cap": 1.5}
    # the answers, turn by turn
    assert gov[0]["action"] == {"cap": 1.5} and gov[0]["applied"]["cap"] == 1.5 and gov[0]["error"] is None
    assert gov[1]["action"] == {"ladder_scale": 3.0}
    assert "cap dropped" in gov[1]["error"] and "mood dropped" in gov[1]["error"]
    assert gov[2]["action"] == {} and gov[2]["fallback"] and "invalid JSON" in gov[2]["error"]
    assert gov[3]["action"] == {"cap": "lift"} and "ladder_scale dropped" in gov[3]["error"]
    assert "regen dropped" in gov[3]["error"] and gov[3]["applied"]["cap"] == "lift"
    assert gov[4]["action"] == {} and gov[4]["fallback"] and "exceeds" in gov[4]["error"]
    assert all(r["turn"] == k + 1 for k, r in enumerate(recs))  # every turn played
    arena.close()
    again = replay(tmp_path / "h")
    assert [strip_volatile(r) for r in again.records] == [strip_volatile(r) for r in recs]


def test_llm_agent_acts_through_its_tools_with_the_operators_credential(tmp_path):
    def answer(url, req):
        calls = [
            tool_call(0, "propose_cap", {"maxHarvest": 1.2}),
            tool_call(1, "scale_ladder", {"factor": 2}),
            tool_call(2, "set_regen", {"value": "x"}),
            tool_call(3, "launch_missiles", {}),
            tool_call(4, "propose_cap", {"maxHarvest": 9}),
        ]
        return completion(calls)

    client = FakeClient(answer)
    op = {"credentials": {"c": {"baseUrl": BASE, "apiKey": "sk-SECRET"}}}
    with pytest.raises(ValueError, match="baseUrl"):  # endpoints are the operator's
        Arena(
            _cfg(),
            seed=5,
            operator=op,
            governance_agent={"kind": "llm", "model": "m", "baseUrl": "http://evil.test/v1"},
        )
    arena = Arena(
        _cfg(),
        seed=5,
        client=client,
        operator=op,
        out_dir=tmp_path / "l",
        governance_agent={"kind": "llm", "model": "m", "credential": "c"},
    )
    r1 = arena.tick()
    url, req = client.requests[0]
    assert url == f"{BASE}/chat/completions" and client.headers[0]["authorization"] == "Bearer sk-SECRET"
    assert [t["function"]["name"] for t in req["tools"]] == ["propose_cap", "lift_cap", "scale_ladder", "set_regen"]
    assert json.loads(req["messages"][-1]["content"])["turn"] == 1
    g = r1["governance"]
    assert g["action"] == {"cap": 1.2, "ladder_scale": 2.0}
    assert "regen dropped" in g["error"] and "launch_missiles" in g["error"] and "set twice" in g["error"]
    arena.close()
    assert "SECRET" not in (tmp_path / "l" / "meta.json").read_text()
    assert "SECRET" not in (tmp_path / "l" / "turns.jsonl").read_text()


def _gov_llm_arena(out, cache, client: FakeClient, **kw) -> Arena:
    """An LLM regulator at temperature 0 behind the operator's endpoint limits and cache."""
    endpoint = {"baseUrl": BASE, "maxInFlight": 3, "requestsPerMinute": 6000}  # (a limiter of its own)
    op = {"llmBaseUrls": [BASE], "llmEndpoints": [endpoint], "llmCacheDir": str(cache)}
    spec = {"kind": "llm", "model": "m", "baseUrl": BASE, "temperature": 0}
    return Arena(_cfg(), seed=5, client=client, operator=op, out_dir=out, governance_agent=spec, **kw)


def _logged(folder) -> list[dict]:
    return [strip_volatile(json.loads(line)) for line in (folder / "turns.jsonl").read_text().splitlines()]


def _gov_llm_answer(url, req):
    body = json.loads(completion([tool_call(0, "scale_ladder", {"factor": 2})]))
    return json.dumps({**body, "usage": {"prompt_tokens": 50, "completion_tokens": 3}}).encode()


def test_llm_agent_calls_through_the_arenas_limits_cache_and_token_account(tmp_path):
    """Issue 38: the owner's LLM regulator goes through the players' call layer: its calls
    hold the endpoint's limiter, its tokens are on the governance entry, in the turn's and
    the arena's usage and in the report (``governanceAgent.usage``); replay gives them back;
    a re-run at temperature 0 makes no call and gives the same records; its tokens spend the
    arena's ``tokenBudget``."""
    from bdpd_jax.host.agents.llm_limits import limiter_for

    limiter = limiter_for(BASE, 3, 6000)
    client = FakeClient(_gov_llm_answer)
    arena = _gov_llm_arena(tmp_path / "a", tmp_path / "cache", client)
    summary = arena.run()
    recs = _logged(tmp_path / "a")
    assert len(client.requests) == TURNS and limiter.peak == 1  # each call held the endpoint's limiter
    tokens = {"promptTokens": 50, "completionTokens": 3}
    assert [r["governance"]["usage"] for r in recs] == [tokens] * TURNS
    assert [r["usage"] for r in recs] == [tokens] * TURNS  # the arena's usage of the turn
    assert summary["usage"] == summary["governanceAgent"]["usage"] == {"promptTokens": 250, "completionTokens": 15}
    assert json.loads((tmp_path / "a" / "meta.json").read_text())["llmCalls"]["sent"] == TURNS
    assert replay(tmp_path / "a").close() == summary  # replay reads the tokens back from the log

    again_client = FakeClient(_gov_llm_answer)
    again = _gov_llm_arena(tmp_path / "b", tmp_path / "cache", again_client)
    again.run()
    assert again_client.requests == [] and again.llm.account.cached == TURNS
    assert _logged(tmp_path / "b") == recs

    spent = _gov_llm_arena(tmp_path / "c", tmp_path / "cache2", FakeClient(_gov_llm_answer), token_budget=100)
    out = spent.run()  # 53 tokens a turn: turn 2 spends the budget and is the last
    assert out["turnsPlayed"] == 2 and out["stopped"].startswith("tokenBudget: 106 tokens")


def test_agent_failures_give_no_action_and_the_turn_goes_on():
    def answer(url, obs):
        return TransportError("timeout: no response within 500 ms") if obs["turn"] == 1 else (500, b"{}")

    arena = Arena(_cfg(), seed=5, client=FakeClient(answer), governance_agent={"kind": "http", "url": GOV_URL})
    g1, g2 = arena.tick()["governance"], arena.tick()["governance"]
    assert g1["fallback"] and g1["action"] == {} and g1["error"].startswith("timeout")
    assert g2["fallback"] and "status 500" in g2["error"]
    assert g2["applied"] == {"cap": None, "ladder_scale": None, "regen": None}


class _Silent:
    """An HTTP client whose governance agent never answers (``asked`` once it is waiting)."""

    def __init__(self) -> None:
        self.asked = asyncio.Event()

    async def post(self, url, body, headers, timeout_s, max_bytes):
        self.asked.set()
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        pass


def test_close_interrupts_a_wait_on_the_governance_agent(tmp_path):
    """Issue 35: the owner's close or delete ends a wait on the governance agent as it ends the
    players' (host/live/interrupt.py): the turn completes at once with no action and the error
    ``INTERRUPTED``, well before the agent's 60 s deadline, and the folder replays."""
    cfg = {**_cfg(), "agentTimeout": 60_000}
    client = _Silent()
    arena = Arena(cfg, seed=5, client=client, out_dir=tmp_path / "g", governance_agent={"kind": "http", "url": GOV_URL})

    async def tick_then_close():
        ticking = asyncio.ensure_future(arena.atick())
        await asyncio.wait_for(client.asked.wait(), 60)
        with arena.interrupting():  # what POST /close and DELETE hold while they wait
            return await asyncio.wait_for(ticking, 20)  # the agent alone would hold it 61 s

    g = asyncio.run(tick_then_close())["governance"]
    assert g["action"] == {} and g["fallback"] and g["error"] == INTERRUPTED
    arena.close()
    again = replay(tmp_path / "g")
    assert again.records[-1]["governance"]["error"] == INTERRUPTED


def test_real_transport_caps_the_body_and_the_agent_closes_its_own_client(live_server):
    arena = Arena(
        _cfg(), seed=5, governance_agent={"kind": "http", "url": f"{live_server.base}/bad?kind=huge&chunked=1"}
    )
    g = arena.tick()["governance"]
    assert g["fallback"] and f"exceeds {MAX_GOV_RESPONSE_BYTES} bytes" in g["error"]
    arena.close()


def test_parse_answer_checks_each_field():
    assert parse_answer({"cap": 2, "ladder_scale": 0.0, "regen": 0.1}) == (
        {"cap": 2, "ladder_scale": 0.0, "regen": 0.1},
        [],
    )
    for body, field in (
        ({"cap": 0}, "cap"),
        ({"cap": True}, "cap"),
        ({"ladder_scale": -1}, "ladder_scale"),
        ({"regen": "0.1"}, "regen"),
        ({"regen": [1]}, "regen"),
        ({"cap": 1e20}, "cap"),
        ({"cap": "LIFT"}, "cap"),
    ):
        action, errors = parse_answer(body)
        assert action == {} and len(errors) == 1 and errors[0].startswith(f"{field} dropped"), (body, errors)
    assert parse_answer([1])[1] == ["response: expected a JSON object, got list"]


def test_attaching_is_checked_and_served(tmp_path):
    with pytest.raises(ValueError, match=r"plugins\[0\].external"):  # an external plugin needs an agent
        cfg = _cfg()
        cfg["plugins"] = [{"type": "governance_agent", "id": "g", "external": True}]
        Arena(cfg, seed=1)
    with pytest.raises(ValueError, match="timeoutMs"):  # only shorter than agentTimeout
        Arena(_cfg(), seed=1, governance_agent={"kind": "http", "url": GOV_URL, "timeoutMs": 10**6})
    with pytest.raises(ValueError, match="apiKeyEnv"):
        Arena(_cfg(), seed=1, governance_agent={"kind": "llm", "model": "m", "apiKeyEnv": "HOME"})
    from bdpd_jax.host.server import create_app

    with TestClient(create_app(tmp_path)) as c:
        body = {
            **_cfg(),
            "seed": 4,
            "perturbable": False,
            "governanceAgent": {"kind": "scripted", "script": BUILTIN_ACTIONS},
        }
        made = c.post("/api/arenas", json=body).json()
        owner = {"X-Owner-Key": made["ownerKey"]}
        aid = made["arenaId"]
        assert c.post(f"/api/arenas/{aid}/start", headers=owner).status_code == 200
        c.post(f"/api/arenas/{aid}/tick", headers=owner)
        tick = c.post(f"/api/arenas/{aid}/tick", headers=owner).json()["tick"]
        assert tick["governance"]["action"] == BUILTIN_ACTIONS[1]
        assert c.get(f"/api/arenas/{aid}/owner", headers=owner).json()["meta"]["governanceAgent"] == {
            "kind": "scripted"
        }
        bad = c.post(
            "/api/arenas",
            json={**body, "governanceAgent": {"kind": "llm", "model": "m", "baseUrl": "http://evil.test/v1"}},
        )
        assert bad.status_code == 400 and "baseUrl" in bad.text
        ftp = c.post("/api/arenas", json={**body, "governanceAgent": {"kind": "ftp"}})  # not a registered kind
        assert ftp.status_code == 400 and "kind: unknown governance agent kind 'ftp'" in ftp.json()["detail"]
