"""Issue 35, scripted players: every field a scripted player supplies is bounded like an LLM's
(actions per answer, texts, an error of any shape), so a script cannot flood turns.jsonl or
the tick answer."""

from __future__ import annotations

import copy
import json

from payloads import SEED_LOGISTIC

from bdpd_jax.host.agents.base import MAX_ERROR_CHARS, AgentResult, Utterance, truncate_error
from bdpd_jax.host.agents.tools import MAX_ANSWER_ENTRIES, MAX_MESSAGE_LEN, MAX_UTTERANCE_CHARS
from bdpd_jax.host.live.arena import Arena


def _nested(depth: int) -> list:
    top: list = []
    cur = top
    for _ in range(depth):
        cur.append([])
        cur = cur[0]
    return top


def test_truncate_error_bounds_the_serialized_size_of_any_value() -> None:
    for value in (["E" * 900_000], {"e": "E" * 900_000}, {"a": [{"b": "E" * 10_000}] * 100}, _nested(50_000)):
        got = truncate_error(value)
        assert isinstance(got, str) and len(got) <= MAX_ERROR_CHARS, type(value)
    assert truncate_error({"why": "x"}) == '{"why":"x"}' and truncate_error(None) is None
    assert truncate_error(["E" * 900_000]).endswith("[900004 chars]")  # its JSON text's length
    assert len(AgentResult(0.0, ["E" * 900_000]).error) == MAX_ERROR_CHARS  # type: ignore[arg-type]
    assert len(Utterance(None, None, {"e": "E" * 900_000}).error) == MAX_ERROR_CHARS  # type: ignore[arg-type]


def test_a_hostile_script_grows_turns_jsonl_and_the_tick_answer_by_a_bounded_amount(tmp_path) -> None:
    """The issue's three cases at once, every turn (the last entry repeats): a list error of
    900,000 characters, 15,000 broadcasts of long texts, an utterance whose error is an object."""
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(minPlayers=2, maxPlayers=2, maxTurns=4)  # 3 ticks, each with a discussion
    cfg["players"] = []
    cfg["discussion"] = {"rounds": 1}
    a = Arena(cfg, seed=3, out_dir=tmp_path, fsync=False)
    entry = {
        "harvest": 0.1,
        "error": ["E" * 900_000],
        "actions": [{"tool": "broadcast", "text": "x" * 5000}] * 15_000,
        "utterances": [{"text": "t" * 5000, "error": {"e": ["E" * 900_000]}}],
    }
    a.join({"agentType": "scripted", "name": "spam", "script": [entry]})
    a.join({"agentType": "builtin", "name": "b", "strategy": "conservative"})
    a.start()
    # per turn: each action logged with its refusal and its message, the error, the utterance
    # and its error, plus a turn's fixed part (ample: the old growth was ~2-3 MiB per turn)
    per_action = 2 * MAX_MESSAGE_LEN + 400
    bound = MAX_ANSWER_ENTRIES * per_action + 2 * MAX_ERROR_CHARS + MAX_UTTERANCE_CHARS + 8 * 1024
    sizes = [0]
    for _ in range(3):
        rec = a.tick()
        assert rec is not None
        assert len(json.dumps(rec)) < bound
        sizes.append((tmp_path / "turns.jsonl").stat().st_size)
        assert len(rec["tools"]) == MAX_ANSWER_ENTRIES
        d = next(d for d in rec["decisions"] if d["playerId"] == "spam")
        assert len(d["error"]) == MAX_ERROR_CHARS
        said = [u for u in rec.get("discussion", {}).get("utterances", []) if u["speaker"] == "spam"]
        assert said and all(len(u["error"] or "") <= MAX_ERROR_CHARS for u in said)
    assert all(b - s < bound for s, b in zip(sizes, sizes[1:], strict=False)), sizes


def test_a_scripts_logged_usage_is_read_as_token_counts() -> None:
    """A script's ``usage`` (what replay feeds a logged LLM player's tokens back with) is
    client data: a count that is no integer in range reads as 0, never failing the tick or
    taking tokens off the arena's total."""
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(minPlayers=2, maxPlayers=2, maxTurns=3)
    cfg["players"] = []
    a = Arena(cfg, seed=0)
    usage = {"promptTokens": "x", "completionTokens": -(10**9)}
    a.join({"agentType": "scripted", "name": "s", "script": [{"harvest": 1.0, "usage": usage}]})
    a.join({"agentType": "builtin", "name": "b", "strategy": "conservative"})
    rec = a.tick()
    assert rec is not None and rec["usage"] == {"promptTokens": 0, "completionTokens": 0}
