"""Issue 35: ``float()`` of a client's number never raises OverflowError on the live side.

A JSON integer like ``10**400`` (what Python's ``json`` parses a create or join body into, and
what a scripted player's entry may hold) is a number no float can hold: every place that reads
one from a client turns it into the usual refusal (a flagged fallback, a dropped action, a
ValueError naming the field), never an OverflowError that would crash a tick or answer 5xx."""

from __future__ import annotations

import asyncio

import pytest

from bdpd_jax.host.agents.base import valid_harvest
from bdpd_jax.host.agents.http import parse_response
from bdpd_jax.host.agents.scripted import ScriptedAgent
from bdpd_jax.host.agents.tools import validate_action
from bdpd_jax.host.live.messages import round_announcement

HUGE = (10**400, -(10**400), 10**5000)  # the last one's repr is refused by Python itself (> 4300 digits)


@pytest.mark.parametrize("value", HUGE, ids=["e400", "minus-e400", "e5000"])
def test_a_huge_integer_is_a_refusal_not_an_overflow(value: int) -> None:
    assert valid_harvest(value) is None
    with pytest.raises(ValueError, match="value"):
        round_announcement(value)
    with pytest.raises(ValueError, match="value"):
        validate_action({"tool": "announce_intended_harvest", "value": value})
    with pytest.raises(ValueError, match="maxHarvest"):
        validate_action({"tool": "pledge", "maxHarvest": value})
    with pytest.raises(ValueError, match="amount"):
        validate_action({"tool": "harvest", "amount": value})


def test_an_http_answer_of_a_huge_integer_is_a_flagged_fallback() -> None:
    harvest, actions, errors = parse_response({"harvest": 10**5000, "announced": 10**400})
    assert harvest is None and actions == []
    assert "harvest: missing or invalid an integer of" in errors[0] and "announced dropped" in errors[1]


def test_a_scripted_harvest_of_a_huge_integer_is_a_flagged_fallback() -> None:
    agent = ScriptedAgent([{"harvest": 10**400, "actions": [{"tool": "announce_intended_harvest", "value": 10**400}]}])
    r = asyncio.run(agent.decide({}, 10.0))
    assert r.fallback and "harvest: must be a finite number" in (r.error or "") and r.actions == []
