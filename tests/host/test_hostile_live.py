# ruff: noqa: E501  (the case tables keep one case a line)
"""Hostile inputs to the live host's players (formerly bench/hostile_live.py): JS code
agents, HTTP players, LLM players, and join sizes / secrets. Every case must be handled
cleanly: the documented refusal (a ValueError naming the field at join, or a fallback
harvest with an error saying why) within the time bound, and the next call works; never an
exception escaping to the caller, a hang, or a non-fallback answer to invalid input.
Loopback only (the host tests' stub server).
"""

from __future__ import annotations

import asyncio
import copy
import time

import pytest

pytest.importorskip("jsbox")
from payloads import SEED_LOGISTIC  # noqa: E402

from bdpd_jax.host.agents import CodeAgent, HttpAgent, LLMAgent  # noqa: E402
from bdpd_jax.host.agents.js_pool import JsPool  # noqa: E402
from bdpd_jax.host.agents.tools import (  # noqa: E402
    MAX_ACTIONS_PER_TURN,
    ActionBudget,  # noqa: E402
    validate_actions,
)
from bdpd_jax.host.live.arena import Arena  # noqa: E402

# The bench's bound was 1 s on an idle machine; CI shares its cores, so a refusal counts as
# a hang only past 5 s (the agents' own timeouts here are 0.5-1 s).
HUNG_S = 5.0

JS_BAD = {
    "BigInt square loop": "let x = 3n; for (;;) x = x * x;",
    "BigInt power": "let y = 7n ** 100000n; for (let i = 0; i < 30; i++) y = y * y;",
    "allocation bomb": "const a = []; for (;;) a.push('x'.repeat(1e6));",
    "regex backtracking": "/(a+)+$/.test('a'.repeat(40) + 'b');",
    "infinite loop": "for (;;) {}",
    "normalize 2 MB": "'\\u1E9B\\u0323'.repeat(1e6).normalize('NFKC');",
    "stack overflow": "function f() { f() } f();",
    "8 MB error": "throw new Error('x'.repeat(8e6));",
    "huge string": "return 'x'.repeat(2 ** 28).length;",
    "NaN": "return NaN;",
    "Infinity": "return Infinity;",
    "negative": "return -1;",
    "string": "return '1.5';",
    "undefined": "return undefined;",
    "object": "return {h: 1};",
    "cyclic memory": "m.self = m; return 1;",
    "memory > 1 MiB": "m.big = 'x'.repeat(2e6); return 1;",
    "require": "require('fs'); return 1;",
    "process": "process.exit(); return 1;",
    "fetch": "fetch('http://127.0.0.1:9/'); return 1;",
    "harness tamper": "globalThis.__bdpd.S = () => 'nope'; return 1;",
}
JS_JOIN_BAD = {
    "syntax error": "function decide( {",
    "no decide": "var x = 1;",
    "top-level loop": "for (;;) {} function decide() { return 1 }",
    "top-level BigInt": "let x = 3n; for (;;) x = x * x; function decide() { return 1 }",
    "empty": "",
}
HTTP_BAD = ["gzipbomb", "gzipbomb&chunked=1", "brotli", "huge", "huge&chunked=1", "deep", "bignum", "overflow"]
HTTP_ROUTES = ["garbage", "nan", "negative", "missing", "status500", "trickle", "slow?d=5"]
LLM_BAD = [
    "hostile-gzipbomb",
    "hostile-brotli",
    "hostile-huge",
    "hostile-deep",
    "hostile-bignum",
    "hostile-overflow",
    "deep-args",
    "broken",
    "bad-harvest",
    "talk-only",
    "slow",
]


class Tally:
    def __init__(self) -> None:
        self.rows: dict[str, dict[str, int]] = {}
        self.notes: list[str] = []

    def add(self, row: str, case: str, outcome: str) -> None:
        r = self.rows.setdefault(row, {"tried": 0, "clean": 0, "crashed": 0, "hung": 0, "nonsense": 0})
        r["tried"] += 1
        r[outcome] += 1
        if outcome != "clean":
            self.notes.append(f"{row}: {case}: {outcome}")


def _fallback_ok(r, wall: float) -> str:
    if wall > HUNG_S:
        return "hung"
    return "clean" if r.fallback and r.error else "nonsense"


def js_cases(t: Tally, pool: JsPool) -> None:
    for name, body in JS_BAD.items():
        try:
            a = CodeAgent(
                "function decide(o, m) { m.n = (m.n || 0) + 1; if (o.bad) { " + body + " } return 0.5; }", pool=pool
            )
            a.decide_sync({}, 1.0)
            t0 = time.perf_counter()
            r = a.decide_sync({"bad": True}, 1.0)
            outcome = _fallback_ok(r, time.perf_counter() - t0)
            if outcome == "clean" and (a.decide_sync({}, 1.0).harvest != 0.5 or a.memory != {"n": 2}):
                outcome = "nonsense"  # memory not rolled back, or the next call broken
        except Exception as exc:  # noqa: BLE001
            outcome = "crashed"
            t.notes.append(f"JS {name}: {type(exc).__name__}: {exc}"[:200])
        t.add("JS (code agents)", name, outcome)
    for name, code in JS_JOIN_BAD.items():
        t0 = time.perf_counter()
        try:
            CodeAgent(code, pool=pool)
            outcome = "nonsense"
        except ValueError as exc:
            outcome = "clean" if "strategyCode" in str(exc) else "nonsense"
        except Exception:  # noqa: BLE001
            outcome = "crashed"
        if time.perf_counter() - t0 > HUNG_S:
            outcome = "hung"
        t.add("JS (code agents)", f"join: {name}", outcome)


