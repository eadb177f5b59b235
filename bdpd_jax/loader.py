"""``bdpd_jax.load(path)``: one loader for every result folder.

- a ``bdpd run`` / ``Results.to_parquet`` folder (``summary.parquet``) -> :class:`Results`;
- a sweep folder (``points.parquet`` and ``arenas/``) -> :class:`SweepResults`;
- a search folder (``history.parquet`` and ``meta.json``) -> :class:`SearchResults`;
- a live arena's folder (``meta.json`` and ``turns.jsonl``) -> :class:`Results` with the
  frames a batch run of that arena gives: ``turns``, ``players``, ``summary``,
  ``violations``, ``sanctions``, ``perturbations`` and ``discussion``;
- a live arena's zip (the dashboard's ``archive.zip``: the folder's files) -> as its folder.

A live folder's frames are read from the records the arena wrote (their keys are the
schema's wire aliases: bdpd_jax/results/schema.py); a player or a pact named by id on the
wire is its index or slot in the frame, as in a batch. Where the folder has no data for a
column, the column is left out rather than recomputed here (docs/semantics/records.md).
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from .results import schema
from .results.discussion import discussion_frame

#: how a folder is recognised: kind -> the files it must hold
KINDS: dict[str, tuple[str, ...]] = {
    "live": ("meta.json", "turns.jsonl"),
    "sweep": ("points.parquet", "arenas"),
    "search": ("history.parquet", "meta.json"),
    "run": ("summary.parquet",),
}


def kind_of(path: str | Path) -> str:
    """Which kind of result folder ``path`` is (``live``, ``sweep``, ``search``, ``run``)."""
    d = Path(path)
    if not d.is_dir():
        raise ValueError(f"path: {str(d)!r} is not a folder" if d.exists() else f"path: no folder {str(d)!r}")
    for kind, files in KINDS.items():
        if all((d / f).exists() for f in files):
            return kind
    wanted = "; ".join(f"{k}: {', '.join(f)}" for k, f in KINDS.items())
    raise ValueError(f"path: {str(d)!r} holds no result this loader knows (it looks for {wanted})")


def load(path: str | Path) -> Any:
    """The results in a folder written by ``bdpd run``, ``bdpd sweep``, ``bdpd search`` or a
    live arena, as the object the library gives for that kind (see the module's docstring);
    a live arena's zip (the dashboard's archive) is read as its folder (:func:`load_zip`)."""
    if Path(path).is_file() and zipfile.is_zipfile(path):
        return load_zip(path)
    kind = kind_of(path)
    if kind == "run":
        from .results.frames import Results

        return Results.from_parquet(path)
    if kind == "sweep":
        from .sweeps.results import SweepResults

        return SweepResults.from_parquet(path)
    if kind == "search":
        from .searches.results import SearchResults

        return SearchResults.from_parquet(path)
    return load_live(path)


#: what a zip may unpack to (the server's exports stop at 256 MiB of files)
MAX_ZIP_BYTES = 2**30


def _members(z: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """file name -> member of a zip holding one arena's files, at its top or in one folder."""
    files = [i for i in z.infolist() if not i.is_dir()]
    parts = [PurePosixPath(i.filename).parts for i in files]
    if any(p.is_absolute() for p in (PurePosixPath(i.filename) for i in files)) or any(".." in p for p in parts):
        raise ValueError("path: the zip names a file outside its folder")
    if sum(i.file_size for i in files) > MAX_ZIP_BYTES:
        raise ValueError(f"path: the zip unpacks to more than {MAX_ZIP_BYTES} bytes")
    tops = {p[0] for p in parts if len(p) > 1}
    depth = 2 if len(tops) == 1 and all(len(p) == 2 for p in parts) else 1
    return {p[-1]: i for p, i in zip(parts, files, strict=True) if len(p) == depth}


