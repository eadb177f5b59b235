"""The ``govsim`` architecture of an LLM player: GovSim's month (issue 37 item 1;
docs/semantics/live/agents.md §15).

The player keeps a :class:`~bdpd_jax.host.agents.memory.Memory`. Each month it stores what
it sees (the pool, and under universalization the month's sentence with that month's
threshold; both always shown), recalls its top memories and answers the harvest question;
in the meeting it recalls memories for the last utterances and speaks (naming the next
speaker, or ending the meeting); the meeting's opener is asked for a one-sentence summary
and the agreed limit; at the month's end every player stores its catch, the summary, the
utterances and the limit, reflects, and stores its lessons, each memory with an importance
the model is asked for. Every exchange (prompt, reply, error) is returned for the record
(``told``), so the run can be read and replayed from turns.jsonl.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
from typing import Any

from bdpd_jax.host.agents import govsim_prompts as gp
from bdpd_jax.host.agents.answers import message_text, parse_amount, split_utterance, text_answer
from bdpd_jax.host.agents.base import AgentResult, Utterance, check_wealth, join_errors, truncate_error
from bdpd_jax.host.agents.llm import LLMAgent
from bdpd_jax.host.agents.llm_protocol import decode_arguments, parse_completion, whole_units
from bdpd_jax.host.agents.memory import Memory, MemoryItem, render_memories
from bdpd_jax.host.agents.tools import SPEAK_TOOL, speak_schema, tool_schemas, truncate_text, validate_speak
from bdpd_jax.host.agents.transport import TransportError, loads_capped

ARCHITECTURES: tuple[str, ...] = ("minimal", "govsim")
EMBEDDINGS: tuple[str, ...] = ("auto", "endpoint", "lexical")
MAX_MEMORY_CHARS = 1000  # one memory's text
MAX_EMBEDDING_BYTES = 4 * 1024 * 1024  # an /embeddings answer, read off the wire
NEUTRAL_IMPORTANCE = 5.0  # an importance the model did not give (GovSim's default_value "5")


def govsim_speak_schema() -> dict[str, Any]:
    """``speak`` with ``endConversation`` (a speaker may end the meeting)."""
    schema = copy.deepcopy(speak_schema())
    schema["function"]["parameters"]["properties"]["endConversation"] = {
        "type": "boolean",
        "description": "true: the meeting ends after what you say",
    }
    return schema


def _tool_calls(data: Any) -> list[Any]:
    """A completion's tool calls (an empty list when it has none or is malformed)."""
    try:
        calls = data["choices"][0]["message"].get("tool_calls") or []
    except (KeyError, IndexError, TypeError, AttributeError):
        return []
    return calls if isinstance(calls, list) else []


