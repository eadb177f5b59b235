"""A live governance agent (issue 17): an HTTP or LLM regulator the arena's owner attaches at
create, playing the role of the built-in ``governance_agent`` plugin through the same action
set (:class:`bdpd_jax.kernels.governance_agent.GovAction`: ``cap``, ``ladder_scale``, ``regen``).

Attaching one (``Arena(governance_agent=...)``, ``POST /api/arenas`` ``governanceAgent``) adds
an ``external`` ``governance_agent`` plugin to the arena's config (or drives the one the config
already has). Before every turn t the host sends the agent its observation (:func:`observation`:
the outcome of turn t - 1 as the built-in plugin sees it, and the agent's own previous actions),
validates the answer (:func:`parse_answer`), and writes it with the kernel's ``set_pending``
before the turn's decide phase; the kernel applies it at the start of turn t, before the players
observe, exactly where the built-in rule's action (decided at the end of turn t - 1) applies.
A timeout, an error or a bad field gives no action for that field (or for all), with the error
in the turn record's ``governance`` entry, which replay feeds back (a ``scripted`` governor:
host/governor_kinds.py).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from typing import Any, Literal, cast

import jax
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from bdpd_jax.config.base import ConfigModel
from bdpd_jax.config.game import ArenaConfig
from bdpd_jax.config.limits import MAX_TURNS, QUANTITY_BOUNDS, check_magnitudes, short_repr, to_float
from bdpd_jax.host.agents.base import MAX_ERROR_CHARS, join_errors, truncate_error
from bdpd_jax.host.agents.governors import LIFT, MAX_GOV_RESPONSE_BYTES
from bdpd_jax.host.agents.transport import ClientSlot, TransportError
from bdpd_jax.host.governor_kinds import GovernorContext, governor_kind
from bdpd_jax.host.live.arena_llm import ArenaLLM
from bdpd_jax.host.live.interrupt import INTERRUPTED, Interrupt
from bdpd_jax.host.live.operator import Operator, redact_url
from bdpd_jax.host.live.players import (
    MAX_MODEL_CHARS,
    MAX_NAME_CHARS,
    MAX_PROMPT_CHARS,
    MAX_TEMPERATURE,
    MAX_URL_CHARS,
    player_timeout_ms,
)
from bdpd_jax.host.live.registry import num
from bdpd_jax.host.live.sync_loop import Offload, each, inline
from bdpd_jax.host.player_kinds import PlayerKind
from bdpd_jax.kernels.governance_agent import GovAction, set_pending, valid
from bdpd_jax.kernels.plugins import NAME

PLUGIN_TYPE = "governance_agent"
PLUGIN_ID = "governance-agent"  # the id of the plugin an attached agent adds to the config
FIELDS: tuple[str, ...] = ("cap", "ladder_scale", "regen")  # GovAction's fields, its JSON names
MAX_GOV_HISTORY: int = 16  # the agent's own previous turns shown in its observation


class GovernorSpec(ConfigModel):
    """The owner's governance agent: ``{"kind": "http", "url", "timeoutMs"?}``, ``{"kind":
    "llm", "model", "credential" | "baseUrl", "systemPrompt"?, "temperature"?, "timeoutMs"?}``
    (credentials and endpoints are the operator's, as for LLM players) or ``{"kind":
    "scripted", "script": [answer by turn, ...]}`` (replay, tests, fixed policies): a registered
    kind (bdpd_jax/host/governor_kinds.py)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    kind: str = Field(max_length=MAX_NAME_CHARS)
    url: str | None = Field(None, max_length=MAX_URL_CHARS)
    timeout_ms: float | None = Field(None, gt=0)  # only shorter than the arena's agentTimeout
    model: str | None = Field(None, max_length=MAX_MODEL_CHARS)
    credential: str | None = Field(None, min_length=1, max_length=MAX_NAME_CHARS)
    base_url: str | None = Field(None, max_length=MAX_URL_CHARS)
    system_prompt: str | None = Field(None, max_length=MAX_PROMPT_CHARS)
    temperature: float | None = Field(None, ge=0, le=MAX_TEMPERATURE)  # an LLM player's range
    # scripted: [{"action": {...}, "error"?: str}, ...] or bare answers {...}, by turn from 1
    script: list[dict] | None = Field(None, max_length=MAX_TURNS)

    @model_validator(mode="after")
    def _fields_of_kind(self) -> GovernorSpec:
        # a registered kind (ValueError naming kind and the known ones), then the fields it needs
        governor_kind(self.kind).check(self)
        return self

    @property
    def player_kind(self) -> PlayerKind:
        """The player kind of the same name: its operator checks and time cap apply alike."""
        return governor_kind(self.kind).player_kind

    def public(self) -> dict[str, Any]:
        """meta.json's form: URLs redacted, no script (replay takes the actions from the log)."""
        d = self.model_dump(mode="json", exclude_none=True, exclude={"script"})
        for k in ("url", "baseUrl"):
            if k in d:
                d[k] = redact_url(d[k])
        return d


