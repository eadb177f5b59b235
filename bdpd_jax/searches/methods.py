"""The optimisers behind :func:`~bdpd_jax.search.search`, as ask/tell in the unit cube.

Evolution strategies come from evosax (any of its algorithms by name: ``cma_es`` the
default, ``sep_cma_es``, ``simple_es``, ``open_es``, ``snes``, ``pso``, ...), Pareto search
from pymoo (``nsga2``). No optimiser is written here: these classes only translate between
the libraries and the batched evaluator. Each generation's draws come from ``(seed,
generation)``, so asking again after the same tells gives the same candidates (what
resuming a search relies on).
"""

from __future__ import annotations

import inspect
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


class EvosaxMethod:
    """An evosax algorithm; fitness = a rank (minimised)."""

    def __init__(self, name: str, population: int, dim: int, seed: int):
        import jax
        import jax.numpy as jnp

        cls = evosax_algorithms()[_norm(name)]
        self.es = cls(population_size=population, solution=jnp.zeros(dim))
        params = self.es.default_params
        if hasattr(params, "std_init"):
            params = params.replace(std_init=STD_INIT)
        self.params = params
        self.key = jax.random.key(seed)
        self._ask = jax.jit(self.es.ask)
        self._tell = jax.jit(self.es.tell)
        k0 = jax.random.fold_in(self.key, 0)
        if "mean" in inspect.signature(self.es.init).parameters:  # distribution-based
            self.state = jax.jit(self.es.init)(k0, jnp.full((dim,), 0.5), params)
        else:  # population-based: a uniform first population, not yet evaluated
            pop = jax.random.uniform(jax.random.fold_in(self.key, 1), (population, dim))
            self.state = jax.jit(self.es.init)(k0, pop, jnp.full((population,), jnp.inf), params)
        # init leaves some leaves weakly typed and tell returns them strong: fixing the types now
        # keeps ask/tell to one compile each (else the second generation compiles them again)
        self.state = jax.tree.map(lambda x: jnp.array(x, dtype=jnp.asarray(x).dtype), self.state)

    def _key(self, generation: int, what: int):
        import jax

        return jax.random.fold_in(jax.random.fold_in(self.key, 2 + generation), what)

    def ask(self, generation: int) -> np.ndarray:
        x, self.state = self._ask(self._key(generation, 0), self.state, self.params)
        return np.asarray(x, dtype=float)

    def tell(self, generation: int, x: np.ndarray, fitness: np.ndarray, **_: Any) -> None:
        import jax.numpy as jnp

        self.state, _metrics = self._tell(
            self._key(generation, 1),
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
