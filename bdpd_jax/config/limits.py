"""Upper bounds on what a config, a live arena or a run may ask for: one place, named.

Sizes that set compiled shapes (players, pact slots, ladder and spec counts, policy memory)
bound compile time and memory (bench/README.md "Compile scaling" measures them); turn
numbers stay far below int32's 2**31; every real number stays finite in float32 with room
for a product of two (docs/semantics.md "Valid ranges"). Raising a bound is editing one
constant here (e.g. once large player counts use the array form); an operator may raise the
two compile-size bounds with BDPD_MAX_PLAYERS / BDPD_MAX_PACT_SLOTS.
"""

from __future__ import annotations

import functools
import math
import os
from typing import Annotated, Any

import numpy as np
from pydantic import StringConstraints

from ..kernels.bounds import MAX_LADDER_SCALE, MAX_MAGNITUDE, QUANTITY_BOUNDS


def _env_int(name: str, default: int) -> int:
    """An operator's override of a bound (environment variable, read once at import)."""
    raw = os.environ.get(name)
    try:
        return default if raw is None else max(1, int(raw))
    except ValueError:
        return default


# Above kernels/unroll.py's thresholds (12 players, 4 slots) the kernels use the array form,
# whose compile does not grow with the count. The worst case of these bounds (1024 players,
# 64 pact slots, 15 specs and a 16-rung ladder, a perturbable arena with talk) compiles in
# 4.9 s of CPU and 0.53 GB; the largest unrolled case (12 players, 8 slots, the same specs)
# in 5.9 s and 0.60 GB (bench/README.md "Compile scaling"); the bound: 10 s, 1.5 GB.
#: players of one arena (model.maxPlayers)
MAX_PLAYERS: int = _env_int("BDPD_MAX_PLAYERS", 1024)
#: pact slots of a live arena (``pactSlots``), and pacts + scripted pledges/proposals of a config
MAX_PACT_SLOTS: int = _env_int("BDPD_MAX_PACT_SLOTS", 64)
#: turns of a game (model.maxTurns, ``turns``) and any turn number in a config
MAX_TURNS: int = 1_000_000
#: arenas a run puts in one batch unless told otherwise (``max_batch`` of simulate, sweeps, specs)
DEFAULT_MAX_BATCH: int = 131072
#: perturbation specs of one config, and rungs of one graduated sanction ladder
MAX_SPECS: int = 16
MAX_LADDER: int = 16
#: floats of memory of one user Policy
MAX_POLICY_MEMORY: int = 1024
# |x| of any real number in a config (float32 keeps it, and a product of two, finite), and
# the bound of each governed quantity (ladder scale, fine, cap, regen, stock change): the
# kernels own them (kernels/bounds.py, imported above: they clamp); configs, owner
# perturbations and live agents are refused past them
#: sides of the collapse die (an int32 draw)
MAX_DIE_SIDES: int = 2**31 - 1
#: arena indices (seed, arena) are uint32: arena_offset + n_arenas <= 2**32
ARENA_INDEX_LIMIT: int = 2**32
#: the longest auto-tick interval a live arena accepts (one day)
MAX_TICK_INTERVAL_MS: float = 86_400_000.0
#: a run may keep results of at most this fraction of the machine's physical memory
MEMORY_FRACTION: float = 0.5


# Every string a client sends (create, join, perturb, resume, governance and agent answers,
# config and operator files) has one of these bounds, named by what it holds; the models use
# the constrained types below, and tests/host/test_hardening_strings.py fails on any str field
# without a bound. docs/semantics/live/server.md "String bounds" lists them (checked by a test).
#: ids: plugin, perturbation and pact ids, player references, spec ids, tool and term names
MAX_ID_CHARS: int = 128
#: names: a player's name (``name`` / ``displayName``), a credential's name
MAX_NAME_CHARS: int = 64
#: labels chosen from a registry or a list: model and engine names, strategies, solvers, variables
MAX_LABEL_CHARS: int = 128
#: free text that may reach a record: a sanction's ``reason``, a message (the bus's rule)
MAX_TEXT_CHARS: int = 500
#: URLs of players, agents and operators' endpoints
MAX_URL_CHARS: int = 2048
#: a system prompt of an LLM player or regulator
MAX_PROMPT_CHARS: int = 4096
#: a code player's JavaScript
MAX_CODE_CHARS: int = 64 * 1024
#: keys and tokens presented to the server, environment variable names, secrets in operator files
MAX_KEY_CHARS: int = 256

