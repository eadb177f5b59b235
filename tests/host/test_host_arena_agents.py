"""Live arenas with real agent runners on loopback: many HTTP players at once, an LLM player
against the OpenAI-compatible stub, code agents with private memory."""

from __future__ import annotations

import copy
import json
import time

from payloads import SEED_LOGISTIC

from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.live_batch import LiveBatch


def _cfg(**model):
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(model)
    cfg["players"] = []
    return cfg


def test_many_http_and_llm_players_are_asked_concurrently(live_server, stub_state):
    """10 arenas x (3 HTTP players answering after 0.3 s + 1 LLM player): a turn costs ~0.3 s,
    not 30 x 0.3 s, and ONE decide + ONE step kernel call for all 10 arenas."""
    delay, n_arenas = 0.3, 10
    arenas = []
    for k in range(n_arenas):
        a = Arena(_cfg(maxTurns=3), seed=1, arena_index=k, operator={"llmBaseUrls": [live_server.base]})
        for i in range(3):
            a.join({"agentType": "http", "name": f"h{i}", "url": f"{live_server.base}/slow?d={delay}&h=0.{i + 1}"})
        a.join({"agentType": "llm", "name": "gpt", "baseUrl": f"{live_server.base}/v1", "model": "default"})
        arenas.append(a)
    batch = LiveBatch(arenas)
    batch.tick()  # compile + warm connections
    calls = {"decide": 0, "step": 0}
    inner = batch._batch
    dec, stp = inner._decide, inner._step

    def count(name, fn):
        def wrapped(*args):
            calls[name] += 1
            return fn(*args)

        return wrapped

    inner._decide, inner._step = count("decide", dec), count("step", stp)
    t0 = time.perf_counter()
    recs = batch.tick()
    wall = time.perf_counter() - t0
    assert wall < 4 * delay, wall  # serial would be 9 s
    assert calls == {"decide": 1, "step": 1}
    for rec in recs:
        assert [d["harvest"] for d in rec["decisions"]] == [0.1, 0.2, 0.3, 0.5]
        assert all(d["fallback"] is False and d["error"] is None for d in rec["decisions"])
    batch.run()
    assert all(a.status == "closed" and a.turn == 3 for a in arenas)
    # the observation envelope went out as strict JSON with the kernel observation, pacts, inbox
    obs = json.loads(next(raw for path, raw in reversed(stub_state["requests"]) if path == "/slow"))
    assert obs["turn"] == 3 and {"commonsStock", "myWealth", "pacts", "inbox", "othersHarvest"} <= set(obs)
    assert obs["regenRate"] is None


def test_http_failures_fall_back_and_are_recorded(live_server):
    a = Arena(_cfg(maxTurns=2, minPlayers=2), seed=0, out_dir=None)
    a.join({"agentType": "http", "name": "ok", "url": f"{live_server.base}/ok"})
    a.join({"agentType": "http", "name": "late", "url": f"{live_server.base}/slow?d=2", "timeoutMs": 200})
    rec = a.tick()
    ok, late = rec["decisions"]
    assert ok["harvest"] == 1.25 and late["fallback"] is True and "timeout" in late["error"]
    assert late["harvest"] == late["requested"] == 0.2 * (1 + 0.05 * 30)
    # /ok's actions: broadcast ok; send_private to 'bob' (not in this arena) kept for audit only
    assert [t["result"]["ok"] for t in rec["tools"]] == [True, False, True]
    assert rec["errors"][0]["playerId"] in ("ok", "late")
    a.close()


def test_llm_player_tool_calls_reach_the_arena(live_server, stub_state):
    a = Arena(
        _cfg(maxTurns=3, minPlayers=2),
        seed=0,
        operator={"credentials": {"stub": {"baseUrl": f"{live_server.base}/v1", "apiKeyEnv": "BDPD_TEST_NO_SUCH_KEY"}}},
    )
    a.join({"agentType": "llm", "name": "alice", "credential": "stub", "model": "scripted"})
    a.join({"agentType": "http", "name": "bob", "url": f"{live_server.base}/slow?d=0&h=0.5"})
    r1 = a.tick()
    alice = r1["decisions"][0]
    # the kernel's float32 round-to-3-decimals (docs/semantics.md §13): within one ulp of 0.7
    assert alice["harvest"] == 0.75 and abs(alice["announced"] - 0.7) < 1e-6 and not alice["fallback"]
    tools = [(t["action"]["tool"], t["result"]["ok"]) for t in r1["tools"]]
    assert tools == [("broadcast", True), ("pledge", True), ("propose_pact", True), ("announce_intended_harvest", True)]
    assert {p["status"] for p in r1["pacts"]} == {"active", "proposed"}
    r2 = a.tick()
    # turn 2: the LLM saw last turn's inbox (nothing from bob) and its pacts; it proposes again
    body = json.loads(next(raw for path, raw in reversed(stub_state["requests"]) if path.endswith("completions")))
    tail = json.loads(body["messages"][-1]["content"])
    assert tail["turn"] == 2 and tail["inbox"] == []
    pacts = tail["observation"]["pacts"]
    assert len(pacts["active"]) == 1 and pacts["proposed"][0]["awaitingYou"] is False  # turn 1 pledge + proposal
    assert r2["decisions"][0]["harvest"] == 0.75
    a.close()


def test_code_agent_memory_persists_across_turns():
    code = """function decide(obs, memory) {
      memory.turns = (memory.turns || 0) + 1;
      if (!memory.stocks) memory.stocks = [];
      memory.stocks.push(obs.commonsStock);
      return 0.1 * memory.turns;
    }"""
    a = Arena(_cfg(maxTurns=4, minPlayers=2), seed=0)
    a.join({"agentType": "code", "name": "js", "strategyCode": code})
    a.join({"agentType": "code", "name": "bad", "strategyCode": "function decide(o, m) { throw new Error('boom') }"})
    a.run()
    assert [r["decisions"][0]["harvest"] for r in a.records] == [0.1, 0.2, 0.30000000000000004, 0.4]
    assert a.agents[0].memory["turns"] == 4 and len(a.agents[0].memory["stocks"]) == 4
    bad = [r["decisions"][1] for r in a.records]
    assert all(d["fallback"] and "boom" in d["error"] for d in bad)
