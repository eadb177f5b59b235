"""Issue 38: the layer below the LLM player's protocol (host/agents/llm_client.py,
host/live/arena_llm.py): the operator's ``maxInFlight`` across arenas, retries of 429 within the
deadline, the response cache (a re-run at temperature 0 makes no call and gives the same
records), token usage per call / player / arena, and ``tokenBudget`` stopping an arena."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from aiohttp import web
from fake_llm import BASE, FakeClient, completion, run_virtual, tool_call
from payloads import SEED_LOGISTIC

from bdpd_jax.host.agents.llm import LLMAgent
from bdpd_jax.host.agents.transport import Reply, make_client
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.arena_llm import ArenaLLM
from bdpd_jax.host.live.live_batch import LiveBatch
from bdpd_jax.host.live.operator import Operator
from bdpd_jax.host.live.replay import replay, strip_volatile

OBS = {"turn": 1, "commonsStock": 100.0, "myWealth": 10.0}


def _answer(amount: float, usage: dict | None = None) -> bytes:
    body = json.loads(completion([tool_call(0, "harvest", {"amount": amount})]))
    if usage is not None:
        body["usage"] = usage
    return json.dumps(body).encode()


async def _serve(handler) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/v1"


def test_calls_in_flight_never_exceed_max_in_flight_across_arenas():
    """Six arenas' LLM players (their own ArenaLLM each, one operator) ask a loopback server at
    once; the server sees at most maxInFlight requests at a time, and exactly that many."""

    async def main() -> tuple[int, int, list]:
        now, peak = 0, 0

        async def chat(request: web.Request) -> web.Response:
            nonlocal now, peak
            now += 1
            peak = max(peak, now)
            await asyncio.sleep(0.02)
            now -= 1
            return web.Response(body=_answer(1.0), content_type="application/json")

        runner, base = await _serve(chat)
        op = Operator.model_validate({"llmBaseUrls": [base], "llmEndpoints": [{"baseUrl": base, "maxInFlight": 3}]})
        client = make_client(64)
        agents = [
            LLMAgent(base, "m", client=client, calls=ArenaLLM(op).calls_for(base), timeout_ms=20000)
            for _ in range(6)
            for _ in range(4)
        ]
        try:
            results = await asyncio.gather(*(a.decide(OBS, 10.0) for a in agents))
        finally:
            await client.aclose()
            await runner.cleanup()
        limiter = agents[0].calls.limiter
        assert limiter is not None and all(a.calls.limiter is limiter for a in agents)  # one per endpoint
        return peak, limiter.peak, results

    peak, seen, results = asyncio.run(main())
    assert [r.error for r in results] == [None] * 24 and all(r.harvest == 1.0 for r in results)
    assert peak == 3 and seen == 3


def test_requests_per_minute_holds_in_every_rolling_minute_across_arenas():
    """Three arenas (an ArenaLLM each, one operator) x 4 LLM players x 5 turns ask one endpoint
    with ``requestsPerMinute`` 20 on a virtual clock (no real waiting): the POSTs, retries of
    429s included, never number more than 20 in any rolling minute, the rate is used (the 21st
    starts one minute after the first), and every decision is the model's answer."""
    rpm, seen = 20, []

    async def main() -> list:
        loop = asyncio.get_running_loop()

        async def post(url: str, body: bytes, headers: dict, timeout_s: float, max_bytes: int) -> Reply:
            seen.append(loop.time())
            await asyncio.sleep(0.4)  # the server's time to answer, on the virtual clock
            if len(seen) % 7 == 0:  # now and then a 429: its retry is a request too
                return Reply(429, b"", "0")
            return Reply(200, _answer(1.0))

        fake = FakeClient(lambda url, req: b"")
        fake.post = post  # type: ignore[method-assign]
        op = Operator.model_validate(
            {"llmBaseUrls": [BASE], "llmEndpoints": [{"baseUrl": BASE, "requestsPerMinute": rpm, "maxRetries": 2}]}
        )
        agents = [
            LLMAgent(BASE, "m", client=fake, calls=llm.calls_for(BASE), timeout_ms=3_600_000)
            for llm in (ArenaLLM(op) for _ in range(3))
            for _ in range(4)
        ]
        assert len({id(a.calls.limiter) for a in agents}) == 1  # the arenas share the endpoint's limiter
        out = []
        for turn in range(5):
            out += await asyncio.gather(*(a.decide({**OBS, "turn": turn + 1}, 10.0) for a in agents))
        return out

    results = run_virtual(main())
    assert all(r.error is None and r.harvest == 1.0 for r in results) and len(results) == 60
    starts = sorted(seen)
    assert len(starts) > 60  # the retries went through the limiter too
    window = [b - a for a, b in zip(starts, starts[rpm:], strict=False)]
    assert min(window) >= 60.0 - 1e-6  # the (rpm + 1)-th request after any one: a minute later or more
    assert starts[rpm] - starts[0] == pytest.approx(60.0)  # and not slower than the rate


