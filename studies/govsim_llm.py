r"""GovSim with LLM players, for an operator with a real OpenAI-compatible endpoint.

Runs one GovSim-style arena (``bdpd_jax.scenarios.govsim(scenario, experiment)``) with 5 LLM
players through the live host (whole-unit answers, fallback 0, a discussion of up to 9
utterances after each harvest, the scenario's rules text) and prints GovSim's six metrics
from the arena's report. Not a CI notebook: it needs a model, so CI tests its arguments only.

    BDPD_LLM_BASE_URL=https://api.example.com/v1 BDPD_LLM_MODEL=some-model BDPD_LLM_API_KEY=... \
        .venv/bin/python studies/govsim_llm.py --scenario fishery --experiment default --out runs/g1

The key is read from the environment at every call and never written anywhere; the arena's
folder (``--out``) holds meta.json, turns.jsonl (with every discussion) and summary.json.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ENV_BASE_URL = "BDPD_LLM_BASE_URL"
ENV_MODEL = "BDPD_LLM_MODEL"
ENV_API_KEY = "BDPD_LLM_API_KEY"
SCENARIOS = ("fishery", "pasture", "pollution")
EXPERIMENTS = ("default", "universalization", "no_communication", "newcomer")
PLAYERS = 5
#: GovSim's six metrics as the report's columns (issue 25, item 4)
METRICS = (
    "govsim_survival_time",
    "govsim_survived",
    "govsim_gain",
    "govsim_efficiency",
    "govsim_equality",
    "govsim_over_usage",
)
CREDENTIAL = "govsim"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="govsim_llm.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", choices=SCENARIOS, default="fishery")
    p.add_argument("--experiment", choices=EXPERIMENTS, default="default")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=9, help="utterances after each harvest (GovSim: 9; 0: none)")
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--timeout-ms", type=int, default=60000, help="deadline of one model call")
    p.add_argument("--rules-file", type=Path, help="the rules text given to the players (default: the scenario's)")
    p.add_argument("--out", type=Path, help="the arena's folder (meta.json, turns.jsonl, summary.json)")
    args = p.parse_args(argv)
    from bdpd_jax.host.discussion import MAX_DISCUSSION_ROUNDS  # the live host's bound, re-exported there

    if not 0 <= args.rounds <= MAX_DISCUSSION_ROUNDS:
        p.error(f"--rounds: must be in [0, {MAX_DISCUSSION_ROUNDS}], got {args.rounds}")
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
    """(the scenario's arena config as a dict, its rules text or None)."""
    try:
        scenarios = importlib.import_module("bdpd_jax.scenarios")
    except ImportError:
        raise SystemExit(
            "govsim_llm.py: bdpd_jax.scenarios.govsim is missing (issue 25's GovSim engine and scenarios)"
        ) from None
    make = scenarios.govsim if callable(scenarios.govsim) else scenarios.govsim.govsim  # a function or its module
    cfg = make(scenario, experiment)
    cfg = cfg.model_dump(mode="json", exclude_none=True) if hasattr(cfg, "model_dump") else json.loads(json.dumps(cfg))
    rules = next(
        (f for f in (getattr(m, "govsim_rules", None) for m in (scenarios, scenarios.govsim)) if callable(f)), None
    )
    return cfg, rules(scenario, experiment) if rules is not None else None


def llm_arena_config(cfg: Mapping[str, Any], experiment: str, rounds: int) -> tuple[dict[str, Any], list[str]]:
    """(the config without its players, with the discussion of the experiment; the players'
    names): GovSim's "no communication" has no discussion, the others ``rounds`` utterances."""
    out = json.loads(json.dumps(dict(cfg)))
    players = out.pop("players", None) or [{}] * PLAYERS
    names = [p.get("name") or f"p{i}" for i, p in enumerate(players)]
    on = experiment != "no_communication" and rounds > 0
    out["discussion"] = {"rounds": rounds if on else 0, "nextSpeaker": "named"}
    return out, names


def player_spec(name: str, model: str, rules: str | None, temperature: float, timeout_ms: int) -> dict[str, Any]:
    """One LLM player's join body: whole units come from the model config, the fallback is 0."""
    spec = {
        "agentType": "llm",
        "name": name,
        "model": model,
        "credential": CREDENTIAL,
        "fallbackHarvest": 0.0,
        "temperature": temperature,
        "timeoutMs": timeout_ms,
    }
    return {**spec, "rulesText": rules} if rules else spec


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


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    args = parse_args(argv)
    base_url, model = endpoint(os.environ if env is None else env)
    cfg, rules = scenario_config(args.scenario, args.experiment)
    if args.rules_file is not None:
        rules = args.rules_file.read_text()
    cfg, names = llm_arena_config(cfg, args.experiment, args.rounds)
    from bdpd_jax.host.arena import Arena
    from bdpd_jax.host.operator import Operator

    operator = Operator.model_validate(
        {"credentials": {CREDENTIAL: {"baseUrl": base_url, "apiKeyEnv": ENV_API_KEY, "models": [model]}}}
    )
    cfg["agentTimeout"] = max(int(cfg.get("agentTimeout", 0)), args.timeout_ms)
    arena = Arena(cfg, seed=args.seed, no_talk=True, operator=operator, out_dir=args.out)
    for name in names:
        arena.join(player_spec(name, model, rules, args.temperature, args.timeout_ms))
    summary = arena.run()
    print(
        f"GovSim {args.scenario} / {args.experiment}, {len(names)} LLM players ({model}), seed {args.seed}: "
        f"{summary['turnsPlayed']} months, survived={summary['survived']}"
    )
    for name, value in govsim_metrics(summary).items():
        print(f"  {name:22s} {'n/a (not in the report)' if value is None else value}")
    fallbacks = sum(p.get("fallbacks", 0) for p in summary["players"])
    print(f"  fallback harvests      {fallbacks}" + (f"   (folder: {args.out})" if args.out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
