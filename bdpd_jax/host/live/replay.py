"""``replay(dir)``: rebuild a live arena from its folder by re-feeding the recorded actions.

``meta.json`` (written at start) gives the config, seed, arena index and players (read
bounded and validated by :func:`read_meta`, below);
``turns.jsonl`` gives, per turn, what every external player submitted (the harvest the kernel
was fed and the tool actions in order). Builtin players are re-run by the kernels (same key,
same counters); external players become :class:`ScriptedAgent` s playing their log. The
same kernels then reach a bit-identical state, the same message and pact ids, and the same
turn records. Owner events between ticks (perturbations fired, tool actions taken for a
player) are lines of their own in ``turns.jsonl``, repeated in order, so closing the
replayed arena gives the folder's summary.json. A process killed mid-run leaves at most a torn last line, which
``read_jsonl`` skips: the replay stops at the last complete turn.
"""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic.alias_generators import to_camel

from bdpd_jax.config.files import Meta, load_meta
from bdpd_jax.config.limits import MAX_NAME_CHARS
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.arena_run import EVENTS_FILE
from bdpd_jax.host.live.persist import read_jsonl
from bdpd_jax.host.live.players import LivePlayerConfig
from bdpd_jax.host.live.records import AGENT_RECORD_KEYS
from bdpd_jax.host.player_kinds import player_kind

# -- meta.json read back ------------------------------------------------------------
# An arena folder's ``meta.json`` read back: bounded and validated by a model, never trusted.
#
# ``meta.json`` is data, not authority (a folder may be damaged, foreign or hand-edited):
# :func:`read_meta` reads it through ``config/files.py`` (at most ``MAX_META_BYTES``), and a
# wrong field is a ValueError naming the file and the field. Its ``config`` is a JSON object,
# never a path: a string there is refused, not opened (the rule of ``config/files.py``: a
# loader never follows a path found inside a file). :class:`FolderMeta` is what listing and
# viewing a folder read; :class:`ArenaMeta` adds what replaying it needs.

#: camelCase keys, as written; keys not declared are kept as they are (a newer writer may add some)
_WIRE = ConfigDict(extra="allow", alias_generator=to_camel, validate_by_name=True, serialize_by_alias=True)


class PlayerMeta(Meta):
    """One player as meta.json lists it (``LivePlayerConfig.public``): its name and kind; the
    rest (strategy, resource, ...) is validated by ``LivePlayerConfig`` when it joins again."""

    model_config = _WIRE
    name: StrictStr = Field(min_length=1, max_length=MAX_NAME_CHARS)
    agent_type: StrictStr = "builtin"


class FolderMeta(Meta):
    """What the server reads of a folder to list and show it: the config as a JSON object (or
    none) and the players as a list of objects."""

    model_config = _WIRE
    config: dict[str, Any] = {}  # a JSON object, never a path to follow
    players: list[PlayerMeta] = []


class ArenaMeta(FolderMeta):
    """What :func:`~bdpd_jax.host.live.replay.replay` rebuilds the arena from (``Arena.meta``)."""

    arena_id: StrictStr = Field(min_length=1)
    seed: StrictInt
    arena_index: StrictInt = Field(ge=0)
    no_talk: StrictBool
    pact_slots: StrictInt = Field(ge=1)
    generator: StrictStr
    turns: StrictInt | None
    config: dict[str, Any]  # required to replay
    players: list[PlayerMeta]


def read_meta(folder: str | Path, model: type[FolderMeta] = ArenaMeta) -> dict[str, Any]:
    """``folder``/meta.json, bounded and validated by ``model``, as the dict it holds (keys as
    written; defaults left out). ValueError naming the file and the field."""
    m = load_meta(Path(folder) / "meta.json", model)
    return m.model_dump(by_alias=True, exclude_unset=True)


# -- the replay ----------------------------------------------------------------------
# decision fields that differ by construction: timings, and the agent kind (scripted in a replay)
VOLATILE = ("elapsedMs", "agentType")


def strip_volatile(record: dict[str, Any]) -> dict[str, Any]:
    """A turn record without timings and agent kinds (what two runs of the same actions share)."""
    out = dict(record)
    out["decisions"] = [{k: v for k, v in d.items() if k not in VOLATILE} for d in record["decisions"]]
    if "governance" in out:  # the attached governance agent's entry
        out["governance"] = {k: v for k, v in out["governance"].items() if k not in VOLATILE}
    return out


