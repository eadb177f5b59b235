"""MessageBus rules of spec 003: scopes, visibility, one-turn lag, truncation, rounding, ids."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bdpd_jax.host.agents.tools import MAX_MESSAGE_LEN, truncate_text
from bdpd_jax.host.live.messages import MESSAGE_SCOPES, MessageBus, message_id


def _bus() -> MessageBus:
    bus = MessageBus(seed=42, known_players={"alice", "bob", "carol"})
    bus.broadcast("alice", "let's keep it under 2 this turn", 5)
    bus.announce("bob", 1.8, 5)
    bus.send_private("carol", "bob", "between us - i'll take 3", 5)
    return bus


def test_constants() -> None:
    assert MESSAGE_SCOPES == ("broadcast", "private", "announcement")
    assert isinstance(MESSAGE_SCOPES, tuple)
    assert MAX_MESSAGE_LEN == 500


def test_message_shape() -> None:
    bus = MessageBus(seed=1)
    m = bus.broadcast("alice", "hi", 3)
    assert set(m) == {"id", "turn", "fromId", "to", "scope", "text"}
    assert (m["turn"], m["fromId"], m["to"], m["scope"], m["text"]) == (3, "alice", None, "broadcast", "hi")
    p = bus.send_private("alice", "bob", "psst", 3)
    assert (p["to"], p["scope"]) == ("bob", "private")
    a = bus.announce("alice", 2, 3)
    assert set(a) == {"id", "turn", "fromId", "to", "scope", "value"} and a["scope"] == "announcement"


def test_visibility_and_own_messages_excluded() -> None:
    bus = _bus()
    bob = bus.inbox_for("bob", 5)
    assert [(m["fromId"], m["scope"]) for m in bob] == [("alice", "broadcast"), ("carol", "private")]
    alice = bus.inbox_for("alice", 5)
    assert [(m["fromId"], m["scope"]) for m in alice] == [("bob", "announcement")]  # not carol->bob
    carol = bus.inbox_for("carol", 5)
    assert [(m["fromId"], m["scope"]) for m in carol] == [("alice", "broadcast"), ("bob", "announcement")]
    dave = bus.inbox_for("dave", 0)  # any non-sender sees broadcasts and announcements
    assert {m["scope"] for m in dave} == {"broadcast", "announcement"}
    assert all("to" not in m for m in bob + alice + carol)


def test_one_turn_lag() -> None:
    bus = MessageBus(seed=7)
    bus.broadcast("alice", "t3", 3)
    bus.broadcast("alice", "t4", 4)
    assert bus.inbox_at("bob", 4) == bus.inbox_for("bob", 3)[:1]
    assert [m["text"] for m in bus.inbox_at("bob", 4)] == ["t3"]  # sent at 3, read at 4
    assert [m["text"] for m in bus.inbox_at("bob", 5)] == ["t4"]
    assert bus.inbox_at("bob", 3) == [] and bus.inbox_at("bob", 0) == []
    assert [m["text"] for m in bus.inbox_for("bob", 3)] == ["t3", "t4"]  # since_turn is inclusive
    assert [m["text"] for m in bus.messages_for_turn(4)] == ["t4"]


@given(st.text(min_size=0, max_size=1500))
@settings(max_examples=60, deadline=None)
def test_truncation_property(text: str) -> None:
    out = MessageBus(seed=0).broadcast("a", text, 0)["text"]
    assert len(out) <= MAX_MESSAGE_LEN
    if len(text) <= MAX_MESSAGE_LEN:
        assert out == text
    else:
        assert out.endswith("\u2026") and out[:-1] == text[: MAX_MESSAGE_LEN - 1]


def test_truncation_private_never_rejected() -> None:
    m = MessageBus().send_private("a", "b", "x" * 10_000, 1)
    assert len(m["text"]) == MAX_MESSAGE_LEN and m["text"].endswith("\u2026")
    assert truncate_text("y" * 500) == "y" * 500


@pytest.mark.parametrize("value,expected", [(1.23456, 1.235), (2, 2.0), (0, 0.0), (1e-4, 0.0)])
def test_announcement_rounding(value: float, expected: float) -> None:
    assert MessageBus().announce("a", value, 0)["value"] == expected


@pytest.mark.parametrize("value", [-0.1, float("nan"), float("inf"), "1.0", True, None])
def test_announcement_rejects_bad_values(value: object) -> None:
    with pytest.raises(ValueError, match="value"):
        MessageBus().announce("a", value, 0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "call,field",
    [
        (lambda b: b.broadcast("", "x", 0), "fromId"),
        (lambda b: b.broadcast("a", 3, 0), "text"),
        (lambda b: b.broadcast("a", "x", -1), "turn"),
        (lambda b: b.send_private("a", None, "x", 0), "target"),
    ],
)
def test_field_errors(call, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        call(MessageBus())


def test_deterministic_ids_and_replay() -> None:
    a, b = _bus(), _bus()
    assert [m["id"] for m in a.to_json()["messages"]] == [m["id"] for m in b.to_json()["messages"]]
    ids = [m["id"] for m in a.to_json()["messages"]]
    assert len(set(ids)) == 3
    assert ids[0] == message_id(42, 0)
    other = MessageBus(seed=43)
    assert other.broadcast("alice", "x", 5)["id"] != ids[0]


def test_json_roundtrip_continues_sequence() -> None:
    bus = _bus()
    data = json.loads(json.dumps(bus.to_json()))
    clone = MessageBus.from_json(data)
    assert clone.to_json() == bus.to_json()
    assert clone.inbox_for("bob", 5) == bus.inbox_for("bob", 5)
    assert clone.broadcast("bob", "next", 6)["id"] == bus.broadcast("bob", "next", 6)["id"]
    with pytest.raises(ValueError, match="messages"):
        MessageBus.from_json({"messages": "nope"})
    with pytest.raises(ValueError, match="counter"):
        MessageBus.from_json({"messages": data["messages"], "counter": 1})


def test_foreign_target_stored_for_audit_but_unread() -> None:
    bus = MessageBus(seed=1, known_players={"alice", "bob"})
    assert not bus.is_known("zed") and bus.is_known("bob")
    bus.send_private("alice", "zed", "hello?", 2)
    assert len(bus.messages_for_turn(2)) == 1  # logged for audit
    assert bus.inbox_for("bob", 0) == []  # nobody else reads it
    assert MessageBus().is_known("anyone")  # no roster -> caller decides
    bus.add_player("zed")
    assert bus.is_known("zed")
