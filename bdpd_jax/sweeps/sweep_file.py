"""Sweep specs (TOML) and resumable sweeps written chunk by chunk to a directory.

A spec file (``bdpd sweep SPEC.toml --out DIR``)::

    seed = 0
    replicates = 100
    history = false            # optional: mean governance metrics per arena
    turns = 30                 # optional: override every point's maxTurns
    max_batch = 131072         # optional: the most arenas per chunk (this is the default)
    memory_budget = "2GB"      # optional: size chunks from a memory budget (bytes or "512MB")
    common_random = false      # optional
    generator = "hash"         # optional
    config = "arena.json"      # a JSON config path (relative to the spec), or a [config] table

    [grid]                     # exactly one of [grid], [samples] (with n_samples), [points]
    "model.regenRate" = [0.05, 0.1, 0.2]
    "players[1].intensity" = [0.3, 0.9]

``[samples]`` maps paths to ``[low, high]`` (with top-level ``n_samples``); ``[points]`` maps
paths to equal-length value lists, or ``points = "table.csv"`` / ``.parquet`` names a file.

The output directory (docs/semantics.md §12): ``manifest.json`` (the spec's hash and the
chunk layout), ``arenas/chunk=K/part-0.parquet`` (one part per chunk, written to a temporary
name and renamed, so a part that exists is complete), then ``points.parquet`` and
``meta.json`` once every chunk is there; ``SweepResults.from_parquet(DIR)`` reads it. A
re-run with the same spec skips the chunks already written.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import Field

from ..config.files import MAX_CONFIG_BYTES, Meta, load_meta, read_parquet, read_text, write_json
from ..config.game import ArenaConfig
from ..config.limits import DEFAULT_MAX_BATCH
from ..prepare.prepared import prepare
from ..run.options import RunOptions
from .distributed import run_chunks
from .sweep import SweepPlan, aggregate, explicit_points, grid_points, point_steps, sample_points

# The example spec ``bdpd sweep --help`` and the README show.
EXAMPLE = (Path(__file__).resolve().parent.parent / "data" / "sweep_example.toml").read_text()  # (also in --help)

SPEC_KEYS = {
    "config",
    "grid",
    "samples",
    "n_samples",
    "points",
    "replicates",
    "seed",
    "history",
    "turns",
    "max_batch",
    "memory_budget",
    "common_random",
    "generator",
}
MANIFEST = "manifest.json"
FORMAT = 1


def parse_bytes(v: Any, where: str = "memory_budget") -> int | None:
    """``123``, ``"512MB"``, ``"2 GiB"``, ``"1.5e9"`` -> bytes."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise ValueError(f"{where}: a number of bytes or a size like '2GB', got {v!r}")
    if isinstance(v, (int, float)):
        x: float = v
    else:
        m = re.fullmatch(r"\s*([0-9.eE+]+)\s*([kmgt]?)(i?)b?\s*", str(v).lower()[:64])
        if m is None:
            raise ValueError(f"{where}: a number of bytes or a size like '2GB', got {v!r:.80}")
        base = 1024 if m.group(3) else 1000
        try:
            x = float(m.group(1)) * base ** " kmgt".index(m.group(2) or " ")
        except ValueError:
            raise ValueError(f"{where}: a number of bytes or a size like '2GB', got {v!r:.80}") from None
    if not (isinstance(x, int) or math.isfinite(x)):  # (an int past float's range is fine: int() of it)
        raise ValueError(f"{where}: must be a finite number of bytes, got {v!r:.80}")
    b = int(x)
    if b < 1:
        raise ValueError(f"{where}: must be >= 1 byte, got {v!r}")
    return b


@dataclass
class SweepFile:
    """A parsed spec: the config, the points table and the run options."""

    config: ArenaConfig
    table: pd.DataFrame
    options: RunOptions  # the run's options (no devices, chunk width or progress: a run's own)
    source: dict = field(default_factory=dict)

    def digest(self) -> str:
        """A hash of everything that decides the arenas' rows (not the chunk layout, which
        the manifest records and a re-run reuses)."""
        body = {
            "format": FORMAT,
            "config": self.config.model_dump(mode="json", exclude={"players"}),
            "players": [
                {**p.model_dump(mode="json", exclude={"strategy"}), "strategy": p.strategy_name}
                for p in self.config.require_players()
            ],
            "names": [str(c) for c in self.table.columns],
            "points": [[repr(x) for x in row] for row in self.table.itertuples(index=False, name=None)],
            "options": {
                k: getattr(self.options, k)
                for k in ("replicates", "seed", "history", "turns", "generator", "round_ints", "common_random")
            },
        }
        return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def _load_config(v: Any, root: Path) -> ArenaConfig:
    if isinstance(v, str):
        p = Path(v)
        p = p if p.is_absolute() else root / p
        if not p.is_file():
            raise ValueError(f"config: no file {str(p)!r}")
        return ArenaConfig.load(str(p))
    if isinstance(v, dict):
        return ArenaConfig.load(v)
    raise ValueError(f"config: a path to a JSON config or a [config] table, got {v!r}")


