"""Issue 35: an arena folder's meta.json is data, not authority. Read bounded and validated by
a model (a wrong field names the file and the field), and its ``config`` is a JSON object:
a string there is refused, never opened as a path (replay and the server's folder reads)."""

from __future__ import annotations

import json

import pytest

from bdpd_jax.host.live.replay import load_lines, replay
from bdpd_jax.host.server.store import Hub

META = {
    "arenaId": "a1",
    "status": "closed",
    "seed": 1,
    "arenaIndex": 0,
    "noTalk": False,
    "pactSlots": 16,
    "generator": "hash",
    "turns": None,
    "config": {"model": {"name": "m"}},
    "players": [{"name": "p", "agentType": "builtin", "strategy": "conservative"}],
}


def _folder(tmp_path, **changes):
    d = tmp_path / "a1"
    d.mkdir(exist_ok=True)
    (d / "meta.json").write_text(json.dumps({**META, **changes}))
    (d / "turns.jsonl").write_text("")
    return d


def test_a_config_given_as_a_string_is_refused_not_followed(tmp_path) -> None:
    bait = tmp_path / "bait.json"
    bait.write_text("BAIT-NOT-JSON")  # were it opened, its error would name it
    d = _folder(tmp_path, config=str(bait))
    with pytest.raises(ValueError) as e:
        replay(d)
    assert "meta.json" in str(e.value) and "config" in str(e.value) and "BAIT" not in str(e.value)
    assert Hub(tmp_path).on_disk("a1") is None  # a damaged folder is not served (no 500 on .get of a str)


@pytest.mark.parametrize(
    "field,value",
    [("players", "abc"), ("seed", "5"), ("arenaIndex", -1), ("players", [{"agentType": "http"}]), ("turns", 1.5)],
)
def test_a_wrong_field_names_the_file_and_the_field(tmp_path, field: str, value) -> None:
    d = _folder(tmp_path, **{field: value})
    with pytest.raises(ValueError, match=rf"meta\.json'?: {field}"):
        load_lines(d)


def test_meta_json_is_read_with_a_size_bound(tmp_path, monkeypatch) -> None:
    d = _folder(tmp_path)
    monkeypatch.setattr("bdpd_jax.config.files.MAX_META_BYTES", 64)
    monkeypatch.setattr("bdpd_jax.config.files.load_meta.__defaults__", (64,))
    with pytest.raises(ValueError, match="larger than the limit of 64 bytes"):
        load_lines(d)
    monkeypatch.undo()
    meta, lines = load_lines(d)
    assert meta["config"] == META["config"] and meta["players"][0]["strategy"] == "conservative" and lines == []
    listed = Hub(tmp_path).on_disk("a1")
    assert listed is not None and listed.meta["arenaId"] == "a1"
