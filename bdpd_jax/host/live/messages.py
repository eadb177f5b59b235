"""Cheap-talk MessageBus (spec 003, ``platform/messages.js``).

Three scopes: ``broadcast`` (text, every other player), ``private`` (text, the named recipient
only) and ``announcement`` (numeric value rounded to 3 decimals, every other player). Text over
``MAX_MESSAGE_LEN`` is truncated with an ellipsis, never rejected. Messages of turn t are read at
t+1 (``inbox_at`` applies that lag). Ids are deterministic: a UUID built from
``sha256(seed, counter)``, so a replay with the same seed and the same sequence of calls gives
identical ids. A private message to an unknown/foreign target is stored for audit and read by no
one (standalone quiet-fail); ``is_known`` lets the tool layer report it.
"""

from __future__ import annotations

import copy
import hashlib
import math
import uuid
from collections.abc import Iterable
from typing import Any

from bdpd_jax.config.limits import short_repr, to_float
from bdpd_jax.host.agents.tools import truncate_text
from bdpd_jax.kernels.actions import ANNOUNCE_DECIMALS

MESSAGE_SCOPES: tuple[str, ...] = ("broadcast", "private", "announcement")


def message_id(seed: int | str, counter: int) -> str:
    """Deterministic UUID (version-4 layout) derived from ``(seed, counter)``."""
    digest = hashlib.sha256(f"bdpd-msg:{seed}:{counter}".encode()).digest()
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _check_player(field: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field}: must be a non-empty string, got {value!r}")
    return value


def _check_turn(turn: Any) -> int:
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
        raise ValueError(f"turn: must be an integer >= 0, got {turn!r}")
    return turn


def _check_text(text: Any) -> str:
    if not isinstance(text, str):
        raise ValueError(f"text: must be a string, got {text!r}")
    return truncate_text(text)