class GovAnswer(BaseModel):
    """One answer, in GovAction's vocabulary; a field left out or null is no action.
    ``cap``: maxHarvest of a harvest_cap pact binding every player (or ``"lift"``);
    ``ladder_scale``: the factor on every sanction amount (absolute); ``regen``: a regen_set
    mandate. Strict: no strings for numbers, no NaN or infinities."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)
    cap: float | Literal["lift"] | None = None
    ladder_scale: float | None = None
    regen: float | None = None


def parse_answer(body: Any, dtype: Any = np.float32) -> tuple[dict[str, Any], list[str]]:
    """``(action, errors)``: the valid fields of an answer (JSON form, only those given), each
    checked on its own (a bad field is dropped and named, the others stand): type
    (:class:`GovAnswer`), magnitude (``limits.check_magnitudes``) and the kernel's own rule
    (``kernels.governance_agent.valid``: cap within harvest_cap's bound, scale and regen >= 0)."""
    if not isinstance(body, dict):
        return {}, [f"response: expected a JSON object, got {type(body).__name__}"]
    errors: list[str] = []
    body = dict(body)
    for _ in range(len(body) + 1):  # drop what pydantic refuses, field by field
        try:
            given = GovAnswer.model_validate(body).model_dump(exclude_none=True)
            break
        except ValidationError as exc:
            for e in exc.errors():
                key = e["loc"][0] if e["loc"] else None
                if key in body:
                    errors.append(f"{key} dropped: {e['msg']} (got {e.get('input')!r:.80})")
                    body.pop(key)
    else:  # pragma: no cover - each pass removes a key
        given = {}
    out: dict[str, Any] = {}
    for k in FIELDS:
        if k not in given:
            continue
        v = given[k]
        try:
            if v != LIFT:
                x = to_float(v, k)  # a huge int (10**400): a ValueError, never an OverflowError
                check_magnitudes(x, k)
                if abs(x) > QUANTITY_BOUNDS[k]:
                    bound = QUANTITY_BOUNDS[k]
                    raise ValueError(f"{k}: {short_repr(v)} is over its bound {bound:g} (kernels/bounds.py)")
        except ValueError as exc:
            errors.append(f"{k} dropped: {exc}")
            continue
        out[k] = v
    if out:
        kept = valid(to_action(out, dtype))
        for k in list(out):
            if math.isnan(float(getattr(kept, k))):
                errors.append(
                    f"{k} dropped: {out.pop(k)!r} cannot apply (cap must be within harvest_cap's "
                    "bound, ladder_scale and regen >= 0)"
                )
    return out, errors


def to_action(action: dict[str, Any], dtype: Any = np.float32):
    """A JSON-form action as the kernel's GovAction (NaN = not taken; ``"lift"`` = +inf)."""

    def f(k: str) -> np.ndarray:
        v = action.get(k)
        return np.asarray(np.nan if v is None else (np.inf if v == LIFT else float(v)), dtype)

    return GovAction(*(cast(jax.Array, f(k)) for k in FIELDS))  # numpy leaves, as in the params


def from_action(values) -> dict[str, Any]:
    """A GovAction's numbers as JSON (NaN -> null, cap +inf -> ``"lift"``; float32 as its
    shortest round-trip decimal, ``registry.num``)."""
    out = {}
    for k, v in zip(FIELDS, values, strict=True):
        x = float(np.asarray(v))
        out[k] = None if math.isnan(x) else (LIFT if math.isinf(x) else num(v))
    return out


class GovDecision:
    """One turn's answer: the valid ``action`` (JSON form), the ``error`` (bad fields, timeout,
    ...), whether no answer came at all (``fallback``: no action) and the time it took."""

    def __init__(self, action: dict[str, Any], error: str | None, fallback: bool, elapsed_ms: float = 0.0) -> None:
        self.action, self.error, self.fallback, self.elapsed_ms = action, truncate_error(error), fallback, elapsed_ms


# -- the arena's side ---------------------------------------------------------------------------
def last_turn(rec: dict[str, Any]) -> dict[str, Any]:
    """Turn t - 1 as the built-in regulator sees it (kernels.plugins.PluginView), from its
    record: stock, regeneration, the five metrics, every player's harvest, announcement,
    wealth and sanction, the violations and sanctions, the active pacts. Not the engine's
    hidden variables (the hidden reserve), not the messages."""
    return {
        "turn": rec["turn"],
        "stock": rec["stock"],
        "regen": rec["regen"],
        "collapsed": rec["collapsed"],
        "metrics": rec["metrics"],
        "players": [
            {k: d[k] for k in ("playerId", "actual", "announced", "wealth", "sanction")} for d in rec["decisions"]
        ],
        "violations": [{k: v[k] for k in ("partyId", "pactId", "termType")} for v in rec["violations"]],
        "sanctions": [{k: s[k] for k in ("playerId", "specId", "amount", "paidBy", "cost")} for s in rec["sanctions"]],
        "pacts": [p for p in rec["pacts"] if p["status"] == "active"],
    }


def observation(run, gov: Governor, turn: int, in_force: dict[str, Any]) -> dict[str, Any]:
    """What the agent decides turn ``turn``'s action on (``run``: the arena's
    :class:`~bdpd_jax.host.live.arena_run.ArenaRun`): the last turn (null before turn 1), what its
    actions put in force (``inForce``: cap, ladder_scale, regen; null = none) and its own last
    ``MAX_GOV_HISTORY`` turns (action, applied, error)."""
    last = run.records[-1] if run.records and run.records[-1]["turn"] == turn - 1 else None
    return {
        "turn": turn,
        "arenaId": run.arena_id,
        "players": run.players,
        "maxTurns": run.max_turns,
        "last": None if last is None else last_turn(last),
        "inForce": in_force,
        "history": list(gov.history),
    }


async def govern(state, runs: list, offload: Offload = inline) -> Any:
    """Before a turn's decide phase: ask every attached agent (``run.governor``) of the batch's
    run states at once and write the answers with the kernel's ``set_pending`` (NaN for an
    arena without one or done; through ``offload``, see ``batch_runner.Offload``). Returns the
    batch state (trailing batch axis)."""
    live = [(b, r) for b, r in enumerate(runs) if r.governor is not None and not r.done]
    if not live:
        return state
    k = live[0][1].governor.plugin_index  # one Game: the same plugin in every arena
    mem = state.extra[NAME][k]
    dt = np.dtype(state.wealth.dtype)
    force = [np.asarray(mem[x]) for x in ("cap", "scale", "regen")]  # [B] each
    jobs = []
    for b, r in live:
        in_force = from_action([f[..., b] for f in force])
        jobs.append(r.governor.ask(observation(r, r.governor, r.turn + 1, in_force), dt, r.interrupt))
    decisions = await each(jobs, any(r.governor.waits for _, r in live))
    fields = np.full((len(FIELDS), len(runs)), np.nan, dt)
    for (b, _), d in zip(live, decisions, strict=True):
        fields[:, b] = to_action(d.action, dt)
    if np.isnan(fields).all():  # no action anywhere: the pending action is already none (cleared once applied)
        return state
    return await offload(set_pending, state, k, GovAction(*fields))


def checked(spec: GovernorSpec | dict, operator: Operator, agent_timeout_ms: float) -> tuple[GovernorSpec, float]:
    """The spec validated against the operator's choices, and its deadline (ms)."""
    if not isinstance(spec, GovernorSpec):
        spec = GovernorSpec.model_validate(spec)
    governor_kind(spec.kind).check_operator(spec, operator)
    return spec, player_timeout_ms(spec, agent_timeout_ms)


def attach(config, spec: GovernorSpec | dict | None, operator: Operator, agent_timeout_ms: float):
    """``(config, Governor or None)``: the config with the external governance_agent plugin the
    agent drives (added when the config has none). ValueError names the bad field."""
    ext = [i for i, p in enumerate(config.plugins) if p.type == PLUGIN_TYPE and getattr(p, "external", False)]
    if spec is None:
        if ext:
            raise ValueError(
                f"plugins[{ext[0]}].external: a live arena's external governance_agent needs a "
                "governance agent attached at create (governanceAgent)"
            )
        return config, None
    if len(ext) > 1:
        raise ValueError(f"plugins[{ext[1]}].external: one external governance_agent per live arena")
    spec, timeout = checked(spec, operator, agent_timeout_ms)
    if not ext:
        if any(p.id == PLUGIN_ID for p in config.plugins):
            raise ValueError(f"plugins: the id {PLUGIN_ID!r} is taken; an attached agent adds a plugin of that id")
        data = {k: getattr(config, k) for k in ArenaConfig.model_fields}
        plugin = {"type": PLUGIN_TYPE, "id": PLUGIN_ID, "external": True}
        config = ArenaConfig.model_validate({**data, "plugins": [*config.plugins, plugin]})
        ext = [len(config.plugins) - 1]
    return config, Governor(spec, ext[0], timeout)


class _Interrupted(Exception):  # noqa: N818 - a signal, not an error
    """The owner's close or delete ended the wait on the agent (``Interrupt.race``)."""


def _cut() -> Any:
    raise _Interrupted


class Governor:
    """The arena's attached agent: asks it before each turn, keeps its history, makes the
    turn record's ``governance`` entry."""

    def __init__(self, spec: GovernorSpec, plugin_index: int, timeout_ms: float) -> None:
        self.spec, self.plugin_index, self.timeout_ms = spec, plugin_index, timeout_ms
        self.history: deque[dict[str, Any]] = deque(maxlen=MAX_GOV_HISTORY)
        self.decision: GovDecision | None = None  # this turn's, until the record takes it
        self.agent: Any = None
        self._client = ClientSlot(None, 2)  # the arena's client, or its own (made when needed)

    def start(self, client, operator: Operator, llm: ArenaLLM | None = None) -> None:
        """Make the agent (a client of its own when the arena has none). ``llm``: the arena's
        LLM calls (host/live/arena_llm.py): an LLM agent's calls go through them as the players'
        do (the endpoint's limits and retries, the cache, the token account; issue 38)."""
        kind = governor_kind(self.spec.kind)  # its registered kind (host/governor_kinds.py)
        if kind.player_kind.remote:
            self._client = ClientSlot(client, 2)
            client = self._client.get()
        self.agent = kind.make_agent(self.spec, GovernorContext(self.timeout_ms, client, operator, llm))

    def reattach(
        self,
        spec: GovernorSpec | dict,
        client,
        operator: Operator,
        agent_timeout_ms: float,
        llm: ArenaLLM | None = None,
    ) -> None:
        """A resumed arena's live agent in place of the replayed one (same plugin, history kept)."""
        self.spec, self.timeout_ms = checked(spec, operator, agent_timeout_ms)
        self.start(client, operator, llm)

    @property
    def waits(self) -> bool:
        """Whether asking the agent can wait (HTTP, LLM); a scripted one answers at once."""
        return self.spec.player_kind.waits

    async def aclose(self) -> None:
        """Close the governor's own client (the arena's is the arena's to close)."""
        await self._client.aclose()

    async def ask(self, obs: dict[str, Any], dtype: Any, interrupt: Interrupt | None = None) -> GovDecision:
        """One answer, validated, kept for the turn record; never raises (a failure is no
        action, with its error). ``interrupt``: the arena's (host/live/interrupt.py): the owner's
        close or delete ends the wait at once, as it ends the players' (no action, the error
        ``INTERRUPTED``)."""
        t0 = time.perf_counter()
        errors: list[str] = []
        logged: dict[str, Any] | None = None  # a replayed entry: its logged error and fallback stand
        try:
            if self.waits:
                call = asyncio.wait_for(self.agent.answer(obs), self.timeout_ms / 1000.0 + 1.0)
                raw = await (interrupt.race(call, _cut) if interrupt is not None else call)
            else:  # a script answers at once (no deadline: no event loop needed)
                raw = await self.agent.answer(obs)
            raw, errors, logged = governor_kind(self.spec.kind).read(raw)  # as its kind reads it
            action, more = parse_answer(raw, dtype)
            errors += more
            fallback = False
        except TimeoutError:
            action, fallback = {}, True
            errors.append(f"timeout: no answer within {self.timeout_ms:g} ms")
        except _Interrupted:
            action, fallback = {}, True
            errors.append(INTERRUPTED)
        except TransportError as exc:
            action, fallback = {}, True
            errors.append(str(exc))
        except Exception as exc:  # noqa: BLE001 - a broken agent must never stall the turn
            action, fallback = {}, True
            errors.append(f"agent: {type(exc).__name__}: {str(exc)[:MAX_ERROR_CHARS]}")
        error = join_errors(errors)
        if logged is not None:
            error, fallback = logged.get("error", error), bool(logged.get("fallback", fallback))
        self.decision = GovDecision(action, error, fallback, (time.perf_counter() - t0) * 1000.0)
        return self.decision

    def entry(self, turn: int, applied) -> dict[str, Any]:
        """The turn record's ``governance`` entry (and one more line of the agent's history):
        what it asked (``action``), what the kernel applied (``applied``, its begin record: e.g.
        a regen on an engine without a regeneration rate applies as null), its error, and an
        LLM agent's tokens of the turn (``usage``, when its answer reported them; issue 38)."""
        d, self.decision = self.decision, None
        take = getattr(self.agent, "take_usage", None)  # LLM (its calls) and scripted (the log)
        usage = take() if callable(take) else None
        out = {
            "action": d.action if d else {},
            "applied": from_action(applied) if applied is not None else None,
            "error": d.error if d else None,
            "fallback": d.fallback if d else False,
            "elapsedMs": round(d.elapsed_ms, 3) if d else 0.0,
            **({"usage": usage} if usage is not None else {}),
        }
        self.history.append({"turn": turn, **{k: out[k] for k in ("action", "applied", "error")}})
        return out


__all__ = [
    "GovernorSpec",
    "GovAnswer",
    "Governor",
    "attach",
    "parse_answer",
    "LIFT",
    "MAX_GOV_RESPONSE_BYTES",
    "PLUGIN_TYPE",
    "PLUGIN_ID",
]
