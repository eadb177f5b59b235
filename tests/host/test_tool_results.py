"""003_*: each tool call's result ({ok, scope, ...}, refusals included) reaches the caller in
its next request -- HTTP body, LLM last message, any agent's observation envelope."""

from __future__ import annotations

import copy
import json

from payloads import SEED_LOGISTIC

from bdpd_jax.host.agents.llm import LLMAgent
from bdpd_jax.host.live.arena import Arena


def _cfg():
    c = copy.deepcopy(SEED_LOGISTIC)
    c["model"].update(maxTurns=3, minPlayers=2)
    return c


def test_players_get_their_tool_results_next_turn(live_server, stub_state):
    a = Arena(_cfg(), seed=1)
    a.join({"agentType": "builtin", "name": "b0"})
    a.join({"agentType": "http", "name": "web", "url": f"{live_server.base}/ok"})
    a.join(
        {
            "agentType": "scripted",
            "name": "s",
            "script": [
                {
                    "harvest": 1.0,
                    "actions": [{"tool": "pledge", "maxHarvest": 2.0}, {"tool": "accept_pact", "pactId": "nope"}],
                },
                {"harvest": 1.0},
            ],
        }
    )
    r1 = a.tick()
    a.tick()
    # HTTP: the request body of turn 2 carries what turn 1's calls returned
    bodies = [json.loads(raw) for path, raw in stub_state["requests"] if path == "/ok"]
    assert bodies[0]["toolResults"] == []  # nothing called yet
    got = bodies[1]["toolResults"]
    mine = [t["result"] for t in r1["tools"] if t["playerId"] == "web"]
    assert got[: len(mine)] == mine and len(mine) == 3  # broadcast ok, send_private refused, announce ok
    assert [g["ok"] for g in mine] == [True, False, True] and all("scope" in g for g in got)
    assert got[-1]["ok"] is False and "dropped" in got[-1]["reason"]  # the agent's dropped actions, as one error
    # any agent's envelope (here a scripted one), and the LLM's last message
    seen = a.agents[2].seen
    assert seen[0]["toolResults"] == []
    assert [(r["tool"], r["ok"], r["scope"]) for r in seen[1]["toolResults"]] == [
        ("pledge", True, "self-only"),
        ("accept_pact", False, "proposer + parties"),
    ]
    llm = LLMAgent("http://127.0.0.1:9/v1", "m", player_id="s")
    tail = json.loads(llm.volatile_message(seen[1], None)["content"])
    assert tail["toolResults"] == seen[1]["toolResults"] and "toolResults" not in tail["observation"]
    a.close()
