r"""GovSim with LLM players: 3 scenarios x 4 experiments x N seeds against any OpenAI-compatible
server (vLLM, llama.cpp's server, Ollama, a hosted API), GovSim's table beside the published rows.

Each cell is one live arena (``bdpd_jax.scenarios.govsim(scenario, experiment)``) of 5 LLM
players named as GovSim names them, run as GovSim runs its agents by default (``--architecture
govsim``: memory, a meeting of at most ``--rounds`` utterances after every month, its summary
and agreed limit, a reflection; free-text answers; fallback 0; docs/semantics/live/agents.md §15). In
``newcomer`` the fifth is the outsider (its persona) and first acts in month 4 (``activeFrom``,
issue 37 item 5). ``no_communication`` has no meeting. A cell's seeds play at once, in
lockstep in one ``LiveBatch``, every call to the endpoint under ``--max-in-flight`` (the
operator's ``maxInFlight``; retries on 429/5xx within each player's deadline; issue 38), and
the table counts the tokens each cell used (the answers' ``usage``).

    BDPD_LLM_BASE_URL=http://localhost:8000/v1 BDPD_LLM_MODEL=some-model BDPD_LLM_API_KEY=none \
        .venv/bin/python studies/govsim_llm.py --seeds 5 --out runs/govsim_llm

Resumable: a cell whose folder (``OUT/scenario/experiment/seed-K``) holds summary.json is read,
not run again; a cell cut off before its end is run again from its first month (a player's
memory is not in the folder). The key is read from the environment at every call and never
written anywhere.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bdpd_jax.scenarios import EXPERIMENTS, GOVSIM_LABELS, GOVSIM_PERCENT, GOVSIM_SCENARIOS

ENV_BASE_URL = "BDPD_LLM_BASE_URL"
ENV_MODEL = "BDPD_LLM_MODEL"
ENV_API_KEY = "BDPD_LLM_API_KEY"
SCENARIOS = tuple(GOVSIM_SCENARIOS)
PLAYERS = 5
#: GovSim's six metrics as the report's columns, and the published table's names for them
METRICS = (
    "govsim_survival_time",
    "govsim_survived",
    "govsim_gain",
    "govsim_efficiency",
    "govsim_equality",
    "govsim_over_usage",
)
SHORT = GOVSIM_LABELS
PERCENT = GOVSIM_PERCENT
CREDENTIAL = "govsim"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="govsim_llm.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", dest="scenarios", action="append", choices=SCENARIOS, help="repeatable; default all")
    p.add_argument("--experiment", dest="experiments", action="append", choices=EXPERIMENTS, help="default all")
    p.add_argument("--seeds", type=int, default=1, help="arenas per cell (GovSim ran 5), played at once")
    p.add_argument(
        "--max-in-flight", type=int, default=16, help="calls in flight to the endpoint at most, over all arenas"
    )
    p.add_argument("--seed", type=int, default=0, help="the first seed")
    p.add_argument("--rounds", type=int, default=9, help="utterances a month at most (GovSim: 9 after the report)")
    p.add_argument("--months", type=int, default=None, help="stop each arena after this many months (smoke runs)")
    p.add_argument("--architecture", choices=("govsim", "minimal"), default="govsim")
    p.add_argument("--answer-format", choices=("tool", "text", "auto"), default=None, help="default: text (govsim)")
    p.add_argument("--extra-facts", action="store_true", help="tell the allocation and collapse rules too")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--timeout-ms", type=int, default=60000, help="deadline of one model call")
    p.add_argument("--rules-file", type=Path, help="the rules text given to the players (default: the scenario's)")
    p.add_argument("--out", type=Path, default=Path("runs/govsim_llm"), help="one folder per cell and seed")
    args = p.parse_args(argv)
    from bdpd_jax.host.live.discussion import MAX_DISCUSSION_ROUNDS  # the live host's bound, re-exported there

    args.scenarios = args.scenarios or list(SCENARIOS)
    args.experiments = args.experiments or list(EXPERIMENTS)
    if not 0 <= args.rounds <= MAX_DISCUSSION_ROUNDS:
        p.error(f"--rounds: must be in [0, {MAX_DISCUSSION_ROUNDS}], got {args.rounds}")
    if not 1 <= args.seeds <= 1000:
        p.error(f"--seeds: must be in [1, 1000], got {args.seeds}")
    if args.months is not None and args.months < 1:
        p.error(f"--months: must be >= 1, got {args.months}")
    if not 0 <= args.temperature <= 2:
        p.error(f"--temperature: must be in [0, 2], got {args.temperature}")
    if args.timeout_ms <= 0:
        p.error(f"--timeout-ms: must be > 0, got {args.timeout_ms}")
    if args.rules_file is not None and not args.rules_file.is_file():
        p.error(f"--rules-file: no such file {str(args.rules_file)!r}")
    return args


def endpoint(env: Mapping[str, str]) -> tuple[str, str]:
    """(base URL, model) from the environment; SystemExit naming every missing variable."""
    missing = [k for k in (ENV_BASE_URL, ENV_MODEL, ENV_API_KEY) if not env.get(k)]
    if missing:
        raise SystemExit(
            f"govsim_llm.py: set {', '.join(missing)} (the OpenAI-compatible endpoint, the model "
            f"and its key; the key is read from {ENV_API_KEY} at every call and never stored)"
        )
    return env[ENV_BASE_URL], env[ENV_MODEL]


def scenario_config(scenario: str, experiment: str) -> tuple[dict[str, Any], str | None]:
    """(the scenario's arena config as a dict, the rules text of a minimal player)."""
    from bdpd_jax import scenarios

    return scenarios.govsim(scenario, experiment), scenarios.govsim_rules(scenario, experiment)


def llm_arena_config(
    cfg: Mapping[str, Any], experiment: str, rounds: int, protocol: str = "govsim", months: int | None = None
) -> tuple[dict[str, Any], list[str]]:
    """(the config without its players and without the builtin newcomer's switch, with the
    experiment's meeting; the players' names): GovSim's "no communication" has no meeting."""
    out = json.loads(json.dumps(dict(cfg)))
    players = out.pop("players", None) or [{}] * PLAYERS
    out["perturbations"] = [p for p in out.get("perturbations", []) if p.get("id") != "newcomer"]
    names = [p.get("name") or f"p{i}" for i, p in enumerate(players)]
    on = experiment != "no_communication" and rounds > 0
    out["discussion"] = {"rounds": rounds if on else 0, "nextSpeaker": "named", "protocol": protocol}
    if months is not None:
        out["model"]["maxTurns"] = min(int(out["model"]["maxTurns"]), months)
    return out, names


def player_spec(
    name: str, model: str, rules: str | None, temperature: float, timeout_ms: int, **options: Any
) -> dict[str, Any]:
    """One LLM player's join body (fallback 0); ``options``: its other wire keys."""
    spec = {
        "agentType": "llm",
        "name": name,
        "model": model,
        "credential": CREDENTIAL,
        "fallbackHarvest": 0.0,
        "temperature": temperature,
        "timeoutMs": timeout_ms,
        **{k: v for k, v in options.items() if v is not None},
    }
    return {**spec, "rulesText": rules} if rules else spec


def cell_specs(args: argparse.Namespace, model: str, scenario: str, experiment: str) -> list[dict[str, Any]]:
    """The 5 join bodies of one cell: GovSim's names; in ``newcomer`` the outsider last."""
    from bdpd_jax.scenarios import GOVSIM_NAMES, GOVSIM_SCENARIOS, govsim, govsim_rules

    govsim_arch = args.architecture == "govsim"
    if args.rules_file is not None:
        rules = args.rules_file.read_text()
    else:
        rules = govsim_rules(scenario, experiment, extra_facts=args.extra_facts, universalization=not govsim_arch)
    common = {"architecture": args.architecture, "answerFormat": args.answer_format, "scenario": scenario}
    specs = [player_spec(n, model, rules, args.temperature, args.timeout_ms, **common) for n in GOVSIM_NAMES]
    if experiment == "newcomer":  # GovSim: 4 locals and the outsider (fish_perturbation_outsider.yaml)
        sc = GOVSIM_SCENARIOS[scenario]
        key = "persona" if govsim_arch else "systemPrompt"
        for spec in specs[:-1]:
            spec[key] = sc.local
        # the month the outsider first acts is the scenario's (GovSim's PerturbationEnv: after 3 months)
        specs[-1].update({key: sc.outsider, "activeFrom": govsim(scenario, experiment)["players"][-1]["activeFrom"]})
    return specs


def govsim_metrics(summary: Mapping[str, Any]) -> dict[str, Any]:
    """GovSim's six metrics from an arena's report (top level, or one level down), None where
    the report has no such column."""
    found: dict[str, Any] = {}
    for k, v in summary.items():
        if isinstance(v, Mapping):
            found.update({kk: vv for kk, vv in v.items() if kk in METRICS})
        elif k in METRICS:
            found[k] = v
    return {m: found.get(m) for m in METRICS}


def run_cell(args, base_url: str, model: str, scenario: str, experiment: str, seeds: Sequence[int]) -> list[dict]:
    """The summaries of one cell's seeds. A seed whose folder holds its summary.json is read
    back (resume); a cut-off one is run again from month 1; the rest play at once, in lockstep
    in one ``LiveBatch``, every call to the endpoint under its ``maxInFlight`` (issue 38)."""
    from bdpd_jax.host.live.arena import Arena
    from bdpd_jax.host.live.live_batch import LiveBatch
    from bdpd_jax.host.live.operator import Operator

    folders = {s: args.out / scenario / experiment / f"seed-{s}" for s in seeds}
    todo = [s for s in seeds if not (folders[s] / "summary.json").is_file()]
    cfg, _ = scenario_config(scenario, experiment)
    cfg, _ = llm_arena_config(cfg, experiment, args.rounds, args.architecture, args.months)
    cfg["agentTimeout"] = max(int(cfg.get("agentTimeout", 0)), args.timeout_ms)
    operator = Operator.model_validate(
        {
            "credentials": {CREDENTIAL: {"baseUrl": base_url, "apiKeyEnv": ENV_API_KEY, "models": [model]}},
            "llmEndpoints": [{"baseUrl": base_url, "maxInFlight": args.max_in_flight}],
        }
    )
    arenas = []
    for s in todo:
        if folders[s].exists():  # cut off: run it again from month 1
            shutil.rmtree(folders[s])
        arena = Arena(cfg, seed=s, no_talk=True, operator=operator, out_dir=folders[s])
        for spec in cell_specs(args, model, scenario, experiment):
            arena.join(spec)
        arenas.append(arena)
    if arenas:
        LiveBatch(arenas).run()  # each arena writes summary.json when it closes: its seed is done
    return [json.loads((folders[s] / "summary.json").read_text()) for s in seeds]


def tokens(summary: Mapping[str, Any]) -> int:
    """The tokens an arena's LLM players used (prompt + completion; 0 where none were counted)."""
    u = summary.get("usage") or {}
    return int(u.get("promptTokens", 0)) + int(u.get("completionTokens", 0))


def table(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (scenario, experiment): the six metrics averaged over its seeds (in %
    where the published table is), and the fallback harvests."""
    rows = []
    keys = sorted({(r["scenario"], r["experiment"]) for r in results}, key=lambda k: (k[1], k[0]))
    for sc, ex in keys:
        cell = [r for r in results if (r["scenario"], r["experiment"]) == (sc, ex)]
        row: dict[str, Any] = {"row": f"{sc} / {ex}", "experiment": ex, "seeds": len(cell)}
        for m in METRICS:
            vals = [float(v) for v in (r["metrics"][m] for r in cell) if v is not None and not _nan(v)]
            mean = sum(vals) / len(vals) if vals else math.nan
            row[SHORT[m]] = 100.0 * mean if m in PERCENT else mean  # survived: a bool, its mean a rate
        row["fallbacks"] = sum(r["fallbacks"] for r in cell)
        row["tokens"] = sum(r["tokens"] for r in cell)
        rows.append(row)
    return rows


def _nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def render(rows: list[dict[str, Any]]) -> str:
    """The table, each experiment's published rows beside its cells."""
    from bdpd_jax.scenarios import GOVSIM_PUBLISHED

    cols = ("rate", "time", "Gain", "eff.", "eq.", "over-use")
    head = f"{'':46s}" + "".join(f"{c:>10s}" for c in cols) + f"{'seeds':>7s}{'fallbacks':>10s}{'tokens':>12s}"
    out = [head]
    for ex in dict.fromkeys(r["experiment"] for r in rows):
        out.append(f"-- {ex}")
        for r in (r for r in rows if r["experiment"] == ex):
            nums = "".join(f"{r[c]:10.2f}" for c in cols)
            out.append(f"  {r['row']:44s}{nums}{r['seeds']:7d}{r['fallbacks']:10d}{r['tokens']:12d}")
        for pub in (p for p in GOVSIM_PUBLISHED if p[1] == ex):
            out.append(f"  published: {pub[0][:33]:33s}" + "".join(f"{float(v):10.2f}" for v in pub[2:]))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    args = parse_args(argv)
    base_url, model = endpoint(os.environ if env is None else env)

    results = []
    for ex in args.experiments:
        for sc in args.scenarios:
            seeds = [args.seed + k for k in range(args.seeds)]
            for seed, s in zip(seeds, run_cell(args, base_url, model, sc, ex, seeds), strict=True):
                fallbacks = sum(p.get("fallbacks", 0) for p in s.get("players", []))
                row = {"metrics": govsim_metrics(s), "fallbacks": fallbacks, "tokens": tokens(s)}
                results.append({"scenario": sc, "experiment": ex, **row})
                print(
                    f"{sc} / {ex} / seed {seed}: {s.get('turnsPlayed')} months, {fallbacks} fallbacks, "
                    f"{row['tokens']} tokens"
                )
    print(f"GovSim with {PLAYERS} LLM players ({model}, architecture {args.architecture}); folder {args.out}")
    print(render(table(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