class GovSimAgent(LLMAgent):
    """An LLM player run as GovSim runs its agents (memory, meeting, summary, reflection)."""

    def __init__(
        self,
        *args: Any,
        scenario: str | None = None,
        persona: str | None = None,
        embeddings: str = "auto",
        answer_format: str = "text",
        **kw: Any,
    ) -> None:
        if embeddings not in EMBEDDINGS:
            raise ValueError(f"embeddings: one of {list(EMBEDDINGS)}, got {embeddings!r}")
        self.sc = gp.scenario_of(scenario)
        self.persona = persona
        self.name = kw.get("player_id") or "player"
        self.embeddings = embeddings
        self._embed_ok: bool | None = None if embeddings != "lexical" else False
        self.memory = Memory()
        self._tools_now: list[dict[str, Any]] | None = None
        super().__init__(*args, answer_format=answer_format, scenario=scenario, **kw)

    # -- requests -------------------------------------------------------------------------
    def system_text(self, player_id: str | None, extra: str | None) -> str:
        rules = self.rules_text or self.sc.rules_text
        text = gp.system_text(self.name, rules, self.persona)
        return f"{text}\n{extra}" if extra else text

    def request_body(
        self, obs: dict[str, Any], inbox: list[dict[str, Any]] | None = None, tail: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """The system message and one user message; the tools of the question asked."""
        body = {"model": self.model, "messages": [*self._prefix, tail or {}], **self._params}
        if self._tools_now:
            body["tools"] = self._tools_now
        else:
            body.pop("tool_choice", None)
        return body

    async def _ask(
        self, purpose: str, prompt: str, tools: list[dict[str, Any]] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """One exchange: (the completion or None, its record ``{purpose, prompt, reply, toolCalls?, error?}``)."""
        self._tools_now = tools
        entry: dict[str, Any] = {"purpose": purpose, "prompt": prompt}
        try:
            data = await self.complete({}, None, {"role": "user", "content": prompt})
        except TransportError as exc:
            entry["error"] = truncate_error(str(exc))
            return None, entry
        finally:
            self._tools_now = None
        entry["reply"] = message_text(data)
        calls = _tool_calls(data)
        if calls:
            entry["toolCalls"] = [c.get("function") for c in calls[:4] if isinstance(c, dict)]
        return data, entry

    async def _embed(self, texts: list[str]) -> list[list[float]] | None:
        """Embeddings of ``texts`` from the endpoint's ``/embeddings`` (None where it serves
        none: under ``auto`` the first failure switches this player to the lexical score)."""
        if self._embed_ok is False or not texts:
            return None
        body = json.dumps({"model": self.model, "input": texts}).encode()
        limiter = self.calls.limiter  # the endpoint's maxInFlight covers these calls too (issue 38)
        try:
            async with limiter.slot() if limiter is not None else contextlib.nullcontext():
                status, raw = await self._client.get().post(
                    f"{self.base_url}/embeddings", body, self._headers(), self.timeout_ms / 1000.0, MAX_EMBEDDING_BYTES
                )
            data = loads_capped(raw) if 200 <= status < 300 else None
            vecs = [[float(x) for x in d["embedding"]] for d in data["data"]] if isinstance(data, dict) else None
        except (TransportError, KeyError, TypeError, ValueError):
            vecs = None
        if vecs is None or len(vecs) != len(texts):
            if self.embeddings == "auto":
                self._embed_ok = False
            return None
        self._embed_ok = True
        return vecs

    async def _store(self, kind: str, text: str, month: int, told: list, *, always: bool = False, keep: int = 2):
        """Store one memory; its importance asked of the model unless it is always shown."""
        text = truncate_text(text, MAX_MEMORY_CHARS)
        score = 10.0
        if not always:
            data, entry = await self._ask("importance", gp.importance_prompt(self.name, text))
            value, why = parse_amount(message_text(data)) if data is not None else (None, None)
            score = NEUTRAL_IMPORTANCE if value is None else value
            if value is None:
                entry["error"] = entry.get("error") or why
            entry["importance"] = score
            told.append(entry)
        emb = await self._embed([text])
        return self.memory.add(kind, text, month, score, always=always, keep=keep, embedding=emb[0] if emb else None)

    async def _recall(self, focal: list[str], month: int, k: int) -> list[MemoryItem]:
        embs = await self._embed(focal) if self._embed_ok else None
        return self.memory.retrieve(focal, month, k, embs)

    # -- the month ------------------------------------------------------------------------
    async def decide(
        self, obs: dict[str, Any], wealth: float, inbox: list[dict[str, Any]] | None = None, pool: float | None = None
    ) -> AgentResult:
        """The month's harvest: store what is seen, recall, ask; the fallback on any failure."""
        check_wealth(wealth)
        t0 = time.perf_counter()
        month = int(obs.get("turn") or 1)
        stock = obs.get("commonsStock")
        sc = self.sc
        told: list[dict[str, Any]] = []
        if isinstance(stock, (int, float)):
            await self._store(
                "observation", f"At the start of month {month}, {sc.place} holds {stock:g} {sc.unit}s.", month, told,
                always=True, keep=0,
            )  # fmt: skip
        uni = gp.universalization_text(sc, obs.get("sustainabilityThreshold"))
        if uni:
            await self._store("observation", uni, month, told, always=True, keep=0)
        mems = await self._recall([sc.place, f"how many {sc.unit}s to {sc.act}"], month, gp.TOP_K_HARVEST)
        top = pool if pool is not None else stock
        prompt = gp.harvest_prompt(sc, month, top, render_memories(mems), self.answer_format, None)
        tools = None if self.answer_format == "text" else tool_schemas(True)
        data, entry = await self._ask("harvest", prompt, tools)
        told.append({**entry, "system": self.prefix_messages()[0]["content"]})  # once a month: the fixed part
        errors: list[str] = []
        record: dict[str, Any] = {"told": told}
        harvest: float | None = None
        if data is None:
            errors.append(entry["error"])
        else:
            harvest, _, errors = parse_completion(data, no_talk=True)
            if self.answer_format != "tool":
                harvest, errors, record["answer"] = text_answer(data, harvest, errors, self.answer_format)
        elapsed = (time.perf_counter() - t0) * 1000.0
        if harvest is None:
            fb = self.fallback if self.fallback is not None else 0.0
            return AgentResult(fb, join_errors(errors), [], elapsed, True, True, record)
        if self.whole_units:
            harvest = whole_units(harvest, pool, errors)
        return AgentResult(harvest, join_errors(errors), [], elapsed, False, record=record)

    def report_lines(self, report: dict[str, Any]) -> list[tuple[str, str]]:
        """The report that opens the meeting, as its first line."""
        unit, reqs = self.sc.unit, report.get("requests", {})
        parts = [
            f"{p} asked for {reqs[p]:g} and got {c:g} {unit}s." if isinstance(reqs.get(p), (int, float))
            else f"{p} got {c:g} {unit}s."
            for p, c in report.get("catches", {}).items() if isinstance(c, (int, float))
        ]  # fmt: skip
        return [("Report", "This month's catches: " + " ".join(parts))] if parts else []

    async def speak(self, context: dict[str, Any]) -> Utterance:
        """One utterance of the meeting (``context``: the govsim meeting's, discussion.py)."""
        month = int(context.get("turn") or 1)
        said = [(u["speaker"], u["text"]) for u in context.get("utterances", []) if u.get("text")]
        transcript = self.report_lines(context.get("report", {})) + said
        focal = [f"month {month} meeting"] + [t for _, t in transcript[-4:]]
        mems = await self._recall(focal, month, gp.TOP_K_TALK)
        text_mode = self.answer_format == "text"
        names = list(context.get("speakers", []))
        prompt = gp.speak_prompt(self.sc, month, names, render_memories(mems), transcript, text_mode)
        data, entry = await self._ask("speak", prompt, None if text_mode else [govsim_speak_schema()])
        if data is None:
            return Utterance(None, None, entry["error"], record={"told": entry})
        errors: list[str] = []
        if not text_mode:
            for call in _tool_calls(data)[:4]:
                fn = call.get("function") if isinstance(call, dict) else None
                if not isinstance(fn, dict) or fn.get("name") != SPEAK_TOOL:
                    continue
                try:
                    args = decode_arguments(fn.get("arguments"))
                    text, nxt = validate_speak(args)
                except ValueError as exc:
                    errors.append(f"speak dropped: {exc}")
                    continue
                end = args.get("endConversation") is True
                return Utterance(text, nxt, join_errors(errors), end, {"told": entry})
        raw = message_text(data)
        if self.answer_format != "tool" and raw and raw.strip():
            body, nxt, end = split_utterance(raw)
            if not body and end:  # only the end mark: the meeting ends, nothing said
                return Utterance(None, None, "speak: nothing said but [END]", True, {"told": entry})
            try:
                text, nxt = validate_speak({"text": body, "nextSpeaker": nxt})
                return Utterance(text, nxt, join_errors(errors), end, {"told": entry})
            except ValueError as exc:
                errors.append(f"content: {exc}")
        errors.append("speak: no valid utterance in response")
        return Utterance(None, None, join_errors(errors), record={"told": entry})

    async def summarize(self, context: dict[str, Any]) -> dict[str, Any]:
        """The meeting's one-sentence summary and the limit it agreed on (None: none)."""
        said = [(u["speaker"], u["text"]) for u in context.get("utterances", []) if u.get("text")]
        transcript = self.report_lines(context.get("report", {})) + said
        d1, e1 = await self._ask("summary", gp.summary_prompt(transcript))
        d2, e2 = await self._ask("agreedLimit", gp.limit_prompt(self.sc, transcript))
        reply = message_text(d2) or ""
        limit, why = parse_amount(reply)
        errors = [e["error"] for e in (e1, e2) if e.get("error")]
        if limit is None and "none" not in reply.lower().split("answer")[-1] and d2 is not None:
            errors.append(f"agreedLimit: {why}")
        text = (message_text(d1) or "").strip()
        return {
            "by": self.name,
            "text": truncate_text(text, MAX_MEMORY_CHARS) if text else None,
            "agreedLimit": limit,
            "error": truncate_error(join_errors(errors)),
            "told": [e1, e2],
        }

    async def month_end(self, context: dict[str, Any]) -> dict[str, Any]:
        """Store the month (catch, summary, utterances, limit) and reflect."""
        month = int(context.get("turn") or 1)
        sc = self.sc
        told: list[dict[str, Any]] = []
        new: list[MemoryItem] = []
        c = context.get("catch") or {}
        if isinstance(c.get("actual"), (int, float)):
            asked = f"asked for {c['request']:g} and " if isinstance(c.get("request"), (int, float)) else ""
            text = f"In month {month} I {asked}got {c['actual']:g} {sc.unit}s."
            new.append(await self._store("catch", text, month, told))
        summary = context.get("summary")
        if summary:
            item = await self._store("summary", f"The meeting of month {month}: {summary}", month, told)
            new.append(item)
            for u in context.get("utterances", []):
                if u.get("text"):  # the utterances share the summary's importance
                    t = truncate_text(f"{u['speaker']} said: {u['text']}", MAX_MEMORY_CHARS)
                    new.append(self.memory.add("utterance", t, month, item.importance))
        limit = context.get("agreedLimit")
        if isinstance(limit, (int, float)):
            text = f"The group agreed that each {sc.actor} takes at most {limit:g} {sc.unit}s a month."
            new.append(await self._store("limit", text, month, told, always=True))
        mems = await self._recall([f"{sc.act}ing", sc.place], month, gp.TOP_K_REFLECT)
        data, entry = await self._ask("reflection", gp.reflect_prompt(self.name, render_memories(mems)))
        told.append(entry)
        insights = [ln.strip(" -*\t") for ln in (message_text(data) or "").splitlines() if ln.strip(" -*\t")]
        for line in insights[: gp.MAX_INSIGHTS]:
            new.append(await self._store("reflection", line, month, told))
        errors = [e["error"] for e in told if e.get("error")]
        return {"memories": [m.public() for m in new], "told": told, "error": truncate_error(join_errors(errors))}


__all__ = ["ARCHITECTURES", "EMBEDDINGS", "GovSimAgent", "govsim_speak_schema"]
