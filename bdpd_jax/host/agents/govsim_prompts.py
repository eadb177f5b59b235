"""The prompts of a govsim-architecture LLM player (issue 37; docs/semantics/live/agents.md §15).

What is asked follows GovSim's month (``persona_v3/cognition``: act, converse, store,
reflect); every sentence here is this project's own. Each function returns the text of
one user message; the system message is :func:`system_text`.
"""

from __future__ import annotations

from typing import Any

from bdpd_jax.scenarios import GOVSIM_SCENARIOS, GovSimScenario

#: how many memories each decision reads (GovSim: 10 for the harvest and the reflection,
#: 5 per focal point in the conversation)
TOP_K_HARVEST, TOP_K_TALK, TOP_K_REFLECT = 10, 5, 10
MAX_INSIGHTS = 3  # a reflection keeps at most this many lines


def scenario_of(name: str | None) -> GovSimScenario:
    """The wording of GovSim scenario ``name`` (fishery when None); ValueError naming it."""
    key = name or "fishery"
    if key not in GOVSIM_SCENARIOS:
        raise ValueError(f"scenario: unknown GovSim scenario {key!r}; known: {sorted(GOVSIM_SCENARIOS)}")
    return GOVSIM_SCENARIOS[key]


def system_text(name: str, rules: str, persona: str | None) -> str:
    """The fixed system message: who the player is, the rules, its persona's goals."""
    text = f"Your name is {name}. {rules}"
    return f"{text} {persona}" if persona else text


def harvest_prompt(
    sc: GovSimScenario, month: int, pool: Any, memories: str, answer_format: str, universalization: str | None
) -> str:
    """The month's harvest question, after the memories the player recalls."""
    top = f" between 0 and {int(pool)}" if isinstance(pool, (int, float)) else ""
    how = (
        f'Think it through step by step, then end with a line "Answer: N" where N is the number of {sc.unit}s.'
        if answer_format != "tool"
        else "Think it through, then call the `harvest` tool once with the amount."
    )
    extra = f"\n{universalization}" if universalization else ""
    return (
        f"It is month {month}. You are at {sc.place}.\nWhat you remember (month: memory):\n{memories}{extra}\n\n"
        f"How many {sc.unit}s of {sc.resource} do you {sc.act} this month{top}? {how}"
    )


def speak_prompt(
    sc: GovSimScenario, month: int, names: list[str], memories: str, transcript: list[tuple[str, str]], text_mode: bool
) -> str:
    """One turn in the month's meeting: the memories, the conversation so far, how to answer."""
    lines = "\n".join(f"- {who}: {what}" for who, what in transcript) or "- (nobody has spoken)"
    how = (
        'Write only what you say. To choose who answers you, add a line "Next: <name>". If the meeting '
        'has reached its end, make "[END]" your last line.'
        if text_mode
        else "Call `speak` with what you say; `nextSpeaker` is the name of whoever should answer you, and "
        "`endConversation: true` ends the meeting."
    )
    return (
        f"It is the end of month {month}, and the {sc.actor}s ({', '.join(names)}) meet to talk.\n"
        f"What you remember (month: memory):\n{memories}\n\nThe meeting so far:\n{lines}\n\n"
        f"It is your turn to speak. {how}"
    )


def summary_prompt(transcript: list[tuple[str, str]]) -> str:
    """Ask for the meeting in one sentence."""
    lines = "\n".join(f"- {who}: {what}" for who, what in transcript)
    return f"Here is a meeting:\n{lines}\n\nSay in one sentence what was discussed and decided."


def limit_prompt(sc: GovSimScenario, transcript: list[tuple[str, str]]) -> str:
    """Ask whether the meeting fixed a most each may take (GovSim stores it as a memory)."""
    lines = "\n".join(f"- {who}: {what}" for who, what in transcript)
    return (
        f"Here is a meeting:\n{lines}\n\nDid the group agree on the most {sc.unit}s each {sc.actor} may "
        f'{sc.act} per month? End with a line "Answer: N" (the number agreed) or "Answer: none".'
    )


def importance_prompt(name: str, text: str) -> str:
    """Ask how much one memory matters, on GovSim's scale of 1 to 10."""
    return (
        f"On a scale from 1 (of no consequence) to 10 (decisive), how much does this matter to {name}?\n"
        f'Memory: {text}\nEnd with a line "Answer: N".'
    )


def reflect_prompt(name: str, memories: str) -> str:
    """Ask for the month's insights from the memories recalled."""
    return (
        f"{name} reviews the month. What you remember (month: memory):\n{memories}\n\n"
        f"Write up to {MAX_INSIGHTS} lessons you draw from this for the months to come, one per line."
    )


def universalization_text(sc: GovSimScenario, threshold: Any) -> str | None:
    """The month's universalization sentence with that month's threshold (None without one)."""
    return None if threshold is None else sc.universalization_text(int(threshold))


#: observation keys that are not part of a GovSim scenario (the logistic game's wealth and
#: capacity); with every key whose value is null or empty, a GovSim cell never shows them
NOT_IN_GOVSIM: tuple[str, ...] = ("myWealth", "myCapacity", "othersWealth", "pacts")


def _empty(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, dict):
        return all(_empty(x) for x in v.values())
    return isinstance(v, list) and not v


def govsim_observation(sc: GovSimScenario, obs: dict[str, Any]) -> dict[str, Any]:
    """What a minimal LLM player of a GovSim cell is shown: the observation without the keys
    that are not part of the scenario and without null or empty ones, and under
    universalization the month's sentence with that month's threshold."""
    out = {k: v for k, v in obs.items() if k not in NOT_IN_GOVSIM and not _empty(v)}
    uni = universalization_text(sc, obs.get("sustainabilityThreshold"))
    return {**out, "universalization": uni} if uni else out


__all__ = [
    "NOT_IN_GOVSIM",
    "govsim_observation",
    "MAX_INSIGHTS",
    "TOP_K_HARVEST",
    "TOP_K_REFLECT",
    "TOP_K_TALK",
    "harvest_prompt",
    "importance_prompt",
    "limit_prompt",
    "reflect_prompt",
    "scenario_of",
    "speak_prompt",
    "summary_prompt",
    "system_text",
    "universalization_text",
]
