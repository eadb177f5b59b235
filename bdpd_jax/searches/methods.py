"""The optimisers behind :func:`~bdpd_jax.search.search`, as ask/tell in the unit cube.

Evolution strategies come from evosax (any of its algorithms by name: ``cma_es`` the
default, ``sep_cma_es``, ``simple_es``, ``open_es``, ``snes``, ``pso``, ...), Pareto search
from pymoo (``nsga2``). No optimiser is written here: these classes only translate between
the libraries and the batched evaluator. Each generation's draws come from ``(seed,
generation)``, so asking again after the same tells gives the same candidates (what
resuming a search relies on).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

PARETO_METHODS = ("nsga2",)
# The ES's initial spread in the unit cube (a quarter of each range: most of the box is
# reached in the first generations, few candidates fall outside it).
STD_INIT = 0.25


def _norm(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def evosax_algorithms() -> dict[str, Any]:
    """evosax's registry, keyed by the normalised name (``cma_es`` -> ``cmaes``), read when called."""
    from evosax.algorithms import algorithms

    return {_norm(k): v for k, v in algorithms.items()}


def known_methods() -> list[str]:
    return list(PARETO_METHODS) + sorted(evosax_algorithms())


# How many times each optimiser program was traced (a Python side effect of tracing, never
# of a call): a warm search with the same method, dimension and population adds none.
TRACES: dict[str, int] = {"es": 0, "device": 0}  # device: the device loop's block program


def _counted(f: Callable[..., Any]) -> Callable[..., Any]:
    def traced(*args: Any) -> Any:
        TRACES["es"] += 1
        return f(*args)

    return traced


@dataclass(frozen=True, eq=False)  # (hashed by identity: es_programs makes one per shape)
class EsPrograms:
    """One evosax algorithm at one (population, dimension): the algorithm object, its
    default params (spread ``STD_INIT``) and its jitted ``init``/``ask``/``tell``, made once
    per process (:func:`es_programs`) so a second search of the same shapes compiles nothing."""

    es: Any
    params: Any
    init: Callable[..., Any]
    ask: Callable[..., Any]
    tell: Callable[..., Any]
    distribution: bool  # initialised from a mean (CMA-ES, ...), else from a first population


@functools.lru_cache(maxsize=32)
def es_programs(name: str, population: int, dim: int) -> EsPrograms:
    """The cached programs of evosax's ``name`` (normalised) at ``population`` x ``dim``."""
    import jax
    import jax.numpy as jnp

    es = evosax_algorithms()[name](population_size=population, solution=jnp.zeros(dim))
    params = es.default_params
    if hasattr(params, "std_init"):
        params = params.replace(std_init=STD_INIT)
    distribution = "mean" in inspect.signature(es.init).parameters
    jit = jax.jit
    return EsPrograms(es, params, jit(_counted(es.init)), jit(_counted(es.ask)), jit(_counted(es.tell)), distribution)


def es_init_state(prog: EsPrograms, key: Any, population: int, dim: int) -> Any:
    """The optimiser's first state from ``key``: a distribution centred in the box, or a
    uniform first population not yet evaluated. Its leaves are made strongly typed (``init``
    leaves some weak and ``tell`` returns them strong: else the second ``ask``/``tell``
    would compile again)."""
    import jax
    import jax.numpy as jnp

    k0 = jax.random.fold_in(key, 0)
    if prog.distribution:
        state = prog.init(k0, jnp.full((dim,), 0.5), prog.params)
    else:
        pop = jax.random.uniform(jax.random.fold_in(key, 1), (population, dim))
        state = prog.init(k0, pop, jnp.full((population,), jnp.inf), prog.params)
    return jax.tree.map(lambda x: jnp.array(x, dtype=jnp.asarray(x).dtype), state)


def es_key(key: Any, generation: Any, what: int) -> Any:
    """The key of generation ``g``'s ask (``what`` 0) or tell (1): traceable in ``g``."""
    import jax

    return jax.random.fold_in(jax.random.fold_in(key, 2 + generation), what)


class EvosaxMethod:
    """An evosax algorithm; fitness = a rank (minimised)."""

    def __init__(self, name: str, population: int, dim: int, seed: int):
        import jax

        self.prog = es_programs(_norm(name), int(population), int(dim))
        self.params = self.prog.params
        self.key = jax.random.key(seed)
        self.state = es_init_state(self.prog, self.key, population, dim)

    def ask(self, generation: int) -> np.ndarray:
        x, self.state = self.prog.ask(es_key(self.key, generation, 0), self.state, self.params)
        return np.asarray(x, dtype=float)

    def tell(self, generation: int, x: np.ndarray, fitness: np.ndarray, **_: Any) -> None:
        import jax.numpy as jnp

        self.state, _metrics = self.prog.tell(
            es_key(self.key, generation, 1),
            jnp.asarray(x, jnp.float32),
            jnp.asarray(fitness, jnp.float32),
            self.state,
            self.params,
        )


class PymooMethod:
    """pymoo's NSGA-II on the objectives (minimised) with one constraint: the total violation."""

    def __init__(self, name: str, population: int, dim: int, n_objectives: int, constrained: bool, seed: int):
        from pymoo.algorithms.moo.nsga2 import NSGA2
        from pymoo.core.problem import Problem

        problem = Problem(n_var=dim, n_obj=n_objectives, n_ieq_constr=int(constrained), xl=0.0, xu=1.0)
        self.algorithm = NSGA2(pop_size=population)
        self.algorithm.setup(problem, termination=("n_gen", 1 << 30), seed=seed)
        self.constrained = constrained
        self.pop: Any = None  # the generation asked, told next

    def ask(self, generation: int) -> np.ndarray:
        self.pop = self.algorithm.ask()
        return np.asarray(self.pop.get("X"), dtype=float)

    def tell(
        self, generation: int, x: np.ndarray, fitness: np.ndarray, *, objectives: np.ndarray, violation: np.ndarray
    ) -> None:
        big = np.finfo(np.float64).max / 4  # pymoo sorts finite numbers
        self.pop.set("F", np.where(np.isfinite(objectives), objectives, big))
        if self.constrained:
            self.pop.set("G", np.where(np.isfinite(violation), violation, big)[:, None])
        self.algorithm.tell(infills=self.pop)


def make_method(method: str, population: int, dim: int, n_objectives: int, constrained: bool, seed: int):
    """The ask/tell optimiser named ``method``; ValueError naming it when unknown or when
    several objectives are given to a single-objective method."""
    if not isinstance(method, str):
        raise ValueError(f"method: a method name, got {method!r}")
    if _norm(method) in PARETO_METHODS:
        return PymooMethod(method, population, dim, n_objectives, constrained, seed)
    if n_objectives > 1:
        raise ValueError(
            f"method: {method!r} optimises one objective; several objectives need one of "
            f"{list(PARETO_METHODS)} (a Pareto front)"
        )
    if _norm(method) not in evosax_algorithms():
        raise ValueError(f"method: unknown {method!r}; known: {known_methods()}")
    return EvosaxMethod(method, population, dim, seed)
