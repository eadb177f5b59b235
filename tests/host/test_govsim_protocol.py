"""Issue 37: LLM players as GovSim runs them, against a scripted OpenAI-compatible endpoint
(no network): free-text answers, the month's call sequence under the govsim architecture
(harvest, meeting, summary, month end), an early end, a meeting in the last month, the
month's threshold in the universalization sentence, and what the model was told persisted
and replayed."""

from __future__ import annotations

import json
import re

import pytest
from fake_llm import BASE, OPERATOR, FakeClient, completion, tool_call

from bdpd_jax.host.agents.answers import parse_amount, split_utterance
from bdpd_jax.host.agents.memory import Memory, lexical_similarity
from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.replay import load, replay, strip_volatile
from bdpd_jax.host.server.views import public_tick
from bdpd_jax.scenarios import GOVSIM_NAMES, GOVSIM_SCENARIOS, govsim, govsim_rules

SC = GOVSIM_SCENARIOS["fishery"]


# -- free-text answers ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("Answer: 12 tons.", 12.0),
        ("11", 11.0),
        ("We have 60 tons, so 5 each is safe.\nAnswer: 7 tons", 7.0),
        ("**Answer**: 3", 3.0),
        ("So, the answer is: 9 tons", 9.0),
        ("answer: 4 ... no, Answer: 6", 6.0),
        ("I take 10 or 12", None),
        ("Answer: none", None),
        ("Answer: -3", None),
        ("", None),
    ],
)
def test_text_answers_are_read_by_the_documented_rule(text, value):
    got, why = parse_amount(text)
    assert got == value and (why is None) == (value is not None)


def test_text_utterance_signals():
    assert split_utterance("Let us take 10.\nNext: Kate\n[END]") == ("Let us take 10.", "Kate", True)
    assert split_utterance("[END] is not at the end\nok") == ("[END] is not at the end\nok", None, False)


def _minimal(text: str, fmt: str, experiment: str = "default", **spec) -> tuple[Arena, FakeClient]:
    client = FakeClient(lambda url, req: completion([], content=text))
    cfg = govsim("fishery", experiment, players=["threshold_taker"] * 5)
    cfg["players"] = cfg["players"][:4]
    arena = Arena(cfg, seed=1, client=client, operator=OPERATOR, no_talk=True)
    arena.join({"agentType": "llm", "name": "Luke", "model": "m", "baseUrl": BASE, "answerFormat": fmt, **spec})
    return arena, client


def test_a_minimal_player_of_a_govsim_cell_sees_only_the_scenario():
    """No wealth, capacity, null or empty keys; the month's universalization sentence."""
    arena, client = _minimal("Answer: 20", "text", "universalization", scenario="fishery")
    arena.tick()
    arena.tick()  # 4 threshold takers take 10 each, Luke 20: 40 left, 80 after doubling
    seen = json.loads(client.requests[-1][1]["messages"][-1]["content"])["observation"]
    assert not {"myWealth", "myCapacity", "othersWealth", "pacts", "regenRate", "threshold"} & set(seen)
    assert seen["sustainabilityThreshold"] == 8 and seen["universalization"] == SC.universalization_text(8)
    with pytest.raises(ValueError, match="persona"):
        _minimal("1", "text", persona="greedy")


@pytest.mark.parametrize(("fmt", "text", "played"), [("text", "Answer: 12 tons.", 12.0), ("auto", "11", 11.0)])
def test_a_text_answer_plays_its_amount_and_is_recorded(fmt, text, played):
    arena, client = _minimal(text, fmt)
    rec = arena.tick()
    d = next(d for d in rec["decisions"] if d["playerId"] == "Luke")
    assert d["harvest"] == played and not d["fallback"] and d["error"] is None
    assert d["answer"] == {"format": "text", "raw": text, "parsed": played, "parseFailed": False}
    assert ("tools" in client.requests[0][1]) == (fmt == "auto")  # text: no tools are offered


def test_a_failed_parse_falls_back_and_is_flagged():
    arena, _ = _minimal("I would rather not say how much", "text")
    d = next(d for d in arena.tick()["decisions"] if d["playerId"] == "Luke")
    assert d["fallback"] and d["answer"]["parseFailed"] and d["answer"]["parsed"] is None
    assert "answer:" in d["error"]


# -- the govsim architecture ------------------------------------------------------------------
class Model:
    """The scripted endpoint: text answers by purpose (read off the prompt); ``end_at``: the
    utterance (1-based, in the month) that ends the meeting; no ``/embeddings``."""

    def __init__(self, end_at: int | None = None) -> None:
        self.end_at = end_at
        self.said: dict[int, int] = {}

    def __call__(self, url: str, req: dict) -> bytes | tuple[int, bytes]:
        if url.endswith("/embeddings"):
            return 404, b"{}"
        prompt = req["messages"][-1]["content"]
        if "It is your turn to speak" in prompt:
            month = int(re.search(r"end of month (\d+)", prompt).group(1))
            k = self.said[month] = self.said.get(month, 0) + 1
            names = re.search(r"\(([^)]*)\) meet", prompt).group(1).split(", ")
            end = "\n[END]" if k == self.end_at else ""
            return completion([], content=f"Ten each, say I.\nNext: {names[k % len(names)]}{end}")
        if "How many tons" in prompt:
            return completion([], content="Reasoning... Answer: 10 tons.")
        if "one sentence" in prompt:
            return completion([], content="We agreed on ten tons each.")
        if "Did the group agree" in prompt:
            return completion([], content="Answer: 10")
        if "how much does this matter" in prompt:
            return completion([], content="Answer: 6")
        if "lessons" in prompt:
            return completion([], content="- Keep to ten tons.")
        return completion([], content="?")


