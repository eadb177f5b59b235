"""Limits belong to the owner: per-player timeouts only shorter than the arena's, free-text
sizes checked at join, per-turn action caps, truncated errors, bounded in-memory records and
stale temp files cleaned at start."""

from __future__ import annotations

import copy
import json

import pytest
from payloads import SEED_LOGISTIC

from bdpd_jax.host.agents.base import MAX_ERROR_CHARS, AgentResult, truncate_error
from bdpd_jax.host.agents.llm import parse_completion
from bdpd_jax.host.agents.tools import (
    MAX_ACTIONS_PER_TURN,
    MAX_ANSWER_ENTRIES,
    MAX_MESSAGES_PER_TURN,
    ActionBudget,
    validate_actions,
)
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.persist import atomic_write_json, clean_stale_tmp, read_jsonl
from bdpd_jax.host.live.players import MAX_CODE_CHARS, MAX_NAME_CHARS


def _cfg(**model):
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(model)
    cfg["players"] = []
    cfg["agentTimeout"] = 500
    return cfg


@pytest.mark.parametrize(
    "spec,field",
    [
        ({"agentType": "http", "url": "http://127.0.0.1:9/d", "timeoutMs": 60000}, "timeoutMs"),
        ({"agentType": "code", "strategyCode": "function decide(){return 1}", "timeoutMs": 3000}, "timeoutMs"),
        ({"agentType": "http", "url": "http://127.0.0.1:9/d", "name": "n" * (MAX_NAME_CHARS + 1)}, "name"),
        ({"agentType": "code", "strategyCode": "function decide(){return 1}//" + "x" * MAX_CODE_CHARS}, "strategyCode"),
        ({"agentType": "http", "url": "http://127.0.0.1:9/" + "p" * 3000}, "url"),
    ],
)
def test_join_refuses_players_setting_their_own_limits(spec, field) -> None:
    a = Arena(_cfg(minPlayers=1), seed=0)
    with pytest.raises(ValueError, match=field):
        a.join(spec)
    assert a.players == []


def test_shorter_timeouts_are_kept() -> None:
    a = Arena(_cfg(minPlayers=2, maxPlayers=2), seed=0)
    a.join({"agentType": "http", "name": "h", "url": "http://127.0.0.1:9/d", "timeoutMs": 120})
    a.join({"agentType": "code", "name": "c", "strategyCode": "function decide(){return 1}", "timeoutMs": 20})
    a.start()
    assert a.agents[0].timeout_ms == 120 and a.agents[1].timeout_s == 0.02
    b = Arena(_cfg(minPlayers=1, maxPlayers=1), seed=0)
    b.join({"agentType": "http", "name": "h", "url": "http://127.0.0.1:9/d"})
    b.start()
    assert b.agents[0].timeout_ms == 500  # the arena's agentTimeout


def test_action_lists_are_capped_before_validation() -> None:
    acts, errors = validate_actions([{"tool": "broadcast", "text": "x" * 10_000}] * 1000)
    assert len(acts) == MAX_ACTIONS_PER_TURN and len(acts[0]["text"]) == 500
    assert "984 past the first 16" in errors[0]
    calls = [{"function": {"name": "broadcast", "arguments": {"text": "hi"}}}] * 500
    calls.append({"function": {"name": "harvest", "arguments": {"amount": 1}}})
    h, acts, errors = parse_completion({"choices": [{"message": {"tool_calls": calls}}]})
    assert h is None and len(acts) == MAX_ACTIONS_PER_TURN + 1 and "dropped unread" in errors[0]


def test_action_budget_counts_per_player_and_turn() -> None:
    b = ActionBudget()
    got = [b.take("p", "broadcast", 1) for _ in range(MAX_MESSAGES_PER_TURN + 2)]
    assert got[:MAX_MESSAGES_PER_TURN] == [None] * MAX_MESSAGES_PER_TURN and "messages" in got[-1]
    assert b.take("q", "broadcast", 1) is None  # another player has its own budget
    got = [b.take("p", "pledge", 1) for _ in range(MAX_ACTIONS_PER_TURN)]
    assert "tool actions" in got[-1]
    assert b.take("p", "broadcast", 2) is None  # a new turn, a new budget


def test_truncate_error() -> None:
    big = "E" * 8_000_000
    r = AgentResult(0.1, big)
    assert len(r.error) == MAX_ERROR_CHARS and r.error.endswith("[8000000 chars]")
    assert truncate_error(r.error) == r.error and truncate_error(None) is None and truncate_error("ok") == "ok"


def test_clean_stale_tmp(tmp_path) -> None:
    (tmp_path / "a1").mkdir()
    for p in (tmp_path / ".meta.json.x1.tmp", tmp_path / "a1" / ".summary.json.y2.tmp"):
        p.write_text("{")
    atomic_write_json(tmp_path / "a1" / "meta.json", {"ok": 1})
    (tmp_path / "a1" / "notes.tmp").write_text("mine")  # not an atomic-write temp file
    removed = clean_stale_tmp(tmp_path)
    assert sorted(p.name for p in removed) == [".meta.json.x1.tmp", ".summary.json.y2.tmp"]
    assert sorted(p.name for p in (tmp_path / "a1").iterdir()) == ["meta.json", "notes.tmp"]


def test_spammer_is_capped_records_and_messages_bounded(tmp_path) -> None:
    """A scripted player sends 20 broadcasts and an 8 MB error each turn: 8 messages go
    through, the rest is refused; the error is cut to 2 kB on disk; the arena keeps 3 records
    and 3 turns of messages in memory while turns.jsonl keeps everything."""
    cfg = _cfg(minPlayers=2, maxPlayers=2, maxTurns=6)
    (tmp_path / ".meta.json.dead.tmp").write_text("{")  # left by a killed write
    a = Arena(cfg, seed=3, out_dir=tmp_path, keep_records=3, fsync=False)
    turn = {
        "harvest": 0.1,
        "error": "E" * 8_000_000,
        "actions": [{"tool": "broadcast", "text": f"m{i}"} for i in range(20)],
    }
    a.join({"agentType": "scripted", "name": "spam", "script": [turn]})
    a.join({"agentType": "builtin", "name": "b", "strategy": "conservative"})
    summary = a.run()
    assert not (tmp_path / ".meta.json.dead.tmp").exists()
    logged = read_jsonl(tmp_path / "turns.jsonl")
    assert len(logged) == 6 and len(a.records) == 3 and [r["turn"] for r in a.records] == [4, 5, 6]
    for rec in logged:
        oks = [t["result"]["ok"] for t in rec["tools"]]
        # the first MAX_ANSWER_ENTRIES of the 20 are read (as an LLM's), 8 of them go through
        assert oks == [True] * MAX_MESSAGES_PER_TURN + [False] * (MAX_ANSWER_ENTRIES - MAX_MESSAGES_PER_TURN)
        assert "limit" in rec["tools"][-1]["result"]["reason"]
        assert len(rec["messages"]) == MAX_MESSAGES_PER_TURN
        assert len(rec["decisions"][0]["error"]) == MAX_ERROR_CHARS
    assert {m["turn"] for m in a.bus.to_json()["messages"]} <= {4, 5, 6}
    assert summary["messages"] == 6 * MAX_MESSAGES_PER_TURN
    totals = {p["playerId"]: p["totalHarvest"] for p in summary["players"]}
    for name in ("spam", "b"):
        expect = 0.0
        for rec in logged:
            expect += next(d["actual"] for d in rec["decisions"] if d["playerId"] == name) or 0.0
        assert totals[name] == expect
    assert json.loads((tmp_path / "summary.json").read_text())["players"] == summary["players"]
