"""The optional discussion phase of a live arena (GovSim's moderated conversation between
harvests): after each harvest a report of everyone's catch, then up to ``rounds`` utterances,
each visible to every player (docs/semantics/live/agents.md §14). Batch runs have no speakers and
ignore it; the live host runs it (bdpd_jax/host/live/discussion.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from .base import ConfigModel

#: utterances after one harvest (each one is a call to a player's endpoint)
MAX_DISCUSSION_ROUNDS: int = 20
#: the whole conversation after one harvest, every utterance included (docs/semantics/live/agents.md
#: §14): its default, and the most an owner may set (the old worst case, 20 rounds of a 30 s
#: agentTimeout, was 10 minutes)
DEFAULT_DISCUSSION_DEADLINE_MS: int = 60_000
MAX_DISCUSSION_DEADLINE_MS: int = 300_000
#: how the next speaker is chosen: named by the current one (round-robin when it names no
#: valid speaker), or round-robin
NEXT_SPEAKER_RULES: tuple[str, ...] = ("named", "round_robin")


class DiscussionConfig(ConfigModel):
    """``discussion: {"rounds": int, "nextSpeaker": "named" | "round_robin", "protocol":
    "minimal" | "govsim", "deadlineMs": int}`` (0 rounds: no utterances; under ``govsim`` the month
    end still runs). ``deadlineMs`` bounds the whole conversation of one turn: when it passes,
    the utterance in flight is dropped and the conversation ends there (the record says so)."""

    model_config = ConfigDict(extra="forbid")
    rounds: int = Field(0, ge=0, le=MAX_DISCUSSION_ROUNDS)
    next_speaker: Literal["named", "round_robin"] = "named"
    #: ``minimal``: a report and exactly ``rounds`` utterances after every month but the last;
    #: ``govsim``: GovSim's month end (host/live/govsim_talk.py; docs/semantics/live/agents.md §15)
    protocol: Literal["minimal", "govsim"] = "minimal"
    deadline_ms: int = Field(DEFAULT_DISCUSSION_DEADLINE_MS, ge=1, le=MAX_DISCUSSION_DEADLINE_MS)

    @property
    def on(self) -> bool:
        return self.rounds > 0


__all__ = [
    "DEFAULT_DISCUSSION_DEADLINE_MS",
    "DiscussionConfig",
    "MAX_DISCUSSION_DEADLINE_MS",
    "MAX_DISCUSSION_ROUNDS",
    "NEXT_SPEAKER_RULES",
]