Id = Annotated[str, StringConstraints(max_length=MAX_ID_CHARS)]
Name = Annotated[str, StringConstraints(max_length=MAX_NAME_CHARS)]
Label = Annotated[str, StringConstraints(max_length=MAX_LABEL_CHARS)]
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS)]
Url = Annotated[str, StringConstraints(max_length=MAX_URL_CHARS)]
Prompt = Annotated[str, StringConstraints(max_length=MAX_PROMPT_CHARS)]
Code = Annotated[str, StringConstraints(max_length=MAX_CODE_CHARS)]
Key = Annotated[str, StringConstraints(max_length=MAX_KEY_CHARS)]
#: the bound of each constrained string type, by the name docs/semantics/live/server.md uses
STRING_BOUNDS: dict[str, int] = {
    "Id": MAX_ID_CHARS,
    "Name": MAX_NAME_CHARS,
    "Label": MAX_LABEL_CHARS,
    "Text": MAX_TEXT_CHARS,
    "Url": MAX_URL_CHARS,
    "Prompt": MAX_PROMPT_CHARS,
    "Code": MAX_CODE_CHARS,
    "Key": MAX_KEY_CHARS,
}


def check_magnitudes(tree: Any, where: str) -> None:
    """Every real number inside ``tree`` (pydantic models, dicts, lists, numbers) is finite
    and within +-MAX_MAGNITUDE; ValueError naming its path (``where.key[i]...``) and value."""
    stack: list[tuple[Any, tuple]] = [(tree, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, float) or (isinstance(node, int) and not isinstance(node, bool)):
            if not -MAX_MAGNITUDE <= node <= MAX_MAGNITUDE:  # NaN fails both comparisons
                raise ValueError(
                    f"{_path(where, path)}: {node!r} is outside the valid range "
                    f"[-{MAX_MAGNITUDE:g}, {MAX_MAGNITUDE:g}] (docs/semantics.md, Valid ranges)"
                )
        elif isinstance(node, dict):
            stack.extend((v, path + (k,)) for k, v in node.items())
        elif isinstance(node, (list, tuple)):
            stack.extend((v, path + (i,)) for i, v in enumerate(node))
        elif hasattr(type(node), "model_fields"):  # a pydantic model: its fields, without a dump, by wire name
            flat = getattr(type(node), "flat_fields", ())  # fields whose keys sit in this block on the wire
            stack.extend(
                (getattr(node, k), path if k in flat else path + (f.alias or k,))
                for k, f in type(node).model_fields.items()
            )
            # and its extra fields (a pact's terms keep their registered fields as extras)
            stack.extend((v, path + (k,)) for k, v in (getattr(node, "__pydantic_extra__", None) or {}).items())


def _path(where: str, path: tuple) -> str:
    out = where
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out


def check_int(value: Any, field: str, lo: int, hi: int) -> int:
    """``value`` as an int in [lo, hi] (bools and non-integral numbers refused)."""
    ok = isinstance(value, int) and not isinstance(value, bool)
    if not ok:
        try:
            ok = isinstance(value, np.integer)
        except ImportError:  # pragma: no cover
            ok = False
    if not ok or not lo <= int(value) <= hi:
        raise ValueError(f"{field}: must be an integer in [{lo}, {hi}], got {value!r}")
    return int(value)


def check_at_most(value: float, field: str, bound: float, bound_field: str, why: str = "") -> None:
    """``field`` must not exceed another field of its block (a threshold within the capacity,
    minPlayers within maxPlayers): a ValueError naming both and their values, then ``why``."""
    if value > bound:
        raise ValueError(f"{field}: {value} is above {bound_field}={bound}{why}")


def to_float(value: Any, field: str) -> float:
    """``float(value)`` of a user's number (int, float, numpy scalar; bools refused): a
    ValueError naming ``field`` when it is not a number or too large for a float (an int like
    10**400, where ``float()`` raises OverflowError). NaN and inf pass: callers bound them."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{field}: must be a number, got {short_repr(value)}")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{field}: {short_repr(value)} is too large for a float (|x| < 1.8e308)") from None


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to 80 characters; a huge int by its digit count (its repr can be
    too long to make at all past 4300 digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**80:
        return f"an integer of ~{int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_tick_interval(value: Any, field: str = "tickIntervalMs") -> float:
    """An auto-tick interval in ms: a finite number in [0, MAX_TICK_INTERVAL_MS]."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 <= value <= MAX_TICK_INTERVAL_MS  # (before isfinite: an int past float's range)
        or not math.isfinite(value)
    ):
        raise ValueError(f"{field}: must be a number of ms in [0, {MAX_TICK_INTERVAL_MS:g}], got {short_repr(value)}")
    return float(value)