def load_zip(path: str | Path) -> Any:
    """A live arena's zip (``GET /api/arenas/{id}/archive.zip``: its folder's files, at the
    zip's top or under one folder) as :func:`load_live` reads the folder."""
    with zipfile.ZipFile(path) as z, tempfile.TemporaryDirectory(prefix="bdpd_zip_") as tmp:
        members = _members(z)
        if not all(f in members for f in KINDS["live"]):
            raise ValueError(f"path: {str(path)!r} holds no live arena (it needs {', '.join(KINDS['live'])})")
        for name, info in members.items():
            (Path(tmp) / name).write_bytes(z.read(info))
        res = load_live(tmp)
    res.meta["live"] = str(path)
    return res


def _cast(df: pd.DataFrame, layer: tuple[schema.Column, ...]) -> pd.DataFrame:
    """The layer's frame columns in its order and dtypes (strings as the batch keeps them)."""
    out = {}
    for c in layer:
        if not c.frame:
            continue
        col = df[c.name] if c.name in df else pd.Series([None] * len(df), dtype=object)
        if c.dtype == "str":  # (None kept: a batch's string columns hold None where there is no value)
            out[c.name] = col.astype(object)
        elif c.dtype == "Int64":
            out[c.name] = pd.array(col, dtype="Int64")
        else:
            out[c.name] = col.astype(c.dtype) if c.dtype != "float32" else col.astype(float).astype(np.float32)
    return pd.DataFrame(out)


def _rows(records: list[dict[str, Any]], key: str, layer: tuple[schema.Column, ...], fix: Any) -> pd.DataFrame:
    """A layer's rows from each record's list under ``key`` (wire keys -> column names)."""
    wire = {v: k for k, v in schema.wire(layer).items()}
    rows = [{"turn": r["turn"], **{wire[k]: v for k, v in e.items() if k in wire}} for r in records for e in r[key]]
    if not rows:
        return schema.empty_frame(layer)
    return fix(pd.DataFrame(rows))


def load_live(path: str | Path) -> Any:
    """A live arena's folder as :class:`Results` (one arena: ``meta.json``'s ``arenaIndex``)."""
    from .host.live.registry import pact_id
    from .host.live.replay import load as read_arena
    from .results.frames import Results

    d = Path(path)
    meta, records = read_arena(d)
    arena = int(meta.get("arenaIndex", 0))
    specs = list(meta.get("players") or [])
    index = {p.get("name"): i for i, p in enumerate(specs)}
    strategy = [p.get("strategy") or p.get("agentType") for p in specs]
    slot = {pact_id(meta.get("seed", 0), arena, k): k for k in range(int(meta.get("pactSlots") or 0))}

    def who(col: pd.Series) -> pd.Series:
        return col.map(lambda v: -1 if v is None else index.get(v, -1))

    turns = _cast(
        pd.DataFrame(
            [
                {
                    "arena": arena,
                    **{k: r.get(w) for k, w in schema.wire(schema.TURNS).items()},
                    **{k: np.float32(v) for k, v in (r.get("engine") or {}).items()},
                    **{k: r["metrics"].get(w) for k, w in schema.wire(schema.METRICS).items()},
                }
                for r in records
            ]
        ),
        schema.TURNS + schema.METRICS,
    )
    extra_cols = sorted({k for r in records for k in (r.get("engine") or {})})
    for k in extra_cols:  # the engine's observables, after the turn columns, as in a batch
        turns.insert(len(schema.TURNS), k, np.asarray([(r.get("engine") or {}).get(k) for r in records], np.float32))

    def players_fix(df: pd.DataFrame) -> pd.DataFrame:
        df["player"] = who(df["player"])
        df["strategy"] = df["player"].map(lambda i: strategy[i] if 0 <= i < len(strategy) else None)
        return df

    players = _cast(_rows(records, "decisions", schema.PLAYERS, players_fix).assign(arena=arena), schema.PLAYERS)

    def pacts_fix(df: pd.DataFrame) -> pd.DataFrame:
        df["player"] = who(df["player"])
        if "pact" in df:
            df["pact"] = df["pact"].map(lambda v: -1 if v is None else slot.get(v, -1))
        if "payer" in df:
            df["payer"] = who(df["payer"])
        return df

    extra = {
        name: _cast(_rows(records, name, layer, fix).assign(arena=arena), layer)
        for name, layer, fix in (
            ("violations", schema.VIOLATIONS, pacts_fix),
            ("sanctions", schema.SANCTIONS, pacts_fix),
            ("perturbations", schema.PERTURBATIONS, lambda df: df),
        )
    }
    extra["discussion"] = discussion_frame(records, arena)
    _apply_overrides(extra["perturbations"], players, meta)
    players["strategy"] = players["strategy"].astype("str")  # (as a batch's players frame)
    summary = live_summary(d, meta, records, arena, strategy)
    return Results(summary, turns, players, {**meta, "config": meta.get("config"), "live": str(d)}, extra)