def _govsim(experiment: str, model: Model, months: int, rounds: int, tmp_path=None, **spec) -> tuple[Arena, FakeClient]:
    cfg = govsim("fishery", experiment, players=[])
    cfg["model"]["maxTurns"] = months
    cfg["discussion"] = {"rounds": rounds, "nextSpeaker": "named", "protocol": "govsim"}
    client = FakeClient(model)
    arena = Arena(cfg, seed=3, client=client, operator=OPERATOR, out_dir=tmp_path, no_talk=True)
    rules = govsim_rules("fishery", experiment, universalization=False)
    for name in GOVSIM_NAMES:
        arena.join(
            {
                "agentType": "llm",
                "name": name,
                "model": "m",
                "baseUrl": BASE,
                "architecture": "govsim",
                "scenario": "fishery",
                "rulesText": rules,
                "fallbackHarvest": 0.0,
                **spec,
            }
        )
    return arena, client


def _prompts(client: FakeClient) -> list[str]:
    """The last user message of every chat request, in order."""
    return [q["messages"][-1]["content"] for u, q in client.requests if u.endswith("/chat/completions")]


def _purposes(client: FakeClient, start: int = 0) -> list[str]:
    out = []
    for url, req in client.requests[start:]:
        if url.endswith("/embeddings"):
            continue
        p = req["messages"][-1]["content"]
        out.append(
            "speak"
            if "It is your turn to speak" in p
            else "harvest"
            if "How many tons" in p
            else "summary"
            if "one sentence" in p
            else "limit"
            if "Did the group agree" in p
            else "importance"
            if "how much does this matter" in p
            else "reflection"
        )
    return out


def test_the_months_call_sequence_and_count(tmp_path):
    """One month: 5 harvests, 9 utterances, the opener's summary and limit, then per player
    the importance of its catch and of the summary, a reflection and the importance of its
    one lesson: 5 + 9 + 2 + 5 * 4 = 36 completions, in that order."""
    arena, client = _govsim("default", Model(), months=2, rounds=9, tmp_path=tmp_path)
    rec = arena.tick()
    seq = _purposes(client)
    assert seq[:5] == ["harvest"] * 5 and seq[5:14] == ["speak"] * 9 and seq[14:16] == ["summary", "limit"]
    assert sorted(seq[16:]) == sorted(["importance"] * 15 + ["reflection"] * 5) and len(seq) == 36
    d = rec["discussion"]
    assert [u["speaker"] for u in d["utterances"]][:3] == ["John", "Kate", "Jack"]  # the first player opens
    assert d["report"]["catches"] == dict.fromkeys(GOVSIM_NAMES, 10.0) and d["summary"]["agreedLimit"] == 10.0
    assert sorted(d["monthEnd"]) == sorted(GOVSIM_NAMES)
    kinds = [m["kind"] for m in d["monthEnd"]["Kate"]["memories"]]
    assert kinds == ["catch", "summary"] + ["utterance"] * 9 + ["limit", "reflection"]
    # month 2: the agreed limit is recalled in every harvest prompt (always shown)
    n = len(client.requests)
    arena.tick()
    harvests = [q for u, q in client.requests[n:] if "How many tons" in q["messages"][-1]["content"]]
    assert len(harvests) == 5
    assert all("at most 10 tons a month" in q["messages"][-1]["content"] for q in harvests)
    assert all(q["messages"][0]["content"].startswith("Your name is ") for q in harvests)


def test_early_end_and_a_meeting_in_the_last_month(tmp_path):
    arena, client = _govsim("default", Model(end_at=3), months=1, rounds=9, tmp_path=tmp_path)
    arena.run()
    (rec,) = load(tmp_path)[1]
    rows = rec["discussion"]["utterances"]
    assert len(rows) == 3 and [r["end"] for r in rows] == [False, False, True]  # ended by its 3rd speaker
    assert [r["speaker"] for r in rows] == ["John", "Kate", "Jack"] and rows[0]["named"]
    assert _purposes(client).count("speak") == 3 and "summary" in rec["discussion"]


