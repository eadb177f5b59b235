"""Views by role (issue 14, issue 35): what each key may see of an arena.

* **owner**: everything -- the true state of every tick (stock, every player's request,
  harvest and wealth, engine variables), pacts, every message with its text.
* **spectator** (the read-only token the owner shares): the owner's view, except that a
  private message shows who sent it to whom and when, not its text (003_*: a private message
  is visible "only to the named recipient"), unless the owner chose at create to show private
  text to spectators (``spectatorPrivateText``).
* **player** (the arena key, shared by every player) and **public** (no key): the game's
  frame only -- status, turn, players' names and kinds, and per tick the turn number, the
  messages addressed to everyone (broadcasts, announcements) and the discussion (the report
  of every catch and the utterances, which every player reads). No state value: observations
  differ per player (visibility, noise, resolution) and may be flipped mid-game, so no value
  is what *every* player knows. A player learns the state only through its own observation.
  The post-game report (summary.json) is public once the arena is closed (the seed serves
  ``/history/:id/summary`` without a key).

Spectators and the public read a player's error as its category only (:func:`error_category`):
an LLM's or HTTP player's error may quote part of a malformed tool call, a ``send_private``'s
text among them.

A role is read through :func:`view_of`: ``"owner"`` (all), ``"spectator"`` (private text
hidden) or ``"public"``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.player_kinds import shown_kind
from bdpd_jax.kernels.engines import ENGINES

#: message scopes every player receives
PUBLIC_SCOPES = ("broadcast", "announcement")
#: the ``tick`` fields the dashboard charts (owner / spectator)
COMPACT_DECISION = ("playerId", "requested", "actual", "wealth", "announced", "sanction", "fallback", "error")


#: an error's leading label (``timeout``, ``tool_calls[0] dropped``, ``harvest``): what it names
_LABEL = re.compile(r"[A-Za-z_][\w\[\]. -]{0,47}")
#: what stands for an error's details in the spectator and public views
HIDDEN_DETAILS = "details hidden from spectators"


def error_category(error: Any) -> Any:
    """An error as a spectator or the public reads it: its first label (the text before the
    first ``:``, when that is a short name) and :data:`HIDDEN_DETAILS`, else ``error``. Only
    the first label: what follows it may quote a private message, separators included."""
    if not isinstance(error, str) or not error:
        return error
    head = error.split(":", 1)[0].strip() if ":" in error else ""
    return f"{head if _LABEL.fullmatch(head) else 'error'}: {HIDDEN_DETAILS}"


def _hide_errors(rows: Any) -> Any:
    """``rows`` (dicts with an ``error``) with each error as its category."""
    if not isinstance(rows, list):
        return rows
    return [{**r, "error": error_category(r.get("error"))} if isinstance(r, dict) and "error" in r else r for r in rows]


def view_of(role: str, private_text: bool) -> str:
    """The view a role gets: ``owner``, ``spectator`` (private message text hidden) or
    ``public``; a spectator of an arena whose owner chose ``private_text`` sees the owner's."""
    if role == "owner" or (role == "spectator" and private_text):
        return "owner"
    return "spectator" if role == "spectator" else "public"


def hide_private(msg: dict[str, Any]) -> dict[str, Any]:
    """A message as a spectator sees it: a private one keeps its sender, recipient, turn and
    id, and says its text is hidden (``textHidden``); any other is as sent."""
    if msg.get("scope") != "private":
        return msg
    return {**{k: v for k, v in msg.items() if k != "text"}, "textHidden": True}


def _hide_action(act: Any) -> Any:
    """A tool action as a spectator sees it: a ``send_private`` without its text."""
    if not isinstance(act, dict) or act.get("tool") != "send_private":
        return act
    return {**{k: v for k, v in act.items() if k != "text"}, "textHidden": True}


def spectator_tick(rec: dict[str, Any]) -> dict[str, Any]:
    """A turn record as a spectator sees it: private texts left out of its messages and of
    the ``send_private`` actions that carry them too (each decision's ``actions``, the tool log),
    and the players' errors (decisions, ``errors``, the discussion's utterances) as their
    categories (:func:`error_category`)."""
    out = {**rec, "messages": [hide_private(m) for m in rec.get("messages", [])]}
    if "tools" in rec:
        out["tools"] = [{**t, "action": _hide_action(t.get("action"))} for t in rec["tools"]]
    if "decisions" in rec:
        out["decisions"] = _hide_errors(
            [
                {**d, "actions": [_hide_action(a) for a in d["actions"]]} if isinstance(d.get("actions"), list) else d
                for d in rec["decisions"]
            ]
        )
    if "errors" in rec:
        out["errors"] = _hide_errors(rec["errors"])
    if isinstance(rec.get("discussion"), dict):
        out["discussion"] = {**rec["discussion"], "utterances": _hide_errors(rec["discussion"].get("utterances"))}
    return out


def engine_labels(engine_mode: str) -> dict[str, Any]:
    """How the dashboard names the engine's stock and a null share, as the engine declares them
    (the page never branches on engine names); defaults for an engine no longer registered."""
    eng = ENGINES.get(engine_mode)
    return {
        "stockLabel": eng.stock_label if eng is not None else "stock",
        "noShareNote": eng.no_share_note if eng is not None else None,
    }


