"""Issue 25, item 6 on the server: an arena with a discussion phase and LLM players (a
scripted stub model, no network) created over POST /api/arenas, ticked, streamed and read
back from turns.jsonl; bad options refused with 422 before anything is made."""

from __future__ import annotations

import httpx
from fake_llm import BASE, OPERATOR, FakeClient, completion, tool_call
from server_helpers import keys_of, payload, read_stream, serve

from bdpd_jax.config.discussion import MAX_DISCUSSION_ROUNDS
from bdpd_jax.host.live.players import MAX_RULES_CHARS
from bdpd_jax.host.live.replay import load

RULES = "A lake, five fishers, whole tons; catch what the lake can give back."


def answer(url: str, req: dict) -> bytes:
    import json

    tail = json.loads(req["messages"][-1]["content"])
    if tail.get("phase") == "discussion":
        other = [s for s in tail["speakers"] if s != tail["playerId"]][0]
        return completion([tool_call(0, "speak", {"text": f"{tail['playerId']}: take 2", "nextSpeaker": other})])
    return completion([tool_call(0, "harvest", {"amount": 2})])


def test_server_runs_a_discussion_arena_end_to_end(tmp_path, monkeypatch):
    client = FakeClient(answer)
    monkeypatch.setattr("bdpd_jax.host.live.arena_callers.own_client", lambda specs, n: client)
    body = {**payload(max_turns=3, players=1), "discussion": {"rounds": 3, "nextSpeaker": "named"}}
    llm = {
        "agentType": "llm",
        "model": "m",
        "baseUrl": BASE,
        "rulesText": RULES,
        "fallbackHarvest": 0,
        "temperature": 0.0,
    }
    with serve(tmp_path, operator=OPERATOR) as base, httpx.Client(base_url=base, timeout=60, trust_env=False) as http:
        too_many = {**body, "discussion": {"rounds": MAX_DISCUSSION_ROUNDS + 1}}
        assert http.post("/api/arenas", json=too_many).status_code == 422
        assert (
            http.post("/api/arenas", json={**body, "discussion": {"rounds": 2, "nextSpeaker": "x"}}).status_code == 422
        )
        assert len(list(tmp_path.iterdir())) == 0  # a refused create leaves nothing
        c = http.post("/api/arenas", json=body).json()
        aid, (owner, akey, _) = c["arenaId"], keys_of(c)
        join = f"/api/arenas/{aid}/join"
        assert (
            http.post(
                join, headers=akey, json={**llm, "name": "L", "rulesText": "x" * (MAX_RULES_CHARS + 1)}
            ).status_code
            == 422
        )
        assert http.post(join, headers=akey, json={**llm, "name": "L", "temperature": 9}).status_code == 422
        for name in ("L1", "L2"):
            assert http.post(join, headers=akey, json={**llm, "name": name}).status_code == 200
        http.post(f"/api/arenas/{aid}/start", headers=owner).raise_for_status()
        t1 = http.post(f"/api/arenas/{aid}/tick", headers=owner).json()["tick"]
        rows = t1["discussion"]["utterances"]
        assert [(u["speaker"], u["nextSpeaker"], u["named"]) for u in rows] == [
            ("L1", "L2", True),
            ("L2", "L1", True),
            ("L1", "L2", True),
        ]
        assert t1["discussion"]["report"]["catches"]["L1"] == 2.0
        init = read_stream(http, f"/api/arenas/{aid}/stream", headers=akey, until="init")[-1][1]
        assert init["history"][0]["discussion"] == t1["discussion"]  # players read it too
        assert "stock" not in init["history"][0]
        http.post(f"/api/arenas/{aid}/tick", headers=owner).raise_for_status()
        http.post(f"/api/arenas/{aid}/tick", headers=owner).raise_for_status()
        http.post(f"/api/arenas/{aid}/close", headers=owner).raise_for_status()
    recs = load(tmp_path / aid)[1]
    assert [len(r.get("discussion", {}).get("utterances", [])) for r in recs] == [3, 3, 0]
    assert recs[0]["discussion"] == t1["discussion"]
    sent = [q for _, q in client.requests]
    assert all(q["messages"][0]["content"].startswith(RULES) and q["temperature"] == 0.0 for q in sent)
    assert sum(t["function"]["name"] == "speak" for t in sent[0]["tools"]) == 1