def _read_csv(p: Path) -> pd.DataFrame:
    """A points CSV; a damaged one is a ValueError naming it."""
    try:
        return pd.read_csv(p)
    except (OSError, ValueError) as e:  # (pandas' ParserError is a ValueError)
        raise ValueError(f"points: {str(p)!r} is not a readable CSV table ({str(e)[:200]})") from None


def _points_from(v: Any, root: Path) -> pd.DataFrame:
    if isinstance(v, str):
        p = Path(v)
        p = p if p.is_absolute() else root / p
        if not p.is_file():
            raise ValueError(f"points: no file {str(p)!r}")
        df = read_parquet(p) if p.suffix == ".parquet" else _read_csv(p)
        return explicit_points(df, None)
    if isinstance(v, dict) and v:
        lens = {k: len(x) if isinstance(x, list) else -1 for k, x in v.items()}
        if len(set(lens.values())) != 1 or -1 in lens.values():
            raise ValueError(f"points: every path needs a list of values of one common length, got lengths {lens}")
        return explicit_points(pd.DataFrame(v), None)
    raise ValueError(f"points: a table of path -> values or a CSV/parquet path, got {v!r}")


def read_spec(
    spec: str | Path | dict,
    root: str | Path | None,
    keys: frozenset[str] | set[str],
    max_bytes: int = MAX_CONFIG_BYTES,
) -> tuple[dict[str, Any], Path]:
    """(the spec's table, the folder its relative paths start from) of a TOML path or its
    dict, shared by sweep and search specs; ValueError on a missing, too large or invalid
    file, or on a key not in ``keys``."""
    if isinstance(spec, (str, Path)):
        p = Path(spec)
        if not p.is_file():
            raise ValueError(f"spec: no file {str(p)!r}")
        text = read_text(p, max_bytes, "spec")  # bounded: never read whole past the limit
        try:
            d = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"spec {str(p)!r}: invalid TOML: {e}") from None
        base = p.resolve().parent if root is None else Path(root)
    elif isinstance(spec, dict):
        d, base = spec, Path(root or ".")
    else:
        raise ValueError(f"spec: a TOML path or a dict, got {spec!r}")
    unknown = set(d) - set(keys)
    if unknown:
        raise ValueError(f"spec: unknown key(s) {sorted(unknown)}; known: {sorted(keys)}")
    return d, base


def load_sweep_file(spec: str | Path | dict, root: str | Path | None = None) -> SweepFile:
    """Parse a spec (a TOML path, TOML text's dict) into a :class:`SweepFile`; ValueError
    naming the key on anything wrong."""
    d, root = read_spec(spec, root, SPEC_KEYS)
    if "config" not in d:
        raise ValueError("spec: 'config' is required (a JSON config path or a [config] table)")
    cfg = _load_config(d["config"], root)
    given = [k for k in ("grid", "samples", "points") if k in d]
    if len(given) != 1:
        raise ValueError(f"spec: give exactly one of [grid], [samples] (with n_samples) or [points], got {given}")
    for k, t in (("history", bool), ("common_random", bool), ("generator", str)):
        if k in d and not isinstance(d[k], t):
            raise ValueError(f"{k}: expected {t.__name__}, got {d[k]!r}")
    seed = d.get("seed", 0)
    options = RunOptions(  # checked before the samples are drawn with the seed and the budget reads the rest
        replicates=d.get("replicates", 1),
        seed=seed,
        history=d.get("history", False),
        turns=d.get("turns"),
        max_batch=d.get("max_batch", DEFAULT_MAX_BATCH),
        memory_budget=parse_bytes(d.get("memory_budget")),
        generator=d.get("generator", "hash"),
        round_ints="samples" in d,
        common_random=d.get("common_random", False),
    )
    per_point = point_steps(cfg, options)
    if "grid" in d:
        table = grid_points(d["grid"], per_point)
    elif "samples" in d:
        table = sample_points(
            {k: tuple(v) if isinstance(v, list) else v for k, v in d["samples"].items()},
            d.get("n_samples"),
            seed,
            per_point,
        )
    else:
        table = _points_from(d["points"], root)
    return SweepFile(config=cfg, table=table, options=options, source=d)


def _part(out: Path, k: int) -> Path:
    return out / "arenas" / f"chunk={k}" / "part-0.parquet"


def write_part(out: Path, k: int, frame: pd.DataFrame) -> Path:
    """Chunk k's rows, atomically: written to a temporary file, then renamed."""
    p = _part(out, k)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".part-0.{os.getpid()}.tmp")
    frame.to_parquet(tmp, index=False)
    os.replace(tmp, p)
    return p


