"""Tool schemas (six talk tools + harvest, --no-talk) and action validation."""

from __future__ import annotations

import json

import pytest

from bdpd_jax.host.agents.tools import TALK_TOOLS, tool_schemas, validate_action, validate_actions


def _names(schemas) -> list[str]:
    return [s["function"]["name"] for s in schemas]


def test_full_surface() -> None:
    assert _names(tool_schemas()) == list(TALK_TOOLS) + ["harvest"]
    assert TALK_TOOLS == (
        "broadcast",
        "send_private",
        "announce_intended_harvest",
        "propose_pact",
        "accept_pact",
        "pledge",
    )
    harvest = tool_schemas()[-1]["function"]["parameters"]
    assert harvest["required"] == ["amount"] and "announced" in harvest["properties"]


def test_no_talk_keeps_only_harvest_without_announced() -> None:
    assert _names(tool_schemas(no_talk=True)) == ["harvest"]
    props = tool_schemas(no_talk=True)[0]["function"]["parameters"]["properties"]
    assert set(props) == {"amount"}


def test_schemas_deterministic_and_copied() -> None:
    a, b = tool_schemas(), tool_schemas()
    assert json.dumps(a) == json.dumps(b)
    a[0]["function"]["name"] = "mutated"
    assert _names(tool_schemas())[0] == "broadcast"


@pytest.mark.parametrize(
    "action,expected",
    [
        ({"tool": "broadcast", "text": "hi", "junk": 1}, {"tool": "broadcast", "text": "hi"}),
        (
            {"tool": "send_private", "target": "bob", "text": "x"},
            {"tool": "send_private", "target": "bob", "text": "x"},
        ),
        ({"tool": "announce_intended_harvest", "value": 2}, {"tool": "announce_intended_harvest", "value": 2.0}),
        (
            {"tool": "propose_pact", "parties": ["a", "b"], "terms": {"type": "no_aggression"}},
            {"tool": "propose_pact", "parties": ["a", "b"], "terms": {"type": "no_aggression"}},
        ),
        (
            {"tool": "propose_pact", "parties": ["a"], "terms": {"type": "no_aggression", "tolerance": 0.1}},
            {"tool": "propose_pact", "parties": ["a"], "terms": {"type": "no_aggression", "tolerance": 0.1}},
        ),
        ({"tool": "accept_pact", "pactId": "p1"}, {"tool": "accept_pact", "pactId": "p1"}),
        ({"tool": "pledge", "maxHarvest": 1.5}, {"tool": "pledge", "maxHarvest": 1.5}),
        ({"tool": "harvest", "amount": 0, "announced": 1}, {"tool": "harvest", "amount": 0.0, "announced": 1.0}),
    ],
)
def test_valid_actions(action: dict, expected: dict) -> None:
    assert validate_action(action) == expected


@pytest.mark.parametrize(
    "action,field",
    [
        ({"tool": 3}, "tool"),
        ({"tool": "fly"}, "tool"),
        ({"tool": "broadcast"}, "text"),
        ({"tool": "send_private", "text": "x"}, "target"),
        ({"tool": "announce_intended_harvest", "value": -1}, "value"),
        ({"tool": "announce_intended_harvest", "value": float("nan")}, "value"),
        ({"tool": "propose_pact", "parties": [], "terms": {"type": "no_aggression"}}, "parties"),
        ({"tool": "propose_pact", "parties": ["a"], "terms": {"type": "tax"}}, "terms.type"),
        ({"tool": "propose_pact", "parties": ["a"], "terms": {"type": "harvest_cap"}}, "terms.maxHarvest"),
        ({"tool": "accept_pact", "pactId": ""}, "pactId"),
        ({"tool": "pledge", "maxHarvest": 0}, "maxHarvest"),
        ({"tool": "harvest", "amount": True}, "amount"),
        ("broadcast", "action"),
    ],
)
def test_invalid_actions_name_the_field(action: object, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        validate_action(action)


def test_no_talk_rejects_talk_and_drops_announced() -> None:
    with pytest.raises(ValueError, match="tool"):
        validate_action({"tool": "broadcast", "text": "x"}, no_talk=True)
    assert validate_action({"tool": "harvest", "amount": 1, "announced": 1}, no_talk=True) == {
        "tool": "harvest",
        "amount": 1.0,
    }


def test_validate_actions_drops_bad_entries() -> None:
    good, errors = validate_actions([{"tool": "broadcast", "text": "a"}, {"tool": "nope"}, 5])
    assert good == [{"tool": "broadcast", "text": "a"}]
    assert len(errors) == 2 and errors[0].startswith("actions[1]")
    assert validate_actions("x")[1] and validate_actions(None) == ([], [])
