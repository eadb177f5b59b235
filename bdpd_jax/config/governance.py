"""Governance part of the arena config: per-player scripted ``talk`` and pre-declared ``pacts``.

Players are named by index (0-based int) or by ``name``. Every rejection is a ValueError
naming the field and the value.

``talk`` keys (all optional; the default is a silent player who accepts every proposal):

- ``announce``: ``"none"`` | ``"honest"`` | ``"biased"`` -- announce the intended harvest
  (the request after compliance) each turn; ``"biased"`` announces ``request x (1 - bias)``.
- ``bias``: fraction in [0, 1] under-announced by a biased player (default 0.25).
- ``comply``: clip one's request to the limits of one's active pacts (default False).
- ``pledge``: ``{"turn": t, "maxHarvest": c}`` -- pledge a cap at turn t.
- ``propose``: ``{"turn": t, "parties": [...], "terms": {...}}`` -- propose a pact at turn t.
- ``accept``: ``"always"`` | ``"never"`` | ``"min_cap"`` -- how proposals are answered;
  ``acceptMinCap``: with ``min_cap``, accept a harvest_cap whose maxHarvest >= this (other
  term types are accepted); ``declineRejects``: a declined proposal is rejected (default
  True) or left pending (003_*: 'rejection happens implicitly by not accepting').
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from .base import ConfigModel
from .limits import MAX_TURNS, Id
from .terms import numbers, parse_terms

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False)

PlayerRef = int | Id


class PactTerms(ConfigModel):
    """001_* term schema: ``type`` names a registered term type (kernels/pacts.py); the other
    keys are that type's fields, checked against the registry (bdpd_jax/config/terms.py)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    type: Id

    @model_validator(mode="before")
    @classmethod
    def _schema(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return parse_terms(v, "terms", fill=True)
        return v

    def numbers(self) -> tuple[float, float]:
        """(max_harvest, tolerance): the numbers the kernel's slot stores."""
        return numbers(self.model_dump())


class PledgeScript(ConfigModel):
    model_config = _STRICT
    turn: int = Field(ge=1, le=MAX_TURNS)
    max_harvest: float = Field(gt=0)


class ProposeScript(ConfigModel):
    model_config = _STRICT
    turn: int = Field(ge=1, le=MAX_TURNS)
    parties: list[PlayerRef] = Field(min_length=1)
    terms: PactTerms


class TalkConfig(ConfigModel):
    """One player's scripted cheap talk (see the module docstring for the keys)."""

    model_config = _STRICT
    announce: Literal["none", "honest", "biased"] = "none"
    bias: float = Field(0.25, ge=0, le=1)
    comply: bool = False
    pledge: PledgeScript | None = None
    propose: ProposeScript | None = None
    accept: Literal["always", "never", "min_cap"] = "always"
    accept_min_cap: float = Field(0.0, ge=0)
    decline_rejects: bool = True


class PactConfig(ConfigModel):
    """A pact declared in the config: in the table before turn 1."""

    model_config = _STRICT
    parties: list[PlayerRef] = Field(min_length=1)
    terms: PactTerms
    proposer: PlayerRef | None = None  # default: the first party
    status: Literal["proposed", "active"] = "active"


def player_index(ref: PlayerRef, names: Sequence[str | None], field: str) -> int:
    """Resolve a player reference (index or name); ValueError naming the field."""
    n = len(names)
    if isinstance(ref, bool):
        raise ValueError(f"{field}: a player is an index or a name, got {ref!r}")
    if isinstance(ref, int):
        if not 0 <= ref < n:
            raise ValueError(f"{field}: player index {ref} out of range [0, {n})")
        return ref
    if ref not in names:
        raise ValueError(f"{field}: no player named {ref!r}; names: {[x for x in names if x]}")
    return names.index(ref)


def check_governance(players: list[Any], pacts: list[PactConfig]) -> None:
    """Cross-checks needing the players list: every party reference resolves."""
    names = [p.name for p in players]
    for i, pc in enumerate(pacts):
        for j, r in enumerate(pc.parties):
            player_index(r, names, f"pacts[{i}].parties[{j}]")
        if pc.proposer is not None:
            player_index(pc.proposer, names, f"pacts[{i}].proposer")
    for i, p in enumerate(players):
        t = getattr(p, "talk", None)
        if t is not None and t.propose is not None:
            for j, r in enumerate(t.propose.parties):
                player_index(r, names, f"players[{i}].talk.propose.parties[{j}]")


def needed_slots(config: Any) -> int:
    """Pact slots enough for every pre-declared pact and every scripted pledge/proposal (a
    count over the config: the limit check here and the layer's shapes in prepare/ read it)."""
    n = len(config.pacts)
    for p in config.players or ():
        if p.talk is not None:
            n += (p.talk.pledge is not None) + (p.talk.propose is not None)
    return max(n, 1)


def without_talk(config: Any) -> Any:
    """003_* ``--no-talk`` for a batch run: every player's scripted ``talk`` removed (no
    announcements, pledges, proposals, compliance; proposals are answered by the default
    rule). The config's pre-declared ``pacts`` and sanction specs stay: the flag removes
    signalling, not the registry or observation. Returns a new config (removing talk cannot
    make a valid config invalid)."""
    if config.players is None:
        return config
    players = [p.model_copy(update={"talk": None}) for p in config.players]
    return config.model_copy(update={"players": players})