def test_the_months_threshold_is_in_the_universalization_sentence():
    """Month 1's threshold is (100 // 2) // 5 = 10; after a month in which each took 15 the
    pool is 2 * 25 = 50 and month 2 states (50 // 2) // 5 = 5."""

    class Greedy(Model):
        def __call__(self, url, req):
            if "How many tons" in req["messages"][-1]["content"]:
                return completion([], content="Answer: 15")
            return super().__call__(url, req)

    arena, client = _govsim("universalization", Greedy(), months=3, rounds=0)
    arena.tick()
    arena.tick()
    prompts = [p for p in _prompts(client) if "How many tons" in p]
    assert all(SC.universalization_text(10) in p for p in prompts[:5])
    assert all(SC.universalization_text(5) in p and SC.universalization_text(10) not in p for p in prompts[5:10])
    system = next(q for u, q in client.requests if u.endswith("/chat/completions"))["messages"][0]["content"]
    assert "Think about this" not in system  # stated each month, never once for all months


def test_what_the_model_was_told_is_persisted_and_replays(tmp_path):
    arena, client = _govsim("default", Model(end_at=2), months=2, rounds=4, tmp_path=tmp_path)
    arena.run()
    recs = load(tmp_path)[1]
    d = next(d for d in recs[0]["decisions"] if d["playerId"] == "Emma")
    (told,) = d["told"]
    assert told["purpose"] == "harvest" and "How many tons" in told["prompt"] and told["reply"].endswith("10 tons.")
    sent = [
        q
        for u, q in client.requests
        if u.endswith("/chat/completions") and [m["content"] for m in q["messages"]] == [told["system"], told["prompt"]]
    ]
    assert len(sent) == 1 and "Emma" in told["system"]  # the record holds the very messages that were sent
    assert recs[0]["discussion"]["utterances"][0]["told"]["purpose"] == "speak"
    assert [e["purpose"] for e in recs[0]["discussion"]["summary"]["told"]] == ["summary", "agreedLimit"]
    pub = public_tick(recs[0])["discussion"]  # players and the public: what was heard, nothing private
    assert "monthEnd" not in pub and "told" not in pub["summary"] and all("told" not in u for u in pub["utterances"])
    again = replay(tmp_path)  # verify: every record equal, meeting, summary and month ends included
    assert [strip_volatile(r) for r in again.records] == [strip_volatile(r) for r in recs]
    assert json.dumps(recs[1]["discussion"]["monthEnd"]["John"]["memories"])


def test_memory_retrieval_scores():
    m = Memory()
    m.add("observation", "the lake holds 100 tons", 1, always=True, keep=0)
    m.add("catch", "I caught 10 tons of fish", 1, 2.0)
    m.add("reflection", "trust Kate", 1, 9.0)
    m.add("utterance", "the weather is nice", 1, 1.0)
    got = [x.text for x in m.retrieve(["fish tons"], 1, 2)]
    assert got == ["the lake holds 100 tons", "trust Kate"]  # always shown, then importance 9 beats relevance
    assert [x.text for x in m.retrieve(["fish tons"], 2, 2)] == ["I caught 10 tons of fish", "trust Kate"]
    assert lexical_similarity("ten tons", "Ten TONS") == pytest.approx(1.0) and lexical_similarity("a", "") == 0.0


def test_embeddings_where_the_endpoint_serves_them_else_one_probe():
    arena, client = _govsim("default", Model(), months=1, rounds=2)
    arena.tick()
    assert len([u for u, _ in client.requests if u.endswith("/embeddings")]) == 5  # one failed probe each

    class Served(Model):
        def __call__(self, url, req):
            if url.endswith("/embeddings"):
                vecs = [{"embedding": [float(len(t)), t.count("ten") + 1.0]} for t in req["input"]]
                return json.dumps({"data": vecs}).encode()
            return super().__call__(url, req)

    arena, client = _govsim("default", Served(), months=2, rounds=2)
    arena.tick()
    arena.tick()
    asked = [q["input"] for u, q in client.requests if u.endswith("/embeddings")]
    assert ["the lake", "how many tons to catch"] in asked  # the harvest's focal points, embedded
    assert len(_prompts(client)) == 2 * (5 + 2 + 2 + 20)  # the same calls to the model


def test_tool_mode_harvest_and_a_speak_call_that_ends_the_meeting():
    class Tools(Model):
        def __call__(self, url, req):
            prompt = req["messages"][-1]["content"] if "messages" in req else ""
            me = req["messages"][0]["content"].split(".")[0].removeprefix("Your name is ") if prompt else ""
            if "How many tons" in prompt:
                assert [t["function"]["name"] for t in req["tools"]] == ["harvest"]
                return completion([tool_call(0, "harvest", {"amount": 7})])
            if "It is your turn to speak" in prompt:
                assert "endConversation" in req["tools"][0]["function"]["parameters"]["properties"]
                args = {"text": f"{me}: seven each.", "nextSpeaker": "Emma", "endConversation": me == "Emma"}
                return completion([tool_call(0, "speak", args)])
            return super().__call__(url, req)

    arena, client = _govsim("default", Tools(), months=1, rounds=9, answerFormat="tool")
    rec = arena.tick()
    assert all(d["harvest"] == 7.0 and "answer" not in d for d in rec["decisions"])
    rows = rec["discussion"]["utterances"]
    assert [(r["speaker"], r["named"], r["end"]) for r in rows] == [("John", True, False), ("Emma", False, True)]
