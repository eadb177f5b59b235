"""Crash-safe persistence: atomic JSON, fsynced JSONL, tolerant reads of a torn tail."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bdpd_jax.host.live.persist import JsonlWriter, atomic_write_json, read_jsonl


def test_atomic_write_json_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "meta.json"
    atomic_write_json(target, {"a": 1})
    atomic_write_json(target, {"a": 2, "b": [1, 2]})
    assert json.loads(target.read_text()) == {"a": 2, "b": [1, 2]}
    assert os.listdir(target.parent) == ["meta.json"]


def test_atomic_write_failure_keeps_old_file(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    atomic_write_json(target, {"ok": True})
    with pytest.raises(ValueError):
        atomic_write_json(target, {"bad": float("nan")})
    assert json.loads(target.read_text()) == {"ok": True}
    assert os.listdir(tmp_path) == ["summary.json"]


def test_jsonl_roundtrip(tmp_path: Path) -> None:
    path = tmp_path / "turns.jsonl"
    with JsonlWriter(path) as w:
        for t in range(5):
            w.write({"turn": t, "msgs": ["x"] * t})
    assert [r["turn"] for r in read_jsonl(path)] == list(range(5))
    assert read_jsonl(tmp_path / "absent.jsonl") == []


def test_torn_last_line_is_skipped_and_repaired(tmp_path: Path) -> None:
    path = tmp_path / "turns.jsonl"
    with JsonlWriter(path) as w:
        w.write({"turn": 0})
        w.write({"turn": 1})
    with open(path, "ab") as fh:  # simulate a kill mid-write
        fh.write(b'{"turn": 2, "decis')
    assert [r["turn"] for r in read_jsonl(path)] == [0, 1]
    with JsonlWriter(path) as w:  # reopening drops the torn tail, appends cleanly
        w.write({"turn": 2})
    assert [r["turn"] for r in read_jsonl(path)] == [0, 1, 2]


def test_complete_record_missing_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "turns.jsonl"
    path.write_bytes(b'{"turn": 0}\n{"turn": 1}')
    assert [r["turn"] for r in read_jsonl(path)] == [0, 1]
    with JsonlWriter(path) as w:
        w.write({"turn": 2})
    assert [r["turn"] for r in read_jsonl(path)] == [0, 1, 2]


def test_corruption_in_the_middle_raises(tmp_path: Path) -> None:
    path = tmp_path / "turns.jsonl"
    path.write_bytes(b'{"turn": 0}\n{garbage\n{"turn": 2}\n')
    with pytest.raises(ValueError, match="line 2"):
        read_jsonl(path)


def test_writer_rejects_nan_and_closed(tmp_path: Path) -> None:
    w = JsonlWriter(tmp_path / "t.jsonl")
    with pytest.raises(ValueError):
        w.write({"x": float("inf")})
    w.close()
    with pytest.raises(ValueError, match="path"):
        w.write({"x": 1})
