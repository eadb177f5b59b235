"""Issue 35: the operator's file is read with a size bound, and a typo in it is one clear line
naming the file, the key, the valid keys and the closest one (not pydantic's raw text)."""

from __future__ import annotations

import json

import pytest

from bdpd_jax.host.live.operator import Operator


def _write(tmp_path, data) -> str:
    p = tmp_path / "operator.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(p)


def test_a_typo_lists_the_valid_keys_and_the_closest(tmp_path) -> None:
    path = _write(tmp_path, {"llmBaseUrl": ["http://127.0.0.1:8000/v1"]})
    with pytest.raises(ValueError) as e:
        Operator.load(path)
    text = str(e.value)
    assert path in text and "llmBaseUrl: unknown key; did you mean 'llmBaseUrls'?" in text
    assert "valid keys: credentials, httpUrls, llmBaseUrls, llmCacheDir, llmEndpoints" in text
    assert "pydantic" not in text and "\n" not in text
    nested = _write(tmp_path, {"credentials": {"o": {"baseUrl": "https://api.example/v1", "apiKeyEnvv": "K"}}})
    with pytest.raises(ValueError, match=r"credentials\.o\.apiKeyEnvv: unknown key; did you mean 'apiKeyEnv'\?"):
        Operator.load(nested)


def test_the_file_is_read_with_a_size_bound(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("bdpd_jax.host.live.operator.MAX_CONFIG_BYTES", 64)
    path = _write(tmp_path, {"llmBaseUrls": ["http://127.0.0.1:8000/v1"] * 4})
    with pytest.raises(ValueError, match="larger than the limit of 64 bytes"):
        Operator.load(path)
    monkeypatch.undo()
    assert Operator.load(path).llm_base_urls == ["http://127.0.0.1:8000/v1"] * 4


@pytest.mark.parametrize(
    "text,why", [("{", "not valid JSON"), ("[]", "must hold a JSON object"), ('{"httpUrls": 3}', "httpUrls")]
)
def test_a_damaged_file_is_one_line_naming_it(tmp_path, text: str, why: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=why) as e:
        Operator.load(path)
    assert str(e.value).startswith(f"operator: {path!r}") and "\n" not in str(e.value)
