"""The engine interface and registry: the turn never branches on the engine kind.

An engine is one file defining a subclass of :class:`Engine` plus one ``register`` call. The
seed's interface (``step``, ``stepOne``, ``checkEnd``, ``extraObservations``) maps to
``step`` (dynamics over one turn), ``step_one`` (withdraw a demand from the commons),
``check_end`` (collapse test) and ``extra_observations``.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from ..params import farr
from ..registry import Registry


class Engine(abc.ABC):
    """A resource model written for one arena. Stateless: state and params are passed in.
    The abstract methods are what an engine must define; the rest have defaults."""

    name: ClassVar[str]
    #: observation variables this engine produces (subset of params.ENV_VARS).
    variables: ClassVar[tuple[str, ...]]
    #: engine values recorded every turn as columns of Results.turns besides ``stock``.
    recorded: ClassVar[tuple[str, ...]] = ()
    #: model features this engine has (checked by the host): ``regen_rate``, ``capacity``,
    #: ``threshold`` (params fields perturbations may rewrite), ``stock`` (settable by
    #: ``with_stock``), ``hidden_reserve``, ``die`` (the collapse die). kernels/perturb.py
    #: REQUIRES maps types to them.
    features: ClassVar[frozenset[str]] = frozenset()
    #: what charts call the stock (the dashboard's stock axis); read by name, never branched on
    stock_label: ClassVar[str] = "stock"
    #: why this engine's sustainable share can be undefined while the commons stands (the
    #: dashboard's note on a null cooperation_index); None: only a collapse leaves it undefined
    no_share_note: ClassVar[str | None] = None
    #: the outcome columns a summary of this engine's runs leads with (its metric family, e.g.
    #: GovSim's metrics); empty: the project's own (survival, collapse, wealth, efficiency)
    metric_family: ClassVar[tuple[str, ...]] = ()

    @property
    def hidden_reserve(self) -> bool:
        """Whether this engine has a hidden reserve (a declared feature)."""
        return "hidden_reserve" in self.features

    @property
    def die(self) -> bool:
        """Whether this engine has a collapse die (a declared feature)."""
        return "die" in self.features

    @abc.abstractmethod
    def params_from_model(self, model: Any) -> Any:
        """Build this engine's params pytree from the validated ``model`` config block (or the
        engine's own config model), read by the engine model's snake_case attribute names
        (``model.regen_rate``): the host's config model already applied every default and bound."""
        raise NotImplementedError

    @abc.abstractmethod
    def init(self, params: Any) -> Any:
        """Initial engine state."""
        raise NotImplementedError

    @abc.abstractmethod
    def stock(self, state: Any) -> jax.Array:
        """The harvestable commons stock (float[])."""
        raise NotImplementedError

    @abc.abstractmethod
    def step_one(
        self, state: Any, demand: jax.Array, u: jax.Array, params: Any
    ) -> tuple[Any, jax.Array, jax.Array, jax.Array]:
        """Withdraw ``demand`` (float[]) from the commons; ``u`` is one uniform draw.

        Returns ``(state, delivered, collapsed, reserve_drawn)``; ``delivered <= demand`` and
        never exceeds what existed.
        """
        raise NotImplementedError

    @abc.abstractmethod
    def step(self, state: Any, params: Any) -> tuple[Any, jax.Array]:
        """Advance the dynamics one turn; returns ``(state, regen)`` with regen in stock units."""
        raise NotImplementedError

    def harvest_unit(self, params: Any) -> jax.Array:
        """Stock units per unit of the heuristics' ``capacity(w)`` (float[]): a built-in player
        can request up to ``harvest_unit x capacity(w)`` stock units a turn. 1 where the
        stock is counted in the seed's harvest units (logistic)."""
        return jnp.ones(())

    def sustainable_yield(self, model: Any) -> float:
        """The maximum sustainable total harvest per turn of a validated ``model`` block (the
        project's ``efficiency`` reference), NaN where the engine has no closed form.
        Host-side (plain floats, not traced)."""
        return float("nan")

    def sustainability_threshold(self, stock: jax.Array, params: Any) -> jax.Array:
        """f(stock): the largest total harvest after which this engine's regrowth restores
        ``stock`` (float[]; GovSim's sustainability threshold), NaN where it is not defined.
        GovSim's f0 is f at the initial stock."""
        import jax.numpy as jnp

        return jnp.full_like(stock, jnp.nan)

    def share_defined(self, regen: jax.Array) -> jax.Array:
        """Whether this turn's ``regen`` gives a sustainable share regen/N (bool[]). The turn
        adds "the dynamics ran"; engines whose stock cannot regrow override it."""
        return jnp.ones((), bool)

    @abc.abstractmethod
    def check_end(self, state: Any, params: Any) -> jax.Array:
        """True when the commons has collapsed (bool[])."""
        raise NotImplementedError

    @abc.abstractmethod
    def reference(self, state: Any, params: Any) -> jax.Array:
        """The stock level ratios are measured against (K, or R0 where there is no K)."""
        raise NotImplementedError

    @abc.abstractmethod
    def extra_observations(self, state: Any, params: Any) -> dict[str, jax.Array]:
        """Values of this engine's observation variables (name -> float[])."""
        raise NotImplementedError

    def recorded_values(self, state: Any) -> dict[str, jax.Array]:
        """Values named by ``recorded`` (name -> float[])."""
        return {}

    def summary_values(self, state: Any) -> dict[str, jax.Array]:
        """Per-arena values added as columns of Results.summary (name -> float[] | bool[])."""
        return {}

    # --- hooks of the perturbation layer (kernels/perturb.py); defaults by field name ---
    def get_param(self, params: Any, name: str) -> jax.Array:
        """The params field a perturbation reads (``regen_rate``, ``capacity``, ``threshold``)."""
        value: jax.Array = getattr(params, name)
        return value

    def set_param(self, params: Any, name: str, value: jax.Array) -> Any:
        """``params`` with field ``name`` replaced (engines with other field names override)."""
        return dataclasses.replace(params, **{name: value})

    def with_stock(self, state: Any, value: jax.Array) -> Any:
        """``state`` with the harvestable stock set to ``value`` (``commons_shock``); the
        default sets a ``stock`` field. Engines listing ``"stock"`` in ``features`` support it."""
        return dataclasses.replace(state, stock=value)

    def failed(self, state: Any) -> jax.Array:
        """Per-arena numerical failure flag (bool[]); False for engines that cannot fail."""
        return jnp.zeros((), bool)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name))

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)