def turn_records(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turn records among turns.jsonl's lines (owner event lines left out)."""
    return [r for r in lines if "event" not in r]


def load(dir: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(meta, complete turn records) of an arena folder (owner event lines left out)."""
    meta, lines = load_lines(dir)
    return meta, turn_records(lines)


def load_lines(dir: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(meta, the turn records of turns.jsonl and the owner event lines of events.jsonl
    (``{"event": "ownerPerturbation" | "ownerAction", "turn": the next turn, ...}``), in the
    order they happened: each event before the turn it precedes). Folders from before
    events.jsonl kept their event lines in turns.jsonl, in order; those are read as they are."""
    d = Path(dir)
    if not (d / "meta.json").is_file():
        raise ValueError("dir: no meta.json in the arena's folder")
    meta = read_meta(d)  # bounded and validated; its config is a JSON object, never a path
    lines = read_jsonl(d / "turns.jsonl")
    events = read_jsonl(d / EVENTS_FILE)
    if events:
        merged: list[dict[str, Any]] = []
        queue = deque(events)
        for rec in lines:
            if "event" not in rec:
                while queue and queue[0].get("turn", 0) <= rec.get("turn", 0):
                    merged.append(queue.popleft())
            merged.append(rec)
        lines = merged + list(queue)
    return meta, lines


def _owner_event(arena: Arena, ev: dict[str, Any]) -> None:
    """Repeat one logged owner event on the replayed arena."""
    if ev["event"] == "ownerPerturbation":
        arena.perturb(ev["spec"])
    elif ev["event"] == "ownerAction":
        arena.dispatch(ev["playerId"], ev["action"], ev["atTurn"])
    else:
        raise ValueError(f"turns.jsonl: unknown event {ev['event']!r}")


def replay(
    dir: str | Path,
    *,
    out_dir: str | Path | None = None,
    verify: bool = True,
    turns: int | None = None,
    resume: dict[str, Any] | None = None,
    operator=None,
    governance_agent=None,
) -> Arena:
    """Replay the arena in ``dir``; returns the arena after the last complete recorded turn
    (status ``running``: it may be ticked on with the scripted players, or closed).

    verify: compare every replayed turn record with the logged one (timings aside) and raise
    ValueError naming the first turn that differs. turns: replay only the first ``turns``.
    resume: ``{playerId: spec}`` for EVERY external player: after the replay those players
    are live again (a code agent restarts with empty memory) and the arena appends its next
    turns to ``dir``'s own turns.jsonl (a torn last line is dropped first): a killed run
    goes on where it stopped. governance_agent: with resume, the live governance agent of an
    arena that had one (required then, as a spec is for every external player). operator: the
    credentials and endpoints resumed LLM / HTTP players and governance agents may use
    (:class:`~bdpd_jax.host.live.operator.Operator`; never stored in the folder).
    """
    if resume is not None and out_dir is not None:
        raise ValueError("out_dir: a resumed arena writes to dir itself")
    meta, lines = load_lines(dir)
    records = turn_records(lines)
    for k, rec in enumerate(records):
        if rec.get("turn") != k + 1:
            raise ValueError(f"turns.jsonl: line {k + 1} is turn {rec.get('turn')!r}, expected {k + 1}")
    # older folders have no event lines and list the firings in the next turn record
    legacy = not any("event" in r for r in lines)
    if turns is not None and turns < len(records):  # stop at that turn's record
        lines = lines[: lines.index(records[turns - 1]) + 1] if turns > 0 else []
        records = records[:turns]
    arena = Arena(
        meta["config"],
        seed=meta["seed"],
        arena_index=meta["arenaIndex"],
        no_talk=meta["noTalk"],
        pact_slots=meta["pactSlots"],
        generator=meta["generator"],
        turns=meta["turns"],
        arena_id=meta["arenaId"],
        out_dir=out_dir,
        perturbable=meta.get("perturbable", False),
        operator=operator,
        llm_cache=meta.get("llmCache"),
        token_budget=meta.get("tokenBudget"),
        governance_agent=_governor(meta, records),
        agent_kinds={p["name"]: p["agentType"] for p in meta["players"] if _external(p)},
    )
    for p in meta["players"]:
        if not _external(p):
            arena.join(LivePlayerConfig.model_validate(p))
            continue
        script = [
            {
                "harvest": d["harvest"],
                "actions": d.get("actions", []),
                "error": d.get("error"),
                "fallback": d.get("fallback", False),
                "turn": rec["turn"],
                "utterances": _said(rec, p["name"]),
                "record": {k: d[k] for k in AGENT_RECORD_KEYS if k in d},
                **_after_talk(rec, p["name"]),
                **({"usage": d["usage"]} if "usage" in d else {}),
                "discussionCut": rec.get("discussion", {}).get("cut"),
            }
            for rec in records
            for d in rec["decisions"]
            if d["playerId"] == p["name"] and "harvest" in d
        ]
        arena.join(
            LivePlayerConfig(
                agent_type="scripted",
                name=p["name"],
                private_resource=p["privateResource"],
                active_from=p.get("activeFrom", 1),
                script=script or [{"harvest": 0.0}],
            )
        )
    arena.start()
    for rec in lines:  # in file order: owner events between ticks, then the turn they precede
        if "event" in rec:
            _owner_event(arena, rec)
            continue
        if legacy:
            for fired in rec.get("ownerPerturbations", []):
                arena.perturb(fired["spec"])
        got = arena.tick()
        if verify and (got is None or strip_volatile(got) != strip_volatile(rec)):
            raise ValueError(f"turns.jsonl: replay diverges at turn {rec['turn']}")
    if resume is not None:
        _resume(arena, Path(dir), meta, resume, governance_agent)
    elif governance_agent is not None:
        raise ValueError("governance_agent: only a resumed arena takes a live governance agent")
    return arena


def _said(rec: dict[str, Any], player: str) -> list[dict[str, Any]]:
    """``player``'s utterances in turn ``rec``'s discussion, as its script replays them (a
    next speaker it did not validly name is left out: the round-robin gives it again)."""
    return [
        {
            "text": u["text"],
            "nextSpeaker": u["nextSpeaker"] if u["named"] else None,
            "error": u["error"],
            **{k: u[k] for k in ("end", "told") if k in u},
        }
        for u in rec.get("discussion", {}).get("utterances", [])
        if u["speaker"] == player
    ]


def _after_talk(rec: dict[str, Any], player: str) -> dict[str, Any]:
    """What ``player`` logged after turn ``rec``'s govsim conversation (the summary it was
    asked for, its month-end entry), for its script to give back (live/agents.md §15)."""
    d = rec.get("discussion", {})
    out: dict[str, Any] = {}
    if d.get("summary", {}).get("by") == player:
        out["summary"] = d["summary"]
    if player in d.get("monthEnd", {}):
        out["monthEnd"] = d["monthEnd"][player]
    return out


def _governor(meta: dict[str, Any], records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The attached governance agent replayed from its log: the logged actions and errors."""
    if "governanceAgent" not in meta:
        return None
    return {
        "kind": "scripted",
        "script": [
            {
                "action": r["governance"]["action"],
                "error": r["governance"]["error"],
                "fallback": r["governance"].get("fallback", False),
                **({"usage": r["governance"]["usage"]} if "usage" in r["governance"] else {}),
            }
            for r in records
            if "governance" in r
        ],
    }


def _external(player: dict[str, Any]) -> bool:
    """Whether a logged player (meta.json) was decided outside the kernel (its kind's property)."""
    return player_kind(player.get("agentType", "builtin")).external


def _resume(arena: Arena, dir: Path, meta: dict[str, Any], resume: dict[str, Any], governance_agent=None) -> None:
    external = [p["name"] for p in meta["players"] if _external(p)]
    missing = sorted(set(external) - set(resume))
    extra = sorted(set(resume) - set(external))
    if missing or extra:
        raise ValueError(
            f"resume: give a spec for every external player {external}; missing {missing}, not external {extra}"
        )
    if (governance_agent is None) != (arena.governor is None):
        raise ValueError(
            "governance_agent: give one exactly when the arena had a governance agent "
            f"({'it had' if arena.governor is not None else 'it had none'})"
        )
    specs = {}
    for name, spec in resume.items():
        spec = spec if isinstance(spec, LivePlayerConfig) else LivePlayerConfig.model_validate({**spec, "name": name})
        if not spec.external:
            raise ValueError(f"resume.{name}.agentType: an external player stays external, got 'builtin'")
        specs[name] = spec
    arena.resume(specs, dir, governance_agent)


__all__ = ["replay", "load", "load_lines", "strip_volatile", "ArenaMeta", "FolderMeta", "PlayerMeta", "read_meta"]
