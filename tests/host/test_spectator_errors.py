"""Issue 35: a spectator (or the public) never reads a private message's text, not even quoted
in a player's error: an LLM's malformed ``send_private`` call is quoted in its decision error,
so those views show each error's category only; the owner (and a spectator of an arena whose
owner chose ``spectatorPrivateText``) reads it whole."""

from __future__ import annotations

import json

from bdpd_jax.host.agents.llm_protocol import parse_completion
from bdpd_jax.host.server import views

SECRET = "meet at noon; plan: defect"


def _error() -> str:
    """The error the LLM protocol itself makes of a send_private call whose JSON is cut."""
    args = json.dumps({"to": "B", "text": SECRET})[:-2]  # malformed: its end is missing
    call = {"id": "c0", "type": "function", "function": {"name": "send_private", "arguments": args}}
    harvest, _, errors = parse_completion({"choices": [{"message": {"tool_calls": [call]}}]})
    assert harvest is None and "noon" in errors[0]  # the raw error quotes the private text
    return "; ".join(errors)


def _record(error: str) -> dict:
    return {
        "turn": 1,
        "stock": 10.0,
        "collapsed": False,
        "messages": [],
        "violations": [],
        "decisions": [{"playerId": "A", "actions": [], "error": error, "fallback": True}],
        "errors": [{"playerId": "A", "error": error}],
        "discussion": {"report": "r", "utterances": [{"speaker": "A", "text": None, "error": error}]},
    }


def test_spectators_and_the_public_read_an_errors_category_not_its_text() -> None:
    rec = _record(_error())
    seen = {
        "spectator tick": views.event_for("spectator", "tick", rec),
        "public tick": views.event_for("public", "tick", rec),
        "spectator init": views.compact_tick(rec, "spectator"),
    }
    for where, data in seen.items():
        text = json.dumps(data)
        assert "noon" not in text and "defect" not in text, where
        assert f"tool_calls[0] dropped: {views.HIDDEN_DETAILS}" in text, where
    assert views.event_for("owner", "tick", rec) is rec and "noon" in json.dumps(views.compact_tick(rec))
    assert views.view_of("spectator", private_text=True) == "owner"  # the owner's choice at create


def test_an_error_with_no_short_label_is_just_error() -> None:
    assert views.error_category(f"{SECRET!r} was refused") == f"error: {views.HIDDEN_DETAILS}"
    assert views.error_category("timeout: no answer within 500 ms") == f"timeout: {views.HIDDEN_DETAILS}"
    assert views.error_category(None) is None