@functools.lru_cache(maxsize=1)
def physical_memory() -> int:
    """Bytes of physical memory of this machine (8 GiB when unknown); read once (a run's
    size check asks it on every call)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return 8 << 30


def check_run_size(
    n_arenas: int, turns: int, n_players: int, history: bool, every: int = 1, streamed: bool = False
) -> int:
    """Estimated bytes of a ``simulate`` run's results kept in memory; ValueError (naming
    n_arenas/turns) when over MEMORY_FRACTION of physical memory, with what to change.

    Per arena: one summary row (~16 + 4 N columns of 8 bytes); per arena-turn with history
    (not streamed to ``out``): a turns row (~16 columns) and N players rows (~8 columns),
    held twice at the end (the records and the frames built from them).
    """
    summary = n_arenas * 8 * (16 + 4 * n_players)
    kept_turns = 0 if (not history or streamed) else -(-turns // every)
    rows = 2 * n_arenas * kept_turns * 8 * (16 + 8 * n_players)  # the records, then their frames
    total = summary + rows
    budget = int(MEMORY_FRACTION * physical_memory())
    if total > budget:
        gb = lambda b: f"{b / 2**30:.1f} GB"  # noqa: E731
        hint = (
            "pass history=False, a larger history_every, or out=DIR to stream the turns"
            if rows > summary
            else "run fewer arenas per call (arena_offset continues a run)"
        )
        field = "turns" if rows > summary and turns > n_arenas else "n_arenas"
        raise ValueError(
            f"{field}: {n_arenas} arenas x {turns} turns would keep ~{gb(total)} of results, "
            f"over the {gb(budget)} allowed ({MEMORY_FRACTION:.0%} of this machine's memory); {hint}"
        )
    return total


def _count(value: Any, field: str, unit: str = "an integer") -> None:
    """``value`` is an int >= 1 (bools refused)."""
    if not _is_int(value) or value < 1:
        raise ValueError(f"{field}: must be {unit} >= 1, got {value!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_run_args(
    *,
    seed: Any = 0,
    max_batch: Any = DEFAULT_MAX_BATCH,
    turns: Any = None,
    n_arenas: Any = None,
    arena_offset: Any = 0,
    replicates: Any = None,
    chunk_turns: Any = None,
    memory_budget: Any = None,
    history_every: Any = None,
) -> None:
    """The arguments of a run (``simulate``, a sweep, a sweep spec), each checked when given:
    ValueError naming the first bad one and its value. ``None`` means not given (``turns``:
    the config's maxTurns)."""
    if n_arenas is not None:
        _count(n_arenas, "n_arenas")
        check_arena_range(n_arenas, arena_offset)
    if replicates is not None:
        _count(replicates, "replicates")
    if not _is_int(seed) or not 0 <= seed < 2**32:  # a uint32
        raise ValueError(f"seed: must be an integer in [0, 2**32), got {seed!r}")
    if turns is not None:
        check_int(turns, "turns", 1, MAX_TURNS)
    if chunk_turns is not None:
        _count(chunk_turns, "chunk_turns")
    _count(max_batch, "max_batch")
    if memory_budget is not None:
        _count(memory_budget, "memory_budget", "a number of bytes")
    if history_every is not None:
        _count(history_every, "history_every")


def check_arena_range(n_arenas: int, arena_offset: int) -> None:
    """Arena indices ``arena_offset .. arena_offset + n_arenas - 1`` are distinct uint32s."""
    check_int(arena_offset, "arena_offset", 0, ARENA_INDEX_LIMIT - 1)
    if int(arena_offset) + int(n_arenas) > ARENA_INDEX_LIMIT:
        field = "n_arenas" if int(n_arenas) > ARENA_INDEX_LIMIT // 2 else "arena_offset"
        raise ValueError(
            f"{field}: arena_offset {arena_offset} + n_arenas {n_arenas} passes 2**32, the number "
            f"of arena indices (arenas past it would alias arenas 0, 1, ...)"
        )


__all__ = [
    "MAX_PLAYERS",
    "MAX_PACT_SLOTS",
    "MAX_TURNS",
    "MAX_SPECS",
    "MAX_LADDER",
    "MAX_POLICY_MEMORY",
    "MAX_MAGNITUDE",
    "MAX_DIE_SIDES",
    "MAX_LADDER_SCALE",
    "QUANTITY_BOUNDS",
    "ARENA_INDEX_LIMIT",
    "DEFAULT_MAX_BATCH",
    "check_run_args",
    "MAX_TICK_INTERVAL_MS",
    "MEMORY_FRACTION",
    "check_magnitudes",
    "check_int",
    "check_tick_interval",
    "to_float",
    "short_repr",
    "check_run_size",
    "MAX_ID_CHARS",
    "MAX_NAME_CHARS",
    "MAX_LABEL_CHARS",
    "MAX_TEXT_CHARS",
    "MAX_URL_CHARS",
    "MAX_PROMPT_CHARS",
    "MAX_CODE_CHARS",
    "MAX_KEY_CHARS",
    "STRING_BOUNDS",
    "Id",
    "Name",
    "Label",
    "Text",
    "Url",
    "Prompt",
    "Code",
    "Key",
    "check_arena_range",
    "physical_memory",
]