def test_429_then_success_is_retried_within_the_deadline():
    """A 429 with Retry-After, then a good answer: the decision is the answer, no fallback;
    a Retry-After past the deadline fails at once with the status, not a timeout."""

    async def main(retry_after: str, timeout_ms: float) -> tuple:
        tries = 0

        async def chat(request: web.Request) -> web.Response:
            nonlocal tries
            tries += 1
            if tries == 1:
                return web.Response(status=429, headers={"Retry-After": retry_after})
            return web.Response(body=_answer(2.0), content_type="application/json")

        runner, base = await _serve(chat)
        op = Operator.model_validate({"llmBaseUrls": [base], "llmEndpoints": [{"baseUrl": base, "maxRetries": 2}]})
        llm = ArenaLLM(op)
        client = make_client(4)
        agent = LLMAgent(base, "m", client=client, calls=llm.calls_for(base), timeout_ms=timeout_ms)
        try:
            res = await agent.decide(OBS, 10.0)
        finally:
            await client.aclose()
            await runner.cleanup()
        return res, tries, llm.account

    res, tries, acct = asyncio.run(main("0.05", 5000))
    assert res.error is None and not res.fallback and res.harvest == 2.0
    assert tries == 2 and acct.sent == 2 and acct.retried == 1
    res, tries, acct = asyncio.run(main("30", 2000))
    assert res.fallback and tries == 1 and "status 429" in res.error and "deadline" in res.error


def test_retry_after_is_read_from_the_wire_and_5xx_without_retries_fails_once():
    """No llmEndpoints entry: no retries (a 500 is the error, as before issue 38)."""
    fake = FakeClient(lambda url, req: Reply(503, b"", "0"))
    llm = ArenaLLM(Operator.model_validate({"llmBaseUrls": [BASE]}))
    agent = LLMAgent(BASE, "m", client=fake, calls=llm.calls_for(BASE))
    res = asyncio.run(agent.decide(OBS, 10.0))
    assert res.fallback and res.error == "http: status 503" and len(fake.requests) == 1


# -- arenas: cache, usage, budget ----------------------------------------------------------------------


def _cfg() -> dict:
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(maxPlayers=3, minPlayers=3, maxTurns=4)
    cfg["players"] = [{"strategy": "aggressive", "intensity": 0.5, "name": "a"}]
    return cfg


USAGE = {"m1": (100, 5), "m2": (200, 7)}  # per model: prompt, completion tokens of every answer


def _usage_answer(url, req):
    p, c = USAGE[req["model"]]
    turn = json.loads(req["messages"][-1]["content"]).get("turn", 0)
    return _answer(0.5 + 0.25 * (turn % 3), {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c})


def _arena(out, cache_dir=None, **kw) -> tuple[Arena, FakeClient]:
    client = FakeClient(_usage_answer)
    op = {"llmBaseUrls": [BASE], **({"llmCacheDir": str(cache_dir)} if cache_dir else {})}
    arena = Arena(_cfg(), seed=5, client=client, operator=op, out_dir=out, fsync=False, **kw)
    for name, model in (("s1", "m1"), ("s2", "m2")):
        arena.join({"agentType": "llm", "name": name, "model": model, "baseUrl": BASE, "temperature": 0.0})
    return arena, client


def _records(folder) -> list[dict]:
    return [strip_volatile(json.loads(line)) for line in (folder / "turns.jsonl").read_text().splitlines()]


def test_usage_is_summed_per_call_player_and_arena(tmp_path):
    arena, client = _arena(tmp_path / "a")
    summary = arena.run()
    recs = _records(tmp_path / "a")
    assert len(recs) == 4 and len(client.requests) == 8

    def tokens(calls: int, *models: str) -> dict[str, int]:  # what ``calls`` answers of each model cost
        p, c = (calls * sum(USAGE[m][k] for m in models) for k in (0, 1))
        return {"promptTokens": p, "completionTokens": c}

    for r in recs:  # one call per LLM player per turn; the built-in reports none
        assert {d["playerId"]: d.get("usage") for d in r["decisions"]} == {
            "a": None,
            "s1": tokens(1, "m1"),
            "s2": tokens(1, "m2"),
        }
        assert r["usage"] == tokens(1, "m1", "m2")
    players = {p["playerId"]: p.get("usage") for p in summary["players"]}
    assert players == {"a": None, "s1": tokens(4, "m1"), "s2": tokens(4, "m2")}
    assert summary["usage"] == tokens(4, "m1", "m2")
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert meta["llmCalls"] == {"sent": 8, "cached": 0, "retried": 0}
    again = replay(tmp_path / "a")  # verify: the replayed records carry the logged usage
    assert again.close() == summary  # and the report is the folder's