async def ask_agent(agent) -> tuple[object, float]:
    t0 = time.perf_counter()
    try:
        r = await agent.decide({"turn": 1}, 1.0)
    finally:
        await agent.aclose()
    return r, time.perf_counter() - t0


def http_cases(t: Tally, base: str) -> None:
    for kind in HTTP_BAD + HTTP_ROUTES:
        url = f"{base}/bad?kind={kind}" if kind in HTTP_BAD else f"{base}/{kind}"
        try:
            r, wall = asyncio.run(ask_agent(HttpAgent(url, 500)))
            outcome = _fallback_ok(r, wall)
        except Exception:  # noqa: BLE001
            outcome = "crashed"
        t.add("HTTP players", kind, outcome)
    acts, errors = validate_actions([{"tool": "broadcast", "text": "x" * 1_000_000}] * 5000)
    t.add(
        "HTTP players",
        "5000 actions of 1 MB",
        "clean" if len(acts) == MAX_ACTIONS_PER_TURN and len(acts[0]["text"]) == 500 and errors else "nonsense",
    )


def llm_cases(t: Tally, base: str) -> None:
    for model in LLM_BAD:
        try:
            r, wall = asyncio.run(ask_agent(LLMAgent(f"{base}/v1", model, timeout_ms=500)))
            outcome = _fallback_ok(r, wall)
        except Exception:  # noqa: BLE001
            outcome = "crashed"
        t.add("LLM players", model, outcome)


def join_cases(t: Tally) -> None:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["players"], cfg["agentTimeout"] = [], 500
    op = {"credentials": {"ok": {"baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "K"}}}
    http = {"agentType": "http", "url": "http://127.0.0.1:9/d"}
    llm = {"agentType": "llm", "model": "m"}
    bad = {
        "name 5 MB": {**http, "name": "n" * 5_000_000},
        "strategyCode 20 MB": {"agentType": "code", "strategyCode": "function decide(){return 1}//" + "x" * 20_000_000},
        "url 1 MB": {**http, "url": "http://127.0.0.1:9/" + "p" * 1_000_000},
        "systemPrompt 1 MB": {**llm, "credential": "ok", "systemPrompt": "p" * 1_000_000},
        "timeoutMs 60000 (http)": {**http, "timeoutMs": 60000},
        "timeoutMs 3000 (code)": {
            "agentType": "code",
            "strategyCode": "function decide(){return 1}",
            "timeoutMs": 3000,
        },
        "apiKeyEnv": {**llm, "baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "HOME"},
        "own baseUrl": {**llm, "baseUrl": "http://169.254.169.254/v1"},
        "unknown credential": {**llm, "credential": "root"},
        "credential to another URL": {**llm, "credential": "ok", "baseUrl": "http://evil.example/v1"},
    }
    for name, spec in bad.items():
        a = Arena(copy.deepcopy(cfg), seed=0, operator=op)
        try:
            a.join(spec)
            outcome = "nonsense"
        except ValueError:
            outcome = "clean"
        except Exception:  # noqa: BLE001
            outcome = "crashed"
        t.add("Sizes and secrets (join)", name, outcome)
    b = ActionBudget()
    refused = [b.take("p", "broadcast", 1) for _ in range(5000)]
    t.add(
        "Sizes and secrets (join)",
        "5000 broadcasts in a turn",
        "clean" if sum(r is None for r in refused) == 8 else "nonsense",
    )


def test_js_code_agents_refuse_hostile_code(js_pool) -> None:
    t = Tally()
    js_cases(t, js_pool)
    assert t.rows["JS (code agents)"]["tried"] == len(JS_BAD) + len(JS_JOIN_BAD)
    assert not t.notes, "\n".join(t.notes)


def test_http_players_fall_back_on_hostile_answers(live_server) -> None:
    t = Tally()
    http_cases(t, live_server.base)
    assert t.rows["HTTP players"]["tried"] == len(HTTP_BAD) + len(HTTP_ROUTES) + 1
    assert not t.notes, "\n".join(t.notes)


def test_llm_players_fall_back_on_hostile_answers(live_server) -> None:
    t = Tally()
    llm_cases(t, live_server.base)
    assert t.rows["LLM players"]["tried"] == len(LLM_BAD)
    assert not t.notes, "\n".join(t.notes)


def test_joins_refuse_oversize_fields_and_foreign_secrets() -> None:
    t = Tally()
    join_cases(t)
    assert t.rows["Sizes and secrets (join)"]["tried"] == 11
    assert not t.notes, "\n".join(t.notes)
