"""``search``: find the values of config paths that meet a goal, each generation of
candidates ONE batched sweep (population x replicates arenas) through one compiled program.

The optimiser (bdpd_jax/searches/methods.py: evosax's ES, pymoo's NSGA-II) works in the unit
cube of the space; each generation its candidates become the points of a sweep
(``bdpd_jax.sweep(points=..., common_random=...)``), padded to ``population`` rows so every
generation has the same shape, and the sweep's points frame (means and CIs over the
replicates) is what objectives and constraints read. Generation ``g`` draws its arenas from
its own seed (``(seed, g)``): with ``common_random`` every candidate of a generation meets
the same replicate streams (they differ by their rules, not their luck), and fresh streams
each generation keep the search from fitting one set of draws. See docs/semantics/sweeps.md.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..config.budget import arena_steps, check_budget
from ..config.files import Meta, load_meta, read_parquet, write_json
from ..config.game import ArenaConfig
from ..config.limits import DEFAULT_MAX_BATCH
from ..kernels.metrics import METRICS
from ..prepare.prepared import PreparedRun, prepare
from ..run.options import RunOptions
from ..sweeps import sweep as sweep_module
from ..sweeps.results import HISTORY_OUTCOMES
from .confirm import CONFIRM_REPLICATES, CONFIRM_TOP, confirm_seed
from .confirm import confirm as confirm_top_candidates
from .device import device_plan, run_device
from .methods import EvosaxMethod, make_method
from .ranking import constraints_of, minimised, objectives_of, order, ranks, violation
from .results import SearchResults
from .space import Space

STATS = ("mean", "sd", "n", "ci_low", "ci_high")
# Bounds on what one search may ask for (a spec file comes from anyone).
MAX_POPULATION = 4096
MAX_GENERATIONS = 10_000
MAX_CONFIRM = 1 << 16
# Where the generations run: "auto" (the device loop when the search allows it), "host", "device".
LOOPS = ("auto", "host", "device")


def generation_seed(seed: int, generation: int) -> int:
    """The sweep seed of generation ``g``: a uint32 from numpy's SeedSequence of (seed, g)."""
    return int(np.random.SeedSequence([int(seed), int(generation)]).generate_state(1)[0])


def _outcome_of(col: str) -> str | None:
    for s in STATS:
        if col.endswith("_" + s):
            return col[: -len(s) - 1]
    return None


def needs_history(columns: list[str], names: tuple[str, ...]) -> bool:
    """Whether the columns read need the sweep's per-turn records (``mean_<metric>``,
    ``fines_total``); ValueError naming an unknown column."""
    plain = set(sweep_module.POINT_OUTCOMES)
    kept = {f"mean_{m}" for m in METRICS} | set(HISTORY_OUTCOMES)
    need = False
    for c in columns:
        if c in names or c == "replicates":
            continue
        o = _outcome_of(c)
        if o in kept:
            need = True
        elif o not in plain:
            known = [*names, "replicates", *(f"{o}_{s}" for o in (*plain, *sorted(kept)) for s in STATS)]
            raise ValueError(f"objective/constraints: unknown column {c!r}; known: {known}")
    return need