def test_rerun_at_temperature_0_makes_no_calls_and_gives_identical_records(tmp_path):
    cache = tmp_path / "cache"
    first, c1 = _arena(tmp_path / "one", cache)
    first.run()
    again, c2 = _arena(tmp_path / "two", cache)
    again.run()
    assert len(c1.requests) == 8 and c2.requests == []
    assert _records(tmp_path / "two") == _records(tmp_path / "one")
    assert again.llm.account.calls() == {"sent": 0, "cached": 8, "retried": 0}
    assert json.loads((tmp_path / "two" / "meta.json").read_text())["llmCalls"]["cached"] == 8
    off, c3 = _arena(tmp_path / "three", cache, llm_cache=False)  # the arena option turns it off
    off.run()
    assert len(c3.requests) == 8
    other, c4 = _arena(tmp_path / "four", cache, arena_index=1)  # another arena: its own entries
    other.run()
    assert len(c4.requests) == 8


def test_lanes_with_the_kernels_in_a_thread_give_the_lockstep_records(tmp_path):
    """Two LiveBatches (lanes) on one loop, each ticking on its own with its kernel work in a
    worker thread (``atick(offload)``, bench/llm_scale.py's layout), give the records one
    inline batch of the same arenas gives."""
    from concurrent.futures import ThreadPoolExecutor

    lanes = [LiveBatch([_arena(tmp_path / f"l{k}", arena_index=k)[0]]) for k in range(2)]
    one = LiveBatch([_arena(tmp_path / f"b{k}", arena_index=k)[0] for k in range(2)])

    async def main() -> None:
        with ThreadPoolExecutor(1) as pool:

            async def offload(fn, *args):
                return await asyncio.get_running_loop().run_in_executor(pool, fn, *args)

            async def play(batch: LiveBatch) -> None:
                while not batch.done:
                    await batch.atick(offload)

            await asyncio.gather(*(play(b) for b in lanes))
        for b in lanes:
            await b.aclose()

    asyncio.run(main())
    one.run()
    assert [_records(tmp_path / f"l{k}") for k in range(2)] == [_records(tmp_path / f"b{k}") for k in range(2)]
    assert all(len(_records(tmp_path / f"l{k}")) == 4 for k in range(2))


def test_spent_token_budget_stops_the_arena_with_a_clear_status(tmp_path):
    """312 tokens a turn, a budget of 700: turn 3 spends it and is the last (a call that starts
    once it is spent is refused: the fake answers at once, so s2's of turn 3 is); in a LiveBatch the
    other arena plays on, and the stopped one keeps the state of its last turn."""
    stopped, _ = _arena(tmp_path / "b", token_budget=700)
    other, _ = _arena(tmp_path / "c")
    batch = LiveBatch([stopped, other])
    summaries = batch.run()
    recs = _records(tmp_path / "b")
    assert [r["turn"] for r in recs] == [1, 2, 3] and "stopped" in recs[-1]
    used = sum(r["usage"]["promptTokens"] + r["usage"]["completionTokens"] for r in recs)
    assert used > 624 and recs[-1]["stopped"] == f"tokenBudget: {used} tokens used of a budget of 700 (turn 3)"
    s_stopped, s_other = summaries
    assert s_stopped["status"] == "closed" and s_stopped["stopped"] == recs[-1]["stopped"]
    assert s_stopped["turnsPlayed"] == 3 and s_other["turnsPlayed"] == 4 and "stopped" not in s_other
    meta = json.loads((tmp_path / "b" / "meta.json").read_text())
    assert meta["tokenBudget"] == 700


def test_a_call_after_the_budget_is_spent_is_refused():
    llm = ArenaLLM(Operator.model_validate({"llmBaseUrls": [BASE]}), token_budget=10)
    fake = FakeClient(lambda url, req: _answer(1.0, {"prompt_tokens": 8, "completion_tokens": 4}))
    agent = LLMAgent(BASE, "m", client=fake, calls=llm.calls_for(BASE))
    first = asyncio.run(agent.decide(OBS, 10.0))
    second = asyncio.run(agent.decide(OBS, 10.0))
    assert first.error is None and second.fallback and second.error.startswith("budget: ")
    assert len(fake.requests) == 1


@pytest.mark.parametrize("bad", [{"tokenBudget": 0}, {"tokenBudget": 1.5}, {"llmCache": "yes"}])
def test_bad_llm_options_are_refused_by_name(bad):
    kw = {"token_budget": bad.get("tokenBudget"), "llm_cache": bad.get("llmCache")}
    with pytest.raises(ValueError, match=next(iter(bad))):
        ArenaLLM(Operator(), **kw)