def aggregate_parts(out: Path, n_chunks: int, names, outcomes) -> pd.DataFrame:
    """``aggregate`` over the parts, one part at a time: arenas are point-major, so every
    point but the last of a part is complete there; the rows of a point that continues in
    the next part are carried over. Memory: one part plus one point's replicates. Equal to
    ``aggregate`` of all rows (each point's statistics only see that point's rows)."""
    done, carry = [], None
    for k in range(n_chunks):
        part = read_parquet(_part(out, k))
        df = part if carry is None else pd.concat([carry, part], ignore_index=True)
        if k < n_chunks - 1:
            last = df["point"].iloc[-1]
            carry = df[df["point"] == last]
            df = df[df["point"] != last]
        if len(df):
            done.append(aggregate(df, names, outcomes))
    return pd.concat(done, ignore_index=True)


@dataclass
class SweepFileRun:
    """What ``run_sweep_file`` did: the chunks it computed and the ones it found already written."""

    out: Path
    n_chunks: int
    computed: list[int]
    skipped: list[int]
    digest: str
    meta: dict = field(default_factory=dict)  # what meta.json holds (the engine's metric_family too)


def _resumed_width(out: Path, digest: str, overwrite: bool) -> int | None:
    """The chunk width of the same sweep already in ``out`` (None when none). A different
    sweep there raises ValueError, or is removed when ``overwrite``."""
    man_path = out / MANIFEST
    if not man_path.is_file():
        return None
    old = load_meta(man_path, SweepManifest)
    if old.digest == digest:
        return old.chunk_arenas  # the layout of the run being resumed
    if not overwrite:
        raise ValueError(
            f"out: {str(out)!r} holds a different sweep (spec hash {old.digest[:12]}, this spec "
            f"{digest[:12]}); choose another directory or pass --overwrite"
        )
    shutil.rmtree(out / "arenas", ignore_errors=True)
    for f in ("points.parquet", "meta.json", MANIFEST):
        (out / f).unlink(missing_ok=True)
    return None


class SweepManifest(Meta):
    """A sweep directory's ``manifest.json`` (what a resumed run reads of it)."""

    digest: str
    chunk_arenas: int = Field(ge=1)


def _write_manifest(out: Path, digest: str, plan) -> None:
    """``out/manifest.json`` (the spec's hash and the chunk layout), written atomically."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "format": FORMAT,
        "digest": digest,
        "n_chunks": plan.n_chunks,
        "chunk_arenas": plan.chunk_width,
        "n_arenas": plan.total,
        "chunks": [list(c) for c in plan.chunks],
    }
    write_json(out / MANIFEST, manifest)


def run_sweep_file(
    spec: SweepFile | str | Path | dict,
    out: str | Path,
    *,
    progress: bool | None = None,
    devices: Any = None,
    client: Any = None,
    overwrite: bool = False,
    on_chunk: Callable[[int], None] | None = None,
    info: list | None = None,
) -> SweepFileRun:
    """Run a spec into ``out`` chunk by chunk, skipping chunks already written by an earlier
    run of the same spec. ``client``: a ``dask.distributed.Client`` (or its scheduler's
    address) to run the chunks on its workers (bdpd_jax/sweeps/distributed.py); default: here.
    A directory holding a different sweep raises ValueError unless ``overwrite``."""
    sp = spec if isinstance(spec, SweepFile) else load_sweep_file(spec)
    out = Path(out)
    digest = sp.digest()
    width = _resumed_width(out, digest, overwrite)
    options = sp.options.replace(devices=devices, chunk_width=width)
    plan = SweepPlan(prepare(sp.config, generator=options.generator), sp.table, options)
    _write_manifest(out, digest, plan)
    done = [k for k in range(plan.n_chunks) if _part(out, k).is_file()]
    todo = [k for k in range(plan.n_chunks) if k not in set(done)]
    bar = None
    if progress or (progress is None and len(todo) > 1):
        from tqdm.auto import tqdm  # only when a bar is shown: tqdm.auto probes for notebook widgets

        bar = tqdm(total=plan.n_chunks, initial=len(done), desc="sweep chunks", unit="chunk")
    if client is None:
        frames: Iterator[tuple[int, pd.DataFrame]] = ((k, plan.run_chunk(k)) for k in todo)  # (run as written)
    else:
        frames = run_chunks(client, sp.config, sp.table, plan.worker_options(), todo, info=info)
    try:
        for k, frame in frames:
            write_part(out, k, frame)
            if on_chunk is not None:
                on_chunk(k)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    points = aggregate_parts(out, plan.n_chunks, plan.names, plan.outcomes())
    meta = {**plan.meta(), "digest": digest}
    points.to_parquet(out / "points.parquet", index=False)
    meta["names"] = plan.names
    write_json(out / "meta.json", meta)
    return SweepFileRun(out, plan.n_chunks, todo, done, digest, meta)
