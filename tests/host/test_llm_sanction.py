"""Issue 17: an LLM player is offered ``sanction(target, reason)`` when the arena runs a
``voluntary_sanction`` plugin, and its calls (and a JS player's, returning ``{harvest,
actions}``) take the same path as a scripted (HTTP) player's: same tool results, same
sanction rows, same state; replay reproduces the run."""

from __future__ import annotations

import copy

from fake_llm import BASE, OPERATOR, FakeClient, completion, tool_call
from payloads import SEED_LOGISTIC

from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.replay import replay, strip_volatile

CALLS = [
    {"tool": "sanction", "target": "a", "reason": "greedy"},
    {"tool": "sanction", "target": "i"},
    {"tool": "sanction", "target": "s"},
]


def _cfg(plugin: bool) -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxPlayers=3, minPlayers=3, maxTurns=3)
    cfg["players"] = [{"strategy": "aggressive", "intensity": 0.5, "name": "a"}, {"strategy": "idle", "name": "i"}]
    if plugin:
        cfg["plugins"] = [{"type": "voluntary_sanction", "id": "vs", "cost": 0.5, "fine": 2.0, "sanctioner": "never"}]
    return cfg


def _llm_answer(url, req):
    calls = [tool_call(k, c["tool"], {x: v for x, v in c.items() if x != "tool"}) for k, c in enumerate(CALLS)]
    return completion(calls + [tool_call(9, "harvest", {"amount": 0.0})])


JS = (
    "function decide(obs, memory) { return {harvest: 0, actions: ["
    "{tool: 'sanction', target: 'a', reason: 'greedy'}, {tool: 'sanction', target: 'i'}, "
    "{tool: 'sanction', target: 's'}]}; }"
)


def _arena(plugin: bool, llm: bool | str, **kw) -> tuple[Arena, FakeClient]:
    client = FakeClient(_llm_answer)
    arena = Arena(_cfg(plugin), seed=2, client=client, operator=OPERATOR, **kw)
    if llm == "code":
        arena.join({"agentType": "code", "name": "s", "strategyCode": JS})
    elif llm:
        arena.join({"agentType": "llm", "name": "s", "model": "m", "baseUrl": BASE})
    else:
        arena.join({"agentType": "scripted", "name": "s", "script": [{"harvest": 0.0, "actions": CALLS}]})
    return arena, client


def _tool_names(req) -> list[str]:
    return [t["function"]["name"] for t in req["tools"]]


def test_llm_player_gets_the_sanction_tool_only_with_the_plugin():
    arena, client = _arena(True, True, no_talk=True)
    arena.tick()
    url, req = client.requests[0]
    assert url == f"{BASE}/chat/completions"
    assert _tool_names(req) == ["harvest", "sanction"]  # --no-talk keeps it: not talk
    assert "`sanction`" in req["messages"][0]["content"]
    # without the plugin: not offered (the agent's fixed tool list and prompt, no turn needed),
    # and a call anyway is refused as any player's is
    arena, client = _arena(False, True)
    arena.start()
    agent = arena.agents[-1]
    names = [t["function"]["name"] for t in agent.tools]
    assert "sanction" not in names and "broadcast" in names
    assert "`sanction`" not in agent.prefix_messages()[0]["content"]
    out = arena.dispatch("s", {"tool": "sanction", "target": "a"})
    assert not out["ok"] and "no voluntary_sanction plugin" in out["reason"]


def test_llm_sanction_calls_take_the_scripted_players_path_and_replay(tmp_path):
    live, _ = _arena(True, True, out_dir=tmp_path / "llm", no_talk=True)
    ref, _ = _arena(True, False, no_talk=True)
    got, want = [live.tick() for _ in range(3)], [ref.tick() for _ in range(3)]
    assert [strip_volatile(g) for g in got] == [strip_volatile(w) for w in want]
    r1 = got[0]
    assert [t["result"]["ok"] for t in r1["tools"]] == [True, True, False]
    assert [(r["playerId"], r["paidBy"], r["amount"], r["cost"], r["reason"]) for r in r1["sanctions"]] == [
        ("a", "s", 2.0, 0.5, "over_harvest")
    ]  # i harvested nothing: no fine, no cost
    assert r1["decisions"][2]["wealth"] == 30.0 - 0.5  # s paid one cost
    live.close()
    again = replay(tmp_path / "llm")  # verify=True: every record equal
    assert [strip_volatile(r) for r in again.records] == [strip_volatile(r) for r in got]
    js, _ = _arena(True, "code", no_talk=True)  # a JS player's {harvest, actions}
    assert [strip_volatile(js.tick()) for _ in range(3)] == [strip_volatile(w) for w in want]
    js.close()


def test_js_object_result_is_read_by_the_http_rule():
    from bdpd_jax.host.agents.code import MAX_RESULT_CHARS, check_answer

    def ans(value, kind="object"):
        return check_answer({"ok": True, "kind": kind, "value": value, "memory": "{}"}, 1 << 20)

    out = ans('{"harvest": 1.5, "actions": [{"tool": "sanction", "target": "a"}, {"tool": "nuke"}], "announced": 1}')
    assert out["ok"] and out["harvest"] == 1.5
    assert out["actions"] == [
        {"tool": "sanction", "target": "a", "reason": None},
        {"tool": "announce_intended_harvest", "value": 1.0},
    ]
    assert len(out["errors"]) == 1 and "nuke" in out["errors"][0]
    assert ans(2.0, "number") == {"ok": True, "harvest": 2.0, "actions": [], "errors": [], "memory": "{}"}
    for bad, needle in (
        ('{"actions": []}', "harvest"),
        ("[1, 2]", "JSON object"),
        ('{"harvest": -1}', "harvest"),
        ('{"harvest": 1, "pad": "' + "x" * MAX_RESULT_CHARS + '"}', "over"),
    ):
        out = ans(bad)
        assert not out["ok"] and needle in out["error"], (bad, out)
    assert not ans("x", "string")["ok"]