def public_view(a: Arena) -> dict[str, Any]:
    """``GET /api/arenas/:id`` without a key."""
    return {
        "arenaId": a.arena_id,
        "name": a.config.model.name,
        "engineMode": a.config.model.engine_mode,
        **engine_labels(a.config.model.engine_mode),
        "status": a.status,
        "turn": a.turn,
        "maxTurns": int(a.max_turns or a.turns or a.config.model.max_turns),
        "players": [{"playerId": s.name, "agentType": s.agent_type, "kindLabel": s.player_kind.label} for s in a.specs],
    }


def owner_view(a: Arena) -> dict[str, Any]:
    """``GET /api/arenas/:id/owner``: the true state, pacts and every message."""
    last = a.records[-1] if a.records else None
    out = {
        **public_view(a),
        "stock": last["stock"] if last else None,
        "collapsed": last["collapsed"] if last else False,
        "meta": a.meta(),
        "lastTick": last,
    }
    if a.status != "waiting":
        out["pacts"] = a.registry.compact() if a.registry is not None else []
        out["messages"] = a.bus.to_json()["messages"]
    return out


def compact_tick(rec: dict[str, Any], view: str = "owner") -> dict[str, Any]:
    """A tick as the dashboard keeps it (``init`` history of owner / spectator streams); in
    any ``view`` but the owner's, the players' errors are their categories."""
    decisions = [{k: d.get(k) for k in COMPACT_DECISION} for d in rec["decisions"]]
    return {
        "turn": rec["turn"],
        "stock": rec["stock"],
        "collapsed": rec["collapsed"],
        "engine": rec.get("engine", {}),
        "metrics": rec.get("metrics", {}),
        "decisions": decisions if view == "owner" else _hide_errors(decisions),
        "violations": len(rec["violations"]),
        "messages": len(rec["messages"]),
        **({"discussion": len(rec["discussion"]["utterances"])} if "discussion" in rec else {}),
        **({"governance": rec["governance"]} if "governance" in rec else {}),
    }


def public_tick(rec: dict[str, Any]) -> dict[str, Any]:
    """A tick as a player or the public sees it: the turn, the messages to everyone and the
    discussion (its report and utterances are read by every player)."""
    out = {"turn": rec["turn"], "messages": [m for m in rec["messages"] if m.get("scope") in PUBLIC_SCOPES]}
    if "discussion" in rec:
        out["discussion"] = heard(rec["discussion"])
    return out


def heard(d: dict[str, Any]) -> dict[str, Any]:
    """What every player heard of a discussion: the report, the utterances and a govsim
    meeting's summary, without what each model was told or its month end (private), each
    utterance's error as its category (:func:`error_category`)."""
    out: dict[str, Any] = {"report": d["report"], "utterances": _hide_errors([_said(u) for u in d["utterances"]])}
    if "summary" in d:
        out["summary"] = {k: d["summary"].get(k) for k in ("by", "text", "agreedLimit")}
    return out


def _said(u: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in u.items() if k != "told"}


def event_for(view: str, event: str, data: dict[str, Any]) -> dict[str, Any]:
    """An SSE event's payload in ``view`` (:func:`view_of`)."""
    if view == "owner":
        return data
    if view == "spectator":
        return spectator_tick(data) if event == "tick" else data
    return public_event(event, data)


def public_event(event: str, data: dict[str, Any]) -> dict[str, Any]:
    """An SSE event's payload for the player / public role."""
    if event == "tick":
        return public_tick(data)
    if event in ("arena_started", "player_joined"):
        return {
            k: data[k]
            for k in ("arenaId", "status", "turn", "maxTurns", "players", "playerId", "agentType", "name", "engineMode")
            if k in data
        }
    if event == "error":
        return {"detail": "auto ticks stopped"}  # the cause is the owner's to read
    if event == "perturbation":
        return {"turn": data.get("turn")}  # that the owner acted; not what it did to the state
    return data  # arena_closed: the post-game report, public once closed; dropped


def public_meta_view(meta: dict[str, Any], status: str, turn: int | None = None) -> dict[str, Any]:
    """The public view of an arena known only from its folder (closed or interrupted).
    ``turn``: the turns played as its records say (meta.json's ``turnsPlayed`` is written at
    close only, so an interrupted arena's meta says 0 there)."""
    model = meta.get("config", {}).get("model", {})
    return {
        "arenaId": meta["arenaId"],
        "name": model.get("name", ""),
        "engineMode": model.get("engineMode", ""),
        **engine_labels(model.get("engineMode", "")),
        "status": status,
        "turn": int(turn if turn is not None else meta.get("turnsPlayed") or 0),
        "maxTurns": int(meta.get("maxTurns") or meta.get("turns") or model.get("maxTurns") or 0),
        "players": [
            {"playerId": p.get("name"), "agentType": kind, "kindLabel": shown_kind(kind)[0]}
            for p in meta.get("players", [])
            for kind in [p.get("agentType", "builtin")]
        ],
    }


def perturbation_log(recs: list[dict[str, Any]], pending: Iterable[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """Every firing of ``recs`` by turn: triggered ones (``owner: False``) and the owner's;
    ``pending``: owner firings made after the last record (listed in the next one)."""
    log = [{"turn": r["turn"], **p, "owner": False} for r in recs for p in r["perturbations"]]
    log += [{**p, "owner": True} for r in recs for p in r.get("ownerPerturbations", [])]
    log += [{**p, "owner": True} for p in pending]
    return sorted(log, key=lambda e: e["turn"])


__all__ = [
    "view_of",
    "hide_private",
    "error_category",
    "HIDDEN_DETAILS",
    "spectator_tick",
    "event_for",
    "public_view",
    "owner_view",
    "compact_tick",
    "public_tick",
    "public_event",
    "public_meta_view",
    "perturbation_log",
]
