"""The scripted agent: plays a fixed list of recorded turns (replay, tests, fixed policies).

The player kind ``scripted`` (bdpd_jax/host/player_kinds.py) builds one from a join's ``script``.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from bdpd_jax.config.limits import short_repr
from bdpd_jax.host.agents.base import (
    CUT_REASONS,
    AgentResult,
    ConversationCut,
    Utterance,
    check_wealth,
    fallback_harvest,
    valid_harvest,
)
from bdpd_jax.host.agents.tools import first_entries, validate_action, validate_speak


class ScriptedAgent:
    """Plays a fixed list of turns ``{"harvest": h, "actions": [...]}`` (replay, tests).

    ``harvest`` None (or missing) gives the fallback harvest, as a failed call would. Anyone
    may join one, so every field is bounded as an LLM's answer is: actions past
    ``MAX_ANSWER_ENTRIES`` are dropped unread, texts are cut by the tools' validation and an
    ``error`` of any shape is recorded as bounded text (``truncate_error``).
    """

    def __init__(self, script: list[dict], *, no_talk: bool = False) -> None:
        if not script:
            raise ValueError("script: must be a non-empty list of turns")
        self.script = list(script)
        self.no_talk = no_talk
        self.calls = 0
        self.seen: deque[dict[str, Any]] = deque(maxlen=100)  # the last envelopes received (tests, audit)
        self._spoken: dict[Any, int] = {}  # turn -> utterances given in it, less one
        self._usage: dict[str, int] | None = None  # the logged tokens of the last turn decided

    async def decide(self, obs: dict[str, Any], wealth: float, inbox: Any = None) -> AgentResult:
        w = check_wealth(wealth)
        t0 = time.perf_counter()
        entry = self.script[min(self.calls, len(self.script) - 1)]
        self.seen.append(obs)
        self.calls += 1
        self._usage = entry.get("usage") if isinstance(entry.get("usage"), dict) else None
        acts, errors = [], []
        raw = entry.get("actions") or []
        if not isinstance(raw, list):
            errors.append(f"actions: must be a list, got {type(raw).__name__}")
            raw = []
        for i, a in enumerate(first_entries(raw, "actions", errors)):  # as many as an LLM's answer
            try:
                acts.append(validate_action(a, no_talk=self.no_talk))
            except ValueError as exc:
                errors.append(f"actions[{i}] dropped: {exc}")
        h = entry.get("harvest")
        err = entry["error"] if "error" in entry else ("; ".join(errors) or None)  # replay keeps the logged error
        if h is not None and valid_harvest(h) is None:
            errors.append(f"harvest: must be a finite number >= 0, got {short_repr(h)}")
            err, h = "; ".join(errors), None
        if h is None:
            return AgentResult(
                fallback_harvest(w),
                entry.get("error") or err or "scripted: no harvest",
                acts,
                (time.perf_counter() - t0) * 1000,
                True,
                record=entry.get("record") or None,
            )
        # a harvest given (or logged) is what the kernel is fed, in stock units: never rescaled
        return AgentResult(
            float(h),
            err,
            acts,
            (time.perf_counter() - t0) * 1000,
            bool(entry.get("fallback", False)),
            stock_units=True,
            record=entry.get("record") or None,
        )

    def take_usage(self) -> dict[str, int] | None:
        """The tokens logged with the turn last decided (a replayed LLM player's ``usage``), once."""
        out, self._usage = self._usage, None
        return out

    async def speak(self, context: dict[str, Any]) -> Utterance:
        """The next of this turn's ``utterances`` (``[{"text", "nextSpeaker", "error"}]``) from
        the script entry of ``context["turn"]`` (an entry with that ``turn``, else the entry of
        the last decision): what replay feeds a logged LLM player's discussion back with. Past
        its last utterance of a turn whose logged conversation was cut (``discussionCut``), the
        conversation ends there as it did (:class:`ConversationCut`)."""
        t = context.get("turn")
        entry = self._entry(t)
        if entry is None:
            entry = self.script[min(max(self.calls - 1, 0), len(self.script) - 1)]
        k = self._spoken[t] = self._spoken.get(t, -1) + 1
        utterances = entry.get("utterances")
        utterances = utterances if isinstance(utterances, list) else []
        if k >= len(utterances):
            if entry.get("discussionCut") in CUT_REASONS:  # the logged conversation ended here
                raise ConversationCut(entry["discussionCut"])
            return Utterance(None, None, "scripted: no utterance")
        u = utterances[k] if isinstance(utterances[k], dict) else {}
        told = {"told": u["told"]} if "told" in u else None  # a govsim meeting's exchange, as logged
        try:
            text, nxt = validate_speak({"text": u.get("text"), "nextSpeaker": u.get("nextSpeaker")})
        except ValueError as exc:
            return Utterance(None, None, u.get("error") or f"scripted: {exc}", bool(u.get("end", False)), told)
        return Utterance(text, nxt, u.get("error"), bool(u.get("end", False)), told)

    def _entry(self, turn: Any) -> dict[str, Any] | None:
        """The script entry logged for ``turn`` (None: none has that ``turn``)."""
        return next((e for e in self.script if e.get("turn") == turn), None)

    def _logged(self, turn: Any, key: str) -> Any:
        entry = self._entry(turn)
        return None if entry is None else entry.get(key)

    async def summarize(self, context: dict[str, Any]) -> dict[str, Any] | None:
        """The logged summary of ``context["turn"]``'s govsim meeting (replay; live/agents.md §15)."""
        return self._logged(context.get("turn"), "summary")

    async def month_end(self, context: dict[str, Any]) -> dict[str, Any] | None:
        """The logged month end of ``context["turn"]`` (replay; live/agents.md §15); None: none logged."""
        return self._logged(context.get("turn"), "monthEnd")


__all__ = ["ScriptedAgent"]