def _check_count(v: Any, name: str, hi: int, lo: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
        raise ValueError(f"{name}: must be an integer in [{lo}, {hi}], got {v!r}")
    return int(v)


def search(
    config: ArenaConfig | dict | str,
    space: dict[str, tuple[float, float]],
    objective: tuple[str, str] | list[tuple[str, str]],
    *,
    constraints: dict[str, tuple[str, float]] | None = None,
    method: str = "cma_es",
    population: int = 64,
    generations: int = 30,
    replicates: int = 32,
    seed: int = 0,
    common_random: bool = True,
    turns: int | None = None,
    max_batch: int = DEFAULT_MAX_BATCH,
    progress: bool | None = None,
    out: str | Path | None = None,
    confirm: int = CONFIRM_REPLICATES,
    confirm_top: int = CONFIRM_TOP,
    loop: str = "auto",
) -> SearchResults:
    """Search ``space`` for the candidates that best meet ``objective`` under ``constraints``.

    space: ``{path: (low, high)}`` over the paths ``sweep`` takes (numeric fields; an int
        field's values are rounded).
    objective: ``(column, "max" | "min")`` or a list of them (then a Pareto ``method``:
        ``"nsga2"``); a column of the sweep's points frame: ``survived_mean``,
        ``efficiency_mean``, ``gini_mean``, ``fines_total_mean`` (total fines charged per arena;
        kept from the per-turn records), ``mean_<metric>_mean``, any ``_ci_low``/``_ci_high``,
        or a searched path itself (``model.regenRate``).
    constraints: ``{column: (">=" | "<=", bound)}``: feasible candidates rank first,
        infeasible ones by their total violation.
    method: an evosax algorithm (``cma_es`` default, ``sep_cma_es``, ``simple_es``, ...) or
        ``nsga2`` (pymoo).
    population, generations, replicates: candidates per generation, generations, arenas per
        candidate; each generation is one sweep of population x replicates arenas.
    common_random: replicate r of every candidate of a generation draws from the same stream.
    out: a directory: each generation's rows are written as it ends, and a re-run with the same
        arguments resumes after the last generation written (the optimiser is replayed).
    progress: a bar of generations with the best so far (default: when ``out`` is given).
    confirm: fresh replicates on which the top candidates are evaluated again before ``best``
        and ``front`` are reported (default 256; 0: report the in-sample winners). Seeds no
        generation uses; the history keeps both estimates (``confirm_<column>``).
    confirm_top: how many distinct candidates are confirmed with one objective (default 8, at
        most ``population``); with several objectives the in-sample front is (at most
        ``population`` of it).
    loop: ``"auto"`` (default): with an evosax ES, columns the kernels compute and paths
        stored in the params as their values, many generations run on the device in one
        compiled program (bdpd_jax/searches/device.py); else, and with ``"host"``, each
        generation is a sweep driven from Python. ``"device"`` insists (ValueError saying why not).

    Returns a :class:`SearchResults`. Raises ValueError naming any bad argument.
    """
    base = prepare(config)  # validated and built once: every generation's sweep starts from it
    cfg = base.config
    sp = Space.of(cfg, space)
    objs = objectives_of(objective)
    cons = constraints_of(constraints)
    population = _check_count(population, "population", MAX_POPULATION, 2)
    generations = _check_count(generations, "generations", MAX_GENERATIONS)
    if not isinstance(common_random, bool):
        raise ValueError(f"common_random: must be a bool, got {common_random!r}")
    history = needs_history([c for c, _ in objs] + [c for c, _, _ in cons], sp.names)
    options = RunOptions(  # (each generation's sweep: its seed set per generation)
        replicates=replicates,
        seed=seed,
        history=history,
        turns=turns,
        max_batch=max_batch,
        common_random=common_random,
        progress=False,
    )
    steps = {"population": population, "replicates": int(replicates), **arena_steps(cfg, turns)}
    field = "replicates" if steps["replicates"] >= population else "population"
    check_budget(field, steps[field], steps)  # one generation is one sweep of these arenas
    confirm = _check_count(confirm, "confirm", MAX_CONFIRM, 0)
    confirm_top = _check_count(confirm_top, "confirm_top", MAX_POPULATION)
    opt = make_method(method, population, sp.dim, len(objs), bool(cons), int(seed))
    store = _Store(out, cfg, space, objs, cons, method, population, replicates, seed, common_random, turns)
    done = store.load()
    rows: list[pd.DataFrame] = []
    bar = None
    if progress or (progress is None and out is not None):
        from tqdm.auto import tqdm

        bar = tqdm(total=generations, desc="search generations", unit="gen", initial=0)
    plan = _device_plan(loop, opt, base, sp, turns, history, population * int(replicates) > max_batch)
    host_until = generations if plan is None else min(len(done), generations)
    try:
        for g in range(host_until):
            x = opt.ask(g)
            if g < len(done):  # resuming: replay the stored generation (same candidates, same tell)
                gen = done[g]
                stored = gen[[f"unit_{j}" for j in range(sp.dim)]].to_numpy(float)
                if stored.shape != x.shape or not np.allclose(stored, x, rtol=1e-5, atol=1e-6):
                    raise ValueError(
                        f"out: generation {g} stored in {str(out)!r} is not what this search asks "
                        "(a different search or library version); use a fresh directory"
                    )
            else:
                gen = _evaluate(base, sp, x, g, objs, cons, population, options)
                store.write(g, gen)
            f, viol = minimised(gen, objs), gen["violation"].to_numpy(float)
            opt.tell(g, x, ranks(f[:, 0], viol + sp.outside(x)), objectives=f, violation=viol)
            rows.append(gen)
            _report(bar, rows, objs)
        if plan is not None and host_until < generations:
            seeds = [generation_seed(seed, g) for g in range(generations)]
            for g, x, v, pts in run_device(
                opt,
                plan,
                sp,
                objs[0],
                cons,
                population=population,
                options=options,
                seeds=seeds,
                start=host_until,
                generations=generations,
            ):
                gen = generation_rows(g, pd.DataFrame(v, columns=list(sp.names)), x, pts, objs, cons, sp)
                store.write(g, gen)
                rows.append(gen)
                _report(bar, rows, objs)
    finally:
        if bar is not None:
            bar.close()
    hist = pd.concat(rows, ignore_index=True)
    cseed = confirm_seed(seed, {generation_seed(seed, g) for g in range(generations)})
    if confirm:
        hist = confirm_top_candidates(
            base,
            sp,
            hist,
            objs,
            cons,
            top=min(confirm_top, population),
            population=population,
            options=options,
            replicates=confirm,
            seed=cseed,
        )
    res = SearchResults(
        hist,
        list(sp.names),
        objs,
        cons,
        cfg,
        {
            "method": method,
            "population": population,
            "generations": generations,
            "replicates": int(replicates),
            "seed": int(seed),
            "common_random": common_random,
            "turns": turns,
            "space": {n: [float(a), float(b)] for n, a, b in zip(sp.names, sp.low, sp.high, strict=True)},
            "arena_evaluations": population * (int(replicates) * generations + confirm),
            "confirm": confirm,
            "confirm_top": confirm_top,
            "confirm_seed": cseed,
            "loop": "host" if plan is None else "device",
        },
    )
    if out is not None:
        res.to_parquet(out)
    return res


def _evaluate(
    base: PreparedRun, sp: Space, x: np.ndarray, g: int, objs, cons, population: int, options: RunOptions
) -> pd.DataFrame:
    """One generation: its candidates (padded to ``population`` rows) as one sweep; one row per
    candidate with its values, unit coordinates, point columns, violation, feasibility, rank."""
    n = len(x)
    table = sp.values(x)
    padded = table.iloc[np.minimum(np.arange(population), n - 1)].reset_index(drop=True)
    res = sweep_module.run_points(base, padded, options.replace(seed=generation_seed(options.seed, g)))
    pts = res.points.sort_values("point").iloc[:n].reset_index(drop=True)
    return generation_rows(g, table, x, pts, objs, cons, sp)


def generation_rows(
    g: int, table: pd.DataFrame, x: np.ndarray, pts: pd.DataFrame, objs, cons, sp: Space
) -> pd.DataFrame:
    """A generation's history rows: ``generation``, ``candidate``, the values, the unit
    coordinates, the points frame's columns (its first ``len(x)`` points), violation,
    feasibility, rank (either loop)."""
    n = len(x)
    pts = pts.iloc[:n].reset_index(drop=True)
    gen = pd.concat(
        [
            pd.DataFrame({"generation": np.full(n, g, np.int64), "candidate": np.arange(n, dtype=np.int64)}),
            table.reset_index(drop=True),
            pd.DataFrame({f"unit_{j}": x[:, j] for j in range(sp.dim)}),
            pts.drop(columns=["point", *[c for c in sp.names if c in pts]]),
        ],
        axis=1,
    )
    viol = violation(gen, cons)
    gen["violation"] = viol
    gen["feasible"] = viol <= 0
    gen["rank"] = ranks(minimised(gen, objs)[:, 0], viol)
    return gen


def _report(bar: Any, rows: list[pd.DataFrame], objs) -> None:
    if bar is not None:
        bar.update(1)
        bar.set_postfix_str(_best_text(pd.concat(rows, ignore_index=True), objs))


def _device_plan(loop: Any, opt: Any, base: PreparedRun, sp: Space, turns: int | None, history: bool, wide: bool):
    """The device loop's plan when ``loop`` allows it and the search can run there, else None;
    ``loop="device"`` on a search that cannot is a ValueError saying why."""
    if loop not in LOOPS:
        raise ValueError(f"loop: one of {list(LOOPS)}, got {loop!r}")
    if loop == "host":
        return None
    why = (
        "its method is not an evosax ES"
        if not isinstance(opt, EvosaxMethod)
        else "a column read needs the per-turn records"
        if history
        else "population x replicates exceeds max_batch (a generation runs as one batch there)"
        if wide
        else device_plan(base, sp, turns)
    )
    if isinstance(why, str):
        if loop == "device":
            raise ValueError(f"loop: the device loop cannot run this search: {why}")
        return None
    return why


def _best_text(h: pd.DataFrame, objs) -> str:
    i = int(order(minimised(h, objs[:1])[:, 0], h["violation"].to_numpy(float))[0])
    c = objs[0][0]
    return f"best {c}={h[c].iloc[i]:.4g}{'' if h['feasible'].iloc[i] else ' (infeasible)'}"


class _Manifest(Meta):
    """A search directory's ``manifest.json``: the digest of the search's arguments."""

    digest: str


class _Store:
    """A search's directory: ``manifest.json`` (a digest of the arguments) and one
    ``generations/gen-<g>.parquet`` per generation done (written to a temporary name, then
    renamed: a part that exists is complete)."""

    def __init__(
        self, out, cfg: ArenaConfig, space, objs, cons, method, population, replicates, seed, common_random, turns
    ):
        self.dir = None if out is None else Path(out)
        if self.dir is None:
            return
        if self.dir.exists() and not self.dir.is_dir():
            raise ValueError(f"out: {str(self.dir)!r} exists and is not a directory")
        body = {
            "config": cfg.model_dump(mode="json", exclude={"players"}),
            "players": [p.strategy_name for p in cfg.require_players()],
            "players_full": [p.model_dump(mode="json", exclude={"strategy"}) for p in cfg.require_players()],
            "space": {k: list(v) for k, v in space.items()},
            "objectives": objs,
            "constraints": cons,
            "method": method,
            "population": population,
            "replicates": replicates,
            "seed": seed,
            "common_random": common_random,
            "turns": turns,
        }
        self.digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()

    def load(self) -> list[pd.DataFrame]:
        """The generations already written (in order, stopping at the first gap); ValueError
        when the directory holds a different search."""
        if self.dir is None:
            return []
        man = self.dir / "manifest.json"
        if man.is_file():
            if load_meta(man, _Manifest).digest != self.digest:
                raise ValueError(f"out: {str(self.dir)!r} holds a different search; use a fresh directory")
        else:
            (self.dir / "generations").mkdir(parents=True, exist_ok=True)
            write_json(man, {"digest": self.digest}, indent=None)
        done: list[pd.DataFrame] = []
        while (p := self._part(len(done))).is_file():
            done.append(read_parquet(p))
        return done

    def _part(self, g: int) -> Path:
        assert self.dir is not None
        return self.dir / "generations" / f"gen-{g:05d}.parquet"

    def write(self, g: int, frame: pd.DataFrame) -> None:
        if self.dir is None:
            return
        p = self._part(g)
        tmp = p.with_suffix(".tmp")
        frame.to_parquet(tmp, index=False)
        tmp.replace(p)