def round_announcement(value: Any) -> float:
    """Validate an announced harvest (finite number >= 0) and round it to 3 decimals."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"value: must be a number >= 0, got {short_repr(value)}")
    v = to_float(value, "value")  # a huge int (10**400) is a ValueError, never an OverflowError
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"value: must be a finite number >= 0, got {short_repr(value)}")
    return round(v, ANNOUNCE_DECIMALS)


class MessageBus:
    """Arena-scoped, append-only log of cheap-talk messages with per-player views."""

    def __init__(self, seed: int | str = 0, known_players: Iterable[str] | None = None) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, str)):
            raise ValueError(f"seed: must be an int or str, got {seed!r}")
        self.seed: int | str = seed
        self._counter: int = 0
        self._log: list[dict[str, Any]] = []
        self.known_players: set[str] | None = None if known_players is None else set(known_players)
        self._first_kept = 0  # messages of earlier turns were forgotten (they are in turns.jsonl)

    # -- emitters -------------------------------------------------------------------------
    def _append(self, msg: dict[str, Any]) -> dict[str, Any]:
        msg = {"id": message_id(self.seed, self._counter), **msg}
        self._counter += 1
        self._log.append(msg)
        return dict(msg)

    def broadcast(self, from_id: str, text: str, turn: int) -> dict[str, Any]:
        """Text visible to every other player from ``turn + 1``."""
        turn, from_id = _check_turn(turn), _check_player("fromId", from_id)
        return self.post("broadcast", from_id, turn, payload=_check_text(text))

    def send_private(self, from_id: str, target: str, text: str, turn: int) -> dict[str, Any]:
        """Text visible to ``target`` only; stored (unread) when the target is unknown."""
        to = _check_player("target", target)
        return self.post(
            "private", _check_player("fromId", from_id), _check_turn(turn), to=to, payload=_check_text(text)
        )

    def announce(self, from_id: str, value: float, turn: int) -> dict[str, Any]:
        """Numeric intended harvest (rounded to 3 decimals) visible to every other player."""
        turn, from_id = _check_turn(turn), _check_player("fromId", from_id)
        return self.post("announcement", from_id, turn, payload=round_announcement(value))

    def post(
        self, scope: str, from_id: str, turn: int, *, to: str | None = None, payload: Any = None
    ) -> dict[str, Any]:
        """Append a message whose parts are checked: by the emitters above, or once by
        ``tools.validate_action`` for a tool action (``dispatch_tool``: no second check).
        ``payload`` is the text (broadcast, private) or the announced value (rounded here)."""
        key, value = ("value", round_announcement(payload)) if scope == "announcement" else ("text", payload)
        return self._append({"turn": turn, "fromId": from_id, "to": to, "scope": scope, key: value})

    def is_known(self, player_id: str) -> bool:
        """True when ``player_id`` is a known local player (always True if none were given)."""
        return self.known_players is None or player_id in self.known_players

    def add_player(self, player_id: str) -> None:
        """Register a player joining later (only matters when ``known_players`` is tracked)."""
        _check_player("playerId", player_id)
        if self.known_players is not None:
            self.known_players.add(player_id)

    # -- views ----------------------------------------------------------------------------
    @staticmethod
    def _visible(msg: dict[str, Any], player_id: str) -> bool:
        if msg["fromId"] == player_id:
            return False
        if msg["scope"] == "private":
            return msg["to"] == player_id
        return True

    @staticmethod
    def _recipient_view(msg: dict[str, Any]) -> dict[str, Any]:
        view = {k: v for k, v in msg.items() if k != "to"}
        return view

    def inbox_for(self, player_id: str, since_turn: int) -> list[dict[str, Any]]:
        """Messages with ``turn >= since_turn`` that ``player_id`` may read, oldest first.

        Own messages are excluded; private ones only reach the named recipient. The returned
        dicts are copies without the ``to`` field (as in the spec's recipient-safe view).
        """
        _check_player("playerId", player_id)
        if isinstance(since_turn, bool) or not isinstance(since_turn, int):
            raise ValueError(f"since_turn: must be an integer, got {since_turn!r}")
        return [self._recipient_view(m) for m in self._log if m["turn"] >= since_turn and self._visible(m, player_id)]

    def inbox_at(self, player_id: str, turn: int) -> list[dict[str, Any]]:
        """What ``player_id`` reads while deciding ``turn``: messages sent at ``turn - 1`` only."""
        _check_turn(turn)
        return [m for m in self.inbox_for(player_id, turn - 1) if m["turn"] == turn - 1]

    def messages_for_turn(self, turn: int) -> list[dict[str, Any]]:
        """All messages emitted at ``turn`` (full records, for ``turnRecord.messages``)."""
        _check_turn(turn)
        return [dict(m) for m in self._log if m["turn"] == turn]

    def __len__(self) -> int:
        """Messages ever sent on this bus (forgotten ones included)."""
        return self._counter

    def forget_before(self, turn: int) -> None:
        """Drop the messages of turns before ``turn`` (an arena keeps recent turns in memory;
        its turn records hold them all). Inboxes need the previous turn only."""
        if turn <= self._first_kept:
            return
        k = 0
        while k < len(self._log) and self._log[k]["turn"] < turn:
            k += 1
        del self._log[:k]
        self._first_kept = turn

    # -- persistence ----------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """Cumulative, JSON-ready state: seed, id counter, every message."""
        return {
            "seed": self.seed,
            "counter": self._counter,
            "knownPlayers": None if self.known_players is None else sorted(self.known_players),
            "messages": copy.deepcopy(self._log),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MessageBus:
        """Rebuild a bus from ``to_json`` output; further ids continue the same sequence."""
        if not isinstance(data, dict):
            raise ValueError(f"data: must be a dict, got {type(data).__name__}")
        msgs = data.get("messages")
        if not isinstance(msgs, list):
            raise ValueError(f"messages: must be a list, got {msgs!r}")
        bus = cls(seed=data.get("seed", 0), known_players=data.get("knownPlayers"))
        for i, m in enumerate(msgs):
            if not isinstance(m, dict) or m.get("scope") not in MESSAGE_SCOPES:
                raise ValueError(f"messages[{i}]: invalid message {m!r}")
        counter = data.get("counter", len(msgs))
        if isinstance(counter, bool) or not isinstance(counter, int) or counter < len(msgs):
            raise ValueError(f"counter: must be an integer >= {len(msgs)}, got {counter!r}")
        bus._restore(copy.deepcopy(msgs), counter)
        return bus

    def _restore(self, log: list[dict[str, Any]], counter: int) -> None:
        self._log, self._counter = log, counter