def _policy_names(meta: dict[str, Any]) -> list[str]:
    """The run's strategy table (a strategy override's value is an index into it)."""
    from .prepare import prepare

    specs = meta.get("players") or []
    if not all(isinstance(p, dict) and p.get("strategy") for p in specs):
        return []  # an external player's seat has no strategy of its own to place in the table
    players = [{k: v for k, v in p.items() if k not in ("agentType", "name")} for p in specs]
    try:
        return list(prepare({**meta["config"], "players": players}).names)
    except (KeyError, TypeError, ValueError):
        return []


def _apply_overrides(perturbations: pd.DataFrame, players: pd.DataFrame, meta: dict[str, Any]) -> None:
    """A strategy override's name in ``perturbations.strategy``, and in the players' rows
    from the turn it fired (as a batch's frames show the strategy in force)."""
    fired = perturbations[perturbations["type"] == "strategy_override"]
    if fired.empty:
        return
    names = _policy_names(meta)
    for i, row in fired.iterrows():
        k = int(row["value"])
        name = names[k] if 0 <= k < len(names) else None
        perturbations.loc[i, "strategy"] = name
        who = str(row["target"]).removeprefix("strategy[").removesuffix("]")
        rows = players["turn"] >= row["turn"]
        if who != "*":
            rows &= players["player"] == int(who)
        if name is not None:
            players.loc[rows, "strategy"] = name


def live_summary(d: Path, meta: dict, records: list[dict], arena: int, strategy: list) -> pd.DataFrame:
    """The summary row of a live arena: from ``summary.json`` when it closed, else from its
    last turn record (outcome, wealth, rank, strategy; GovSim's columns when reported)."""
    path = d / "summary.json"
    rep = json.loads(path.read_text()) if path.is_file() else {}
    last = records[-1] if records else {}
    wealth = [p.get("wealth") for p in rep["players"]] if rep else [x.get("wealth") for x in last.get("decisions", [])]
    collapsed_at = next((r["turn"] for r in records if r.get("collapsed")), None)
    row: dict[str, Any] = {
        "arena": arena,
        "survived": rep.get("survived", collapsed_at is None),
        "collapse_turn": rep.get("collapseTurn", collapsed_at),
        "turns_played": rep.get("turnsPlayed", last.get("turn", 0)),
    }
    w = np.asarray([np.nan if v is None else v for v in wealth], np.float32)
    row.update({f"wealth_{i}": w[i] for i in range(len(w))})
    row.update({f"rank_{i}": int(1 + np.sum(w > w[i])) for i in range(len(w))})
    row.update({f"strategy_{i}": strategy[i] if i < len(strategy) else None for i in range(len(w))})
    df = pd.DataFrame([row])
    df["collapse_turn"] = pd.array(df["collapse_turn"], dtype="Int64")
    for name in ("arena", "turns_played", *[f"rank_{i}" for i in range(len(w))]):
        df[name] = df[name].astype("int64" if name == "arena" else "int32")
    df["survived"] = df["survived"].astype(bool)
    for i in range(len(w)):
        df[f"strategy_{i}"] = df[f"strategy_{i}"].astype("str")
    gov = rep.get(schema.GOVSIM_LAYER) or {}
    for c in schema.GOVSIM:
        if c.name in gov:
            v = gov[c.name]
            df[c.name] = pd.Series([np.nan if v is None else v]).astype(c.dtype)
    return df


__all__ = ["KINDS", "MAX_ZIP_BYTES", "kind_of", "load", "load_live", "load_zip"]