class _SlowFor:
    """A fake client whose answers for ``slow_model`` never come (the deadline ends the call)."""

    def __init__(self, slow_model: str) -> None:
        self.slow_model = slow_model
        self.inner = FakeClient(_usage_answer)

    async def post(self, url, body, headers, timeout_s, max_bytes):
        if json.loads(body)["model"] == self.slow_model:
            await asyncio.sleep(3600)
        return await self.inner.post(url, body, headers, timeout_s, max_bytes)

    async def aclose(self) -> None:
        pass


def test_one_slow_arena_holds_the_batch_no_longer_than_its_own_deadline(tmp_path):
    """Two arenas in one LiveBatch: one's model never answers; its players fall back at their
    deadline (the phase ends then) and the other's answers are used."""
    slow = Arena(_cfg(), seed=5, arena_index=0, client=_SlowFor("m1"), operator={"llmBaseUrls": [BASE]})
    fast = Arena(_cfg(), seed=5, arena_index=1, client=_SlowFor("none"), operator={"llmBaseUrls": [BASE]})
    for a in (slow, fast):
        for name, model in (("s1", "m1"), ("s2", "m2")):
            a.join({"agentType": "llm", "name": name, "model": model, "baseUrl": BASE, "timeoutMs": 150})
    batch = LiveBatch([slow, fast])
    r_slow, r_fast = batch.tick()
    by_slow = {d["playerId"]: d for d in r_slow["decisions"]}
    assert by_slow["s1"]["fallback"] and by_slow["s1"]["error"].startswith("timeout: no completion within 150 ms")
    assert not by_slow["s2"]["fallback"]
    assert not any(d.get("fallback") for d in r_fast["decisions"])
    batch.close()


def test_time_queued_for_a_place_counts_against_the_deadline():
    """maxInFlight 1, answers after 0.3 s, deadlines of 0.5 s: the calls queued behind the
    first run out of time in the queue (a timeout, never a late answer)."""

    async def main() -> tuple[list, int]:
        async def chat(request: web.Request) -> web.Response:
            await asyncio.sleep(0.3)
            return web.Response(body=_answer(1.0), content_type="application/json")

        runner, base = await _serve(chat)
        op = Operator.model_validate({"llmBaseUrls": [base], "llmEndpoints": [{"baseUrl": base, "maxInFlight": 1}]})
        client = make_client(8)
        llm = ArenaLLM(op)
        agents = [LLMAgent(base, "m", client=client, calls=llm.calls_for(base), timeout_ms=500) for _ in range(4)]
        try:
            out = await asyncio.gather(*(a.decide(OBS, 10.0) for a in agents))
        finally:
            await client.aclose()
            await runner.cleanup()
        return out, agents[0].calls.limiter.peak

    results, peak = asyncio.run(main())
    assert peak == 1 and not results[0].fallback
    late = [r for r in results[1:] if r.fallback]
    assert late and all(r.error.startswith("timeout: no completion within 500 ms") for r in late)


def test_the_server_takes_llm_cache_and_token_budget_at_create(tmp_path):
    from fastapi.testclient import TestClient
    from server_helpers import keys_of, payload

    from bdpd_jax.host.server import create_app

    with TestClient(create_app(tmp_path / "arenas")) as client:
        r = client.post("/api/arenas", json={**payload(), "tokenBudget": 5000, "llmCache": False})
        assert r.status_code == 200, r.text
        owner, _, _ = keys_of(r.json())
        meta = client.get(f"/api/arenas/{r.json()['arenaId']}/owner", headers=owner).json()["meta"]
        assert meta["tokenBudget"] == 5000 and meta["llmCache"] is False
        bad = client.post("/api/arenas", json={**payload(), "tokenBudget": 0})
        assert bad.status_code == 422 and "tokenBudget" in bad.json()["detail"]


def test_retry_after_reads_seconds_and_dates_and_backoff_is_bounded():
    from bdpd_jax.host.agents.llm_limits import MAX_RETRY_AFTER_S, backoff_s, retry_after_s, retryable

    assert retry_after_s("3") == 3.0 and retry_after_s(" 0.5 ") == 0.5 and retry_after_s("-4") == 0.0
    assert retry_after_s(None) is None and retry_after_s("soon") is None and retry_after_s("nan") is None
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date gone by: at once
    assert backoff_s(0, "1e9") == MAX_RETRY_AFTER_S and backoff_s(5, "2") == 2.0
    waits = [backoff_s(k, None) for k in range(4)]
    assert all(0.125 * 2**k <= w < 0.25 * 2**k for k, w in enumerate(waits))
    assert [retryable(s) for s in (429, 500, 503, 599, 400, 404, 200)] == [True] * 4 + [False] * 3
