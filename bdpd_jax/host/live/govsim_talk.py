"""The month's end under ``discussion.protocol: "govsim"`` (issue 37 item 2;
docs/semantics/live/agents.md §15): GovSim's meeting, summary and reflection.

Kept apart from :func:`bdpd_jax.host.live.discussion.discuss` (the minimal protocol): it runs after
every month, the last one and a collapse included (GovSim's ``concurrent_env.step`` decides
the end only after the home phase: "we want to see also the discussion in case no fish
remain"); the first speaker in player order opens every month (GovSim's restaurant phase
starts with the first agent); the meeting opens with the report of every request and
catch and has at most ``rounds`` utterances, any speaker may end it (``end``); the opener's
agent then gives the summary and the agreed limit, and every speaker's agent its month end
(memories, reflection). All of it is in turn t's record (``discussion``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from bdpd_jax.host.agents.base import ConversationCut
from bdpd_jax.host.live.discussion import ask, discuss, next_speaker, report, speak_context, speakers
from bdpd_jax.host.live.sync_loop import each

if TYPE_CHECKING:
    from bdpd_jax.host.live.arena_run import ArenaRun

PROTOCOLS: tuple[str, ...] = ("minimal", "govsim")


def is_govsim(run: ArenaRun) -> bool:
    cfg = run.config.discussion
    return cfg is not None and getattr(cfg, "protocol", "minimal") == "govsim"


async def after_harvest(run: ArenaRun, line: dict[str, Any], end: bool, *, timed: bool = False) -> None:
    """What follows turn ``line["turn"]``'s step: the govsim month end in every month, the
    minimal discussion in every month but the last. ``timed`` (on an event loop): both end at
    the discussion's ``deadlineMs`` or when the owner closes or deletes the arena."""
    if is_govsim(run):
        await govsim_discuss(run, line, timed=timed)
    elif not end:
        await discuss(run, line, timed=timed)


def active(run: ArenaRun, names: list[str], turn: int) -> list[str]:
    """The speakers who play by turn ``turn`` (a slot whose ``activeFrom`` is later stays out)."""
    starts = {s.player_id: getattr(s, "active_from", None) for s in run.specs}
    return [n for n in names if not isinstance(start := starts.get(n), int) or start <= turn]


async def govsim_discuss(run: ArenaRun, line: dict[str, Any], *, timed: bool = False) -> None:
    """Turn ``line["turn"]``'s meeting, summary and month ends, into ``line["discussion"]``.
    ``timed``: the whole of it (meeting, summary, month ends) shares the discussion's
    ``deadlineMs`` and stops when the owner interrupts; what was cut is not asked
    (``cut``, as in :func:`~bdpd_jax.host.live.discussion.discuss`)."""
    cfg = run.config.discussion
    if cfg is None:
        return
    deadline = time.monotonic() + cfg.deadline_ms / 1000.0
    cut: str | None = None

    async def bounded(coro: Any) -> Any:
        return await (run.interrupt.within(coro, deadline) if timed else coro)

    t = line["turn"]
    rep = report(run, line)
    rep["requests"] = {d["playerId"]: d["harvest"] for d in line["decisions"] if "harvest" in d}
    names = active(run, speakers(run), t)
    agents = dict(zip(run.players, run.agents, strict=True))
    rows: list[dict[str, Any]] = []
    current = names[0] if names else ""
    for order in range(1, cfg.rounds + 1 if names else 1):
        context = {**speak_context(t, current, names, rep, rows, cfg.rounds - order + 1), "protocol": "govsim"}
        try:
            u = await bounded(ask(agents[current], context))
        except ConversationCut as exc:
            cut = exc.reason
            break
        nxt, named = next_speaker(cfg.next_speaker, names, current, u.next_speaker)
        row = {"turn": t, "order": order, "speaker": current, "text": u.text, "nextSpeaker": nxt, "named": named}
        rows.append({**row, "error": u.error, "end": u.end, **(u.record or {})})
        if u.error:
            run.count(current, "errors", 1)
        if u.end:
            break
        current = nxt
    heard = [{"speaker": r["speaker"], "text": r["text"]} for r in rows]
    summary = None
    if rows and cut is None and hasattr(agents[names[0]], "summarize"):
        try:
            summary = await bounded(agents[names[0]].summarize({"turn": t, "report": rep, "utterances": heard}))
        except ConversationCut as exc:
            cut = exc.reason
    contexts = {
        n: {
            "turn": t,
            "catch": {"request": rep["requests"].get(n), "actual": rep["catches"].get(n)},
            "utterances": heard,
            "summary": (summary or {}).get("text"),
            "agreedLimit": (summary or {}).get("agreedLimit"),
        }
        for n in names
        if cut is None and hasattr(agents[n], "month_end")
    }
    ends: dict[str, dict[str, Any]] = {}
    try:
        ends = await bounded(month_end_all(agents, contexts, any(s.waits for s in run.specs)))
    except ConversationCut as exc:
        cut = exc.reason
    for n, e in ends.items():
        if e.get("error"):
            run.count(n, "errors", 1)
    out: dict[str, Any] = {"report": rep, "utterances": rows}
    if summary:
        out["summary"] = summary
    line["discussion"] = {**out, "monthEnd": ends, **({"cut": cut} if cut else {})}


async def month_end_all(
    agents: dict[str, Any], contexts: dict[str, dict[str, Any]], at_once: bool
) -> dict[str, dict[str, Any]]:
    """Every player's month end (at once when any can wait), keyed in the players' order; an
    agent that raises gets an entry with the error, one that answers None (a replayed player
    that logged none) none."""
    names = list(contexts)
    done = await each([_month_end(agents[n], contexts[n]) for n in names], at_once)
    return {n: r for n, r in zip(names, done, strict=True) if r is not None}


async def _month_end(agent: Any, context: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return await agent.month_end(context)
    except Exception as exc:  # noqa: BLE001 - a broken agent must never stall the turn
        return {"memories": [], "told": [], "error": f"agent: {type(exc).__name__}: {exc}"}


__all__ = ["month_end_all", "PROTOCOLS", "active", "after_harvest", "govsim_discuss", "is_govsim"]