class CappedStock(Engine):
    """An engine whose one ``stock`` regrows up to a cap and ends below a threshold (params
    fields ``regen_rate``, ``capacity``, ``threshold``, ``initial`` from the config's
    ``regenRate``, ``commonsCapacity``, ``threshold``, ``commonsInitial``): logistic and govsim.
    What follows from those four numbers alone (the end test, the reference, the observations)
    is written here once; each engine keeps its own growth and withdrawal."""

    variables = ("commonsStock", "regenRate", "commonsCapacity", "threshold", "commonsRatio", "sustainabilityThreshold")

    @staticmethod
    def capped_params(model: Any) -> dict[str, jax.Array]:
        """The four params fields of a validated ``model`` block (keyword arguments of the
        engine's params module)."""
        return {
            "regen_rate": farr(model.regen_rate),
            "capacity": farr(model.commons_capacity),
            "threshold": farr(model.threshold),
            "initial": farr(model.commons_initial),
        }

    def stock(self, state: Any) -> jax.Array:
        value: jax.Array = state.stock
        return value

    def check_end(self, state: Any, params: Any) -> jax.Array:
        """Collapsed: the stock fell below the threshold."""
        end: jax.Array = state.stock < params.threshold
        return end

    def reference(self, state: Any, params: Any) -> jax.Array:
        """The cap K."""
        cap: jax.Array = params.capacity
        return cap

    def extra_observations(self, state: Any, params: Any) -> dict[str, jax.Array]:
        s = state.stock
        k = jnp.maximum(params.capacity, jnp.finfo(s.dtype).tiny)
        return {
            "commonsStock": s,
            "regenRate": params.regen_rate,
            "commonsCapacity": params.capacity,
            "threshold": params.threshold,
            "commonsRatio": s / k,
        }


#: the kernel side of the engine registry (the config side: bdpd_jax.config.engines.ENGINE_CONFIGS)
ENGINES: Registry[Engine] = Registry("engineMode", "engine")


def register(engine: Engine) -> Engine:
    """Register an engine instance under its name (the config's ``engineMode``); registering a
    name again replaces its engine (a test's toy engine defined twice)."""
    return ENGINES.register(engine.name, engine, replace=True)


def get_engine(name: str) -> Engine:
    """The engine registered as ``name`` (read now); ValueError naming engineMode and the known."""
    return ENGINES.get_entry(name)
