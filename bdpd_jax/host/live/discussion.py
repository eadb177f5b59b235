"""The discussion phase of a live arena (GovSim's moderated conversation; config
``discussion``, :mod:`bdpd_jax.config.discussion`; docs/semantics/live/agents.md §14).

After a harvest that does not end the game, every player sees a report of everyone's catch,
then up to ``rounds`` utterances, each one visible to every player. The speakers are the
players whose agent talks: LLM players (and scripted players, which replay their logged
utterances); built-in, code and HTTP players do not speak. Turn ``t``'s first speaker is
``speakers[(t - 1) % S]``; after an utterance the next speaker is the one the current speaker
named (``nextSpeaker: "named"``) when that is another speaker, else the next in round-robin
order. The transcript is part of turn ``t``'s record (``discussion``: ``report`` and
``utterances``), so it reaches turns.jsonl, the stream, replay and the frames; the players
read it in their next envelope. The harvest numbers never depend on it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bdpd_jax.config.discussion import MAX_DISCUSSION_ROUNDS
from bdpd_jax.host.agents.base import ConversationCut, Utterance
from bdpd_jax.host.player_kinds import player_kind

if TYPE_CHECKING:
    from bdpd_jax.host.live.arena_run import ArenaRun


def speakers(run: ArenaRun) -> list[str]:
    """The players who speak, in player order (a replayed LLM player still speaks)."""
    return [
        name
        for i, name in enumerate(run.players)
        if player_kind(run.agent_kind(i)).speaks and hasattr(run.agents[i], "speak")
    ]


def first_speaker(names: Sequence[str], turn: int) -> str:
    """Who opens turn ``turn``'s discussion: the round-robin rotates by turn."""
    return names[(turn - 1) % len(names)]


def next_speaker(rule: str, names: Sequence[str], current: str, named: str | None) -> tuple[str, bool]:
    """(who speaks after ``current``, whether it is the one ``current`` named): the named
    player when the rule is ``named`` and it is another speaker, else round-robin."""
    if rule == "named" and named is not None and named != current and named in names:
        return named, True
    return names[(names.index(current) + 1) % len(names)], False


def report(run: ArenaRun, line: dict[str, Any]) -> dict[str, Any]:
    """The report that opens the discussion: every player's catch (actual harvest) this turn."""
    return {"turn": line["turn"], "catches": {d["playerId"]: d["actual"] for d in line["decisions"]}}


async def ask(agent: Any, context: dict[str, Any]) -> Utterance:
    """One utterance; an agent that raises says nothing (the error is recorded)."""
    try:
        out = await agent.speak(context)
    except ConversationCut:  # a replayed speaker: the logged conversation ended here
        raise
    except Exception as exc:  # noqa: BLE001 - a broken agent must never stall the turn
        return Utterance(None, None, f"agent: {type(exc).__name__}: {exc}")
    return out if isinstance(out, Utterance) else Utterance(None, None, "agent: speak returned no Utterance")


async def discuss(run: ArenaRun, line: dict[str, Any], *, timed: bool = False) -> None:
    """Run turn ``line["turn"]``'s discussion and add it to the record (``line["discussion"]``);
    nothing when the arena has no discussion. The speakers are asked one at a time, each
    under its own deadline; an error counts in the summary's ``errors``. ``timed`` (on an
    event loop): the whole conversation ends at ``deadlineMs`` or when the owner closes or
    deletes the arena, the utterance in flight dropped (``cut``: host/live/interrupt.py)."""
    cfg = run.config.discussion
    if cfg is None or not cfg.on:
        return
    end = time.monotonic() + cfg.deadline_ms / 1000.0
    cut: str | None = None
    t = line["turn"]
    rep = report(run, line)
    names = speakers(run)
    agents = dict(zip(run.players, run.agents, strict=True))
    rows: list[dict[str, Any]] = []
    current = first_speaker(names, t) if names else ""
    for order in range(1, cfg.rounds + 1 if names else 1):
        try:
            said = ask(agents[current], speak_context(t, current, names, rep, rows, cfg.rounds - order + 1))
            u = await (run.interrupt.within(said, end) if timed else said)
        except ConversationCut as exc:
            cut = exc.reason
            break
        nxt, named = next_speaker(cfg.next_speaker, names, current, u.next_speaker)
        rows.append(
            {
                "turn": t,
                "order": order,
                "speaker": current,
                "text": u.text,
                "nextSpeaker": nxt,
                "named": named,
                "error": u.error,
            }
        )
        if u.error:
            run.count(current, "errors", 1)
        current = nxt
    line["discussion"] = {"report": rep, "utterances": rows, **({"cut": cut} if cut else {})}


def speak_context(
    turn: int, speaker: str, names: list[str], rep: dict[str, Any], rows: list[dict[str, Any]], left: int
) -> dict[str, Any]:
    """What the speaker of one utterance is given: the turn's report, the speakers, what was said
    so far and how many utterances are left (both protocols ask with it)."""
    return {
        "phase": "discussion",
        "turn": turn,
        "playerId": speaker,
        "speakers": names,
        "report": rep,
        "utterances": [{"speaker": r["speaker"], "text": r["text"]} for r in rows],
        "utterancesLeft": left,
    }


def last_discussion(records: Sequence[dict[str, Any]], turn: int) -> dict[str, Any] | None:
    """What a player reads while deciding ``turn``: turn ``turn - 1``'s report and
    utterances (None when that turn had no discussion)."""
    last = records[-1] if records else None
    if last is None or last["turn"] != turn - 1 or "discussion" not in last:
        return None
    d = last["discussion"]
    return {
        "report": d["report"],
        "utterances": [{"speaker": u["speaker"], "text": u["text"]} for u in d["utterances"]],
    }


__all__ = [
    "MAX_DISCUSSION_ROUNDS",
    "discuss",
    "first_speaker",
    "last_discussion",
    "next_speaker",
    "report",
    "speak_context",
    "speakers",
]
