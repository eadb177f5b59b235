"""Secrets stay the operator's: players pick a credential name at most, never a key, an
environment variable or (unless allowed) an LLM endpoint; URLs on disk are redacted."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from payloads import SEED_LOGISTIC

from bdpd_jax.host.live.arena import Arena
from bdpd_jax.host.live.operator import Operator, redact_url, url_allowed


def _cfg(**model):
    cfg = copy.deepcopy(SEED_LOGISTIC)
    cfg["model"].update(model)
    cfg["players"] = []
    return cfg


def test_redact_url_hides_userinfo_and_token_params() -> None:
    url = "https://bob:hunter2@example.org:8443/play?token=abc123&round=3&X-Api-Key=k9&my_secret=s#frag"
    out = redact_url(url)
    for secret in ("bob", "hunter2", "abc123", "k9", "=s", "frag"):
        assert secret not in out, (secret, out)
    assert out.startswith("https://REDACTED@example.org:8443/play?") and "round=3" in out
    assert redact_url("http://127.0.0.1:9000/decide") == "http://127.0.0.1:9000/decide"


def test_url_allowed_matches_origin_and_path_not_prefix_text() -> None:
    allow = ["http://127.0.0.1:8000/v1"]
    assert url_allowed("http://127.0.0.1:8000/v1", allow)
    assert url_allowed("http://127.0.0.1:8000/v1/", allow)
    assert not url_allowed("http://127.0.0.1:8000/v10", allow)
    assert not url_allowed("http://127.0.0.1:8000.evil.org/v1", allow)
    assert not url_allowed("http://127.0.0.1:8001/v1", allow)
    assert not url_allowed("https://127.0.0.1:8000/v1", allow)
    assert not url_allowed("http://u:p@127.0.0.1:8000/v1", allow)


@pytest.mark.parametrize(
    "spec,field",
    [
        ({"baseUrl": "http://127.0.0.1:1/v1", "model": "m", "apiKeyEnv": "HOME"}, "apiKeyEnv"),
        ({"baseUrl": "http://127.0.0.1:1/v1", "model": "m"}, "baseUrl"),  # not allowed
        ({"model": "m"}, "credential"),  # neither
        ({"credential": "nope", "model": "m"}, "credential"),  # unknown name
        ({"credential": "stub", "model": "m", "baseUrl": "http://127.0.0.1:2/v1"}, "baseUrl"),  # key elsewhere
        ({"credential": "stub", "model": "gpt-5"}, "model"),  # model not offered
    ],
)
def test_llm_join_refuses_player_chosen_secrets_and_endpoints(spec, field) -> None:
    op = {"credentials": {"stub": {"baseUrl": "http://127.0.0.1:9/v1", "apiKeyEnv": "K", "models": ["m"]}}}
    a = Arena(_cfg(minPlayers=1), seed=0, operator=op)
    with pytest.raises(ValueError, match=field):
        a.join({"agentType": "llm", "name": "x", **spec})
    assert a.players == []


def test_http_url_allow_list_and_operator_validation() -> None:
    a = Arena(_cfg(minPlayers=1), seed=0, operator={"httpUrls": ["http://127.0.0.1:7000/bots"]})
    a.join({"agentType": "http", "name": "ok", "url": "http://127.0.0.1:7000/bots/1"})
    with pytest.raises(ValueError, match="url"):
        a.join({"agentType": "http", "name": "no", "url": "http://169.254.169.254/latest"})
    with pytest.raises(ValueError, match="credential"):
        a.join({"agentType": "http", "name": "c", "url": "http://127.0.0.1:7000/bots/2", "credential": "x"})
    with pytest.raises(ValueError, match="apiKey"):
        Operator.model_validate({"credentials": {"c": {"baseUrl": "http://h/v1", "apiKeyEnv": "A", "apiKey": "b"}}})
    with pytest.raises(ValueError, match="baseUrl"):
        Operator.model_validate({"credentials": {"c": {"baseUrl": "file:///etc/passwd"}}})


def test_key_goes_only_to_the_credentials_endpoint(live_server, stub_state, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("BDPD_TEST_OP_KEY", "sk-operator")
    monkeypatch.setenv("BDPD_TEST_OTHER", "sk-never")
    base = f"{live_server.base}/v1"
    op = Operator.model_validate(
        {
            "credentials": {
                "stub": {"baseUrl": base, "apiKeyEnv": "BDPD_TEST_OP_KEY"},
                "lit": {"baseUrl": base, "apiKey": "sk-literal"},
            },
            "llmBaseUrls": [live_server.base],
        }
    )
    a = Arena(_cfg(minPlayers=3, maxPlayers=3, maxTurns=1), seed=0, operator=op, out_dir=tmp_path)
    a.join({"agentType": "llm", "name": "named", "credential": "stub", "model": "default"})
    a.join({"agentType": "llm", "name": "lit", "credential": "lit", "model": "default"})
    a.join({"agentType": "llm", "name": "own", "baseUrl": base, "model": "default"})  # allowed, keyless
    a.start()  # the agents as the arena makes them; asked directly (no kernel compile needed)

    async def ask() -> list:
        try:
            return [await ag.decide({"turn": 1}, 0.0) for ag in a.agents]
        finally:
            for ag in a.agents:
                await ag.aclose()

    assert [r.harvest for r in asyncio.run(ask())] == [0.5, 0.5, 0.5]
    auth = [h for path, h in stub_state["auth"] if path == "/v1/chat/completions"]
    assert auth == ["Bearer sk-operator", "Bearer sk-literal", None]
    meta = (tmp_path / "meta.json").read_text()
    assert "sk-" not in meta and "BDPD_TEST_OP_KEY" not in meta
    assert [p.get("credential") for p in json.loads(meta)["players"]] == ["stub", "lit", None]


def test_meta_json_stores_redacted_http_urls(tmp_path) -> None:
    a = Arena(_cfg(minPlayers=1, maxPlayers=1, maxTurns=1), seed=0, out_dir=tmp_path)
    a.join(
        {"agentType": "http", "name": "h", "url": "http://me:pw@127.0.0.1:9/d?access_token=tok42&x=1", "timeoutMs": 50}
    )
    a.start()
    meta = (tmp_path / "meta.json").read_text()
    assert "tok42" not in meta and "me:pw" not in meta and "x=1" in meta
    a.close()
