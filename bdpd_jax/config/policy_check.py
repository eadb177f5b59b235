"""Checks of a user :class:`~bdpd_jax.kernels.policies.Policy` before it reaches a kernel.

``check_policy_fields`` (at config validation): a callable ``fn``, a non-empty ``name``, an
integer ``memory_size`` in [0, MAX_POLICY_MEMORY]. ``check_policy_outputs`` (at build):
``jax.eval_shape`` of ``fn`` on an observation of the game's shapes must give
``(harvest, memory)`` with a real scalar harvest and ``memory_size`` real memory values. A
mistake is a ValueError naming the player's field, never an error from inside a jitted turn.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels.params import OBS_VARS, PEER_VARS, fdtype
from ..kernels.policies import Policy
from .limits import MAX_POLICY_MEMORY

MAX_NAME_LEN = 100


def check_policy_fields(pol: Policy, where: str) -> Policy:
    """Field checks of a Policy (ValueError naming ``where``.field and the value)."""
    if not callable(pol.fn):
        raise ValueError(f"{where}.fn: a Policy needs a function fn(obs, memory, key), got {pol.fn!r}")
    if not isinstance(pol.name, str) or not pol.name.strip() or len(pol.name) > MAX_NAME_LEN:
        raise ValueError(
            f"{where}.name: a Policy name is a non-empty string of at most {MAX_NAME_LEN} characters, got {pol.name!r}"
        )
    m = pol.memory_size
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 0 <= m <= MAX_POLICY_MEMORY:
        raise ValueError(f"{where}.memory_size: must be an integer in [0, {MAX_POLICY_MEMORY}], got {m!r}")
    return pol


def _real(x) -> bool:
    dt = getattr(x, "dtype", None)
    return dt is not None and (
        jnp.issubdtype(dt, jnp.floating) or jnp.issubdtype(dt, jnp.integer) or jnp.issubdtype(dt, jnp.bool_)
    )


@functools.lru_cache(maxsize=256)
def check_policy_outputs(pol: Policy, n_players: int, where: str) -> None:
    """Trace ``pol.fn`` abstractly (no compile, no run) on one player's observation."""
    check_policy_fields(pol, where)
    f = fdtype()
    obs = {k: jax.ShapeDtypeStruct((n_players,) if k in PEER_VARS else (), f) for k in OBS_VARS}
    mem = jax.ShapeDtypeStruct((int(pol.memory_size),), f)
    key = jax.eval_shape(lambda: jax.random.key(0))
    try:
        out = jax.eval_shape(pol.fn, obs, mem, key)
    except Exception as exc:  # noqa: BLE001 - any failure of user code is reported by name
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ValueError(
            f"{where}: Policy {pol.name!r} fails on an observation "
            f"(fn(obs, memory, key) -> (harvest, memory)): {type(exc).__name__}: {msg}"
        ) from None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise ValueError(f"{where}: Policy {pol.name!r} must return (harvest, memory), got {out!r}")
    h, m = out
    if not _real(h) or tuple(h.shape) != ():
        raise ValueError(
            f"{where}: Policy {pol.name!r} harvest must be a real scalar, got "
            f"{getattr(h, 'dtype', type(h).__name__)}{list(getattr(h, 'shape', []))}"
        )
    if not _real(m) or int(np.prod(m.shape)) != int(pol.memory_size):
        raise ValueError(
            f"{where}: Policy {pol.name!r} memory must be {pol.memory_size} real numbers "
            f"(memory_size), got {getattr(m, 'dtype', type(m).__name__)}{list(getattr(m, 'shape', []))}"
        )


__all__ = ["check_policy_fields", "check_policy_outputs", "MAX_NAME_LEN"]
