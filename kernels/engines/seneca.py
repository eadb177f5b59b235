"""Seneca commons: Bardi's (2011) Resource-Capital-Pollution ODE, integrated with diffrax.

    dR/dt = -k1 R C - l3 R,   dC/dt = k1 R C - k2 C P - l1 C,   dP/dt = k2 C P - l2 P

One turn integrates ``dt`` (default 0.10) of model time with ``diffrax.diffeqsolve``
(``throw=False``: a failure is a per-arena flag, never an exception under vmap).

Harvest coupling (operator splitting, docs/semantics.md §9): requests, harvests and wealth
are in R units; players' harvests are withdrawn from R *between* integrations (``step_one``
runs before ``step`` within a turn). The heuristics' capacity rule is applied in scaled
units: a built-in player may request up to ``harvestScale x capacity(w)`` R a turn
(:meth:`Seneca.harvest_unit`). Zero harvest leaves R untouched, so it gives the pure Bardi
run exactly. Collapse: R <= collapseFraction x R0 (R0 = ``commonsInitial``). There is no
hidden reserve and no collapse die (logistic-only in the seed).

Solver failure: the flag ``failed`` is set (and stays set) when diffrax reports an
unsuccessful result or the new state is not finite; the arena keeps its last good R, C, P
and its game ends (``check_end`` is True), so no NaN reaches stocks, wealth or metrics.
``Results.turns`` carries ``solver_failed`` per turn and the summary per arena.
"""

from __future__ import annotations

from typing import Any

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

from ..params import farr
from .base import Engine, register

SOLVERS: dict[str, Any] = {  # diffrax solver classes (the Runge-Kutta ones carry .tableau)
    "euler": diffrax.Euler,
    "heun": diffrax.Heun,
    "midpoint": diffrax.Midpoint,
    "ralston": diffrax.Ralston,
    "bosh3": diffrax.Bosh3,
    "tsit5": diffrax.Tsit5,
    "dopri5": diffrax.Dopri5,
}
#: classical order of each solver (checked by tests/test_seneca.py::test_solver_order).
#: default harvestScale (docs/semantics.md §9: 4 capacity-bound players take 1e-3 R0 a turn).
HARVEST_SCALE = 1e-4
# Every Seneca number's default, read by the engine and by the config model alike (one place).
DEFAULTS: dict[str, Any] = {
    "k1": 0.03,
    "k2": 0.30,
    "l1": 0.0,
    "l2": 0.01,
    "l3": 0.0,
    "capitalSeed": 0.01,
    "pollutionSeed": 0.001,
    "dt": 0.10,
    "harvestScale": HARVEST_SCALE,
    "collapseFraction": 1e-3,
    "rtol": 1e-6,
    "atol": 1e-9,
    "solver": "euler",
    "substeps": 1,
    "adaptive": False,
    "maxSteps": 256,
    "integrator": "steps",
}
ORDER: dict[str, int] = {"euler": 1, "heun": 2, "midpoint": 2, "ralston": 2, "bosh3": 3, "tsit5": 5, "dopri5": 5}


class SenecaParams(eqx.Module):
    k1: jax.Array  # float[], R -> C conversion rate
    k2: jax.Array  # float[], C -> P conversion rate
    l1: jax.Array  # float[], capital decay
    l2: jax.Array  # float[], pollution decay
    l3: jax.Array  # float[], resource decay
    initial: jax.Array  # float[], R0 (commonsInitial), reference of commonsRatio
    capital0: jax.Array  # float[], C0 (capitalSeed)
    pollution0: jax.Array  # float[], P0 (pollutionSeed); P stays 0 forever if it starts at 0
    dt: jax.Array  # float[], model time per turn
    harvest_scale: jax.Array  # float[], R units per unit of the heuristics' capacity(w)
    collapse_fraction: jax.Array  # float[], collapse when R <= collapse_fraction * R0
    rtol: jax.Array  # float[], adaptive controller only
    atol: jax.Array  # float[], adaptive controller only
    # Code paths and counts (static: part of the compiled program, never swept).
    solver: str = eqx.field(static=True, default="euler")
    substeps: int = eqx.field(static=True, default=1)  # constant steps per turn (initial guess if adaptive)
    adaptive: bool = eqx.field(static=True, default=False)  # PID step-size controller
    max_steps: int = eqx.field(static=True, default=256)  # adaptive only
    integrator: str = eqx.field(static=True, default="steps")  # "steps" | "tableau" | "diffeqsolve"


class SenecaState(eqx.Module):
    R: jax.Array  # float[], resource (the commons stock)
    C: jax.Array  # float[], capital
    P: jax.Array  # float[], pollution
    failed: jax.Array  # bool[], the solver failed on some turn (sticky)


def vector_field(t, y, p: SenecaParams):
    """Bardi's R-C-P right-hand side; y = float[3] (R, C, P)."""
    r, c, q = y[0], y[1], y[2]
    rc = p.k1 * r * c
    cp = p.k2 * c * q
    return jnp.stack([-rc - p.l3 * r, rc - cp - p.l1 * c, cp - p.l2 * q])


def _fixed_steps(y0: jax.Array, p: SenecaParams) -> tuple[jax.Array, jax.Array]:
    """``substeps`` constant steps of the diffrax solver, driven by its own ``init``/``step``.

    The same arithmetic as ``diffeqsolve`` with ``ConstantStepSize`` without its
    ``while_loop``: under vmap a per-arena ``t1`` makes that loop batched, and its per-step
    select over the whole loop state costs more than the step (bench/README.md).
    """
    solver = SOLVERS[p.solver]()
    term = diffrax.ODETerm(vector_field)
    h = p.dt / p.substeps
    zero = jnp.zeros_like(p.dt)
    st = solver.init(term, zero, h, y0, p)
    ok = jnp.ones((), bool)

    def one(i, carry):
        y, st, ok = carry
        t0 = i * h
        t1 = jnp.where(i == p.substeps - 1, p.dt, (i + 1) * h)
        y, _, _, st, res = solver.step(term, t0, t1, y, p, st, made_jump=False)
        return y, st, ok & (res == diffrax.RESULTS.successful)

    carry = (y0, st, ok)
    if p.substeps <= 8:
        for i in range(p.substeps):
            carry = one(jnp.asarray(i, p.dt.dtype), carry)
    else:
        carry = jax.lax.fori_loop(0, p.substeps, lambda i, c: one(jnp.asarray(i, p.dt.dtype), c), carry)
    return carry[0], carry[2]


def _tableau_steps(y0: jax.Array, p: SenecaParams) -> tuple[jax.Array, jax.Array]:
    """``substeps`` constant steps of an explicit Runge-Kutta method from diffrax's Butcher
    tableau (``diffrax.Tsit5.tableau``, ...), its stages unrolled in Python.

    diffrax's own RK step loops over stages with ``lax.scan`` and small products that XLA
    does not fuse; unrolled, the stages fuse into a few kernels (faster: bench/README.md).
    Same coefficients, so the same method and order.
    """
    tab = SOLVERS[p.solver].tableau
    a = [jnp.asarray(row, y0.dtype) for row in tab.a_lower]
    b = jnp.asarray(tab.b_sol, y0.dtype)
    h = p.dt / p.substeps

    def one(y):
        ks = [vector_field(None, y, p)]
        for row in a:
            ks.append(vector_field(None, y + h * sum(row[j] * ks[j] for j in range(len(row))), p))
        return y + h * sum(b[j] * ks[j] for j in range(len(ks)))

    if p.substeps <= 8:
        y = y0
        for _ in range(p.substeps):
            y = one(y)
    else:
        y = jax.lax.fori_loop(0, p.substeps, lambda i, y: one(y), y0)
    return y, jnp.ones((), bool)


def _diffeqsolve(y0: jax.Array, p: SenecaParams) -> tuple[jax.Array, jax.Array]:
    """One turn through ``diffrax.diffeqsolve`` (adaptive PID controller, or constant steps)."""
    controller: diffrax.AbstractStepSizeController
    if p.adaptive:
        controller = diffrax.PIDController(rtol=p.rtol, atol=p.atol)
        max_steps = p.max_steps
    else:
        controller = diffrax.ConstantStepSize()
        max_steps = p.substeps + 1  # +1: a rounding sliver at t1 must not read as a failure
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(vector_field),
        SOLVERS[p.solver](),
        t0=jnp.zeros_like(p.dt),
        t1=p.dt,
        dt0=p.dt / p.substeps,
        y0=y0,
        args=p,
        saveat=diffrax.SaveAt(t1=True),
        stepsize_controller=controller,
        max_steps=max_steps,
        adjoint=diffrax.ForwardMode(),
        throw=False,
    )
    return sol.ys[-1], sol.result == diffrax.RESULTS.successful


def integrate(y0: jax.Array, p: SenecaParams) -> tuple[jax.Array, jax.Array]:
    """Integrate one turn (t from 0 to p.dt) with diffrax. Returns (y1 float[3], ok bool[]).

    Constant steps run the solver's steps directly unless ``integrator="diffeqsolve"``; the
    adaptive controller always goes through ``diffeqsolve``. ``ok`` is False when diffrax
    reports an unsuccessful result or y1 is not finite.
    """
    if p.adaptive or p.integrator == "diffeqsolve":
        y1, ok = _diffeqsolve(y0, p)
    elif p.integrator == "tableau" and p.solver != "euler":
        y1, ok = _tableau_steps(y0, p)
    else:
        y1, ok = _fixed_steps(y0, p)
    return y1, ok & jnp.all(jnp.isfinite(y1))


class Seneca(Engine):
    name = "seneca"
    variables = ("commonsStock", "commonsRatio", "capitalStock", "pollutionLevel")
    recorded = ("capital", "pollution", "solver_failed")
    features = frozenset({"stock"})  # commons_shock moves R; no regen_rate/capacity/threshold/reserve
    stock_label = "resource R"
    no_share_note = "Seneca: no regrowth"

    def params_from_model(self, model: Any) -> SenecaParams:
        s = model.seneca
        return SenecaParams(
            k1=farr(s.k1),
            k2=farr(s.k2),
            l1=farr(s.l1),
            l2=farr(s.l2),
            l3=farr(s.l3),
            initial=farr(model.commons_initial),
            capital0=farr(s.capital_seed),
            pollution0=farr(s.pollution_seed),
            dt=farr(s.dt),
            harvest_scale=farr(s.harvest_scale),
            collapse_fraction=farr(s.collapse_fraction),
            rtol=farr(s.rtol),
            atol=farr(s.atol),
            solver=str(s.solver),
            substeps=int(s.substeps),
            adaptive=bool(s.adaptive),
            max_steps=int(s.max_steps),
            integrator=str(s.integrator),
        )

    def init(self, params: SenecaParams) -> SenecaState:
        return SenecaState(
            R=jnp.maximum(params.initial, 0.0),
            C=jnp.maximum(params.capital0, 0.0),
            P=jnp.maximum(params.pollution0, 0.0),
            failed=jnp.zeros((), bool),
        )

    def stock(self, state: SenecaState) -> jax.Array:
        return state.R

    def step_one(self, state: SenecaState, demand, u, params: SenecaParams):
        # demand and delivered in R units; taking all of R leaves exactly 0
        delivered = jnp.clip(demand, 0.0, state.R)
        r = jnp.where(delivered >= state.R, 0.0, jnp.maximum(state.R - delivered, 0.0))
        no = jnp.zeros((), bool)
        return SenecaState(R=r, C=state.C, P=state.P, failed=state.failed), delivered, no, jnp.zeros_like(demand)

    def step(self, state: SenecaState, params: SenecaParams):
        y0 = jnp.stack([state.R, state.C, state.P])
        y1, ok = integrate(y0, params)
        ok = ok & ~state.failed
        y1 = jnp.where(ok, jnp.maximum(y1, 0.0), y0)
        new = SenecaState(R=y1[0], C=y1[1], P=y1[2], failed=~ok)
        return new, new.R - state.R

    def harvest_unit(self, params: SenecaParams) -> jax.Array:
        return params.harvest_scale

    def share_defined(self, regen: jax.Array) -> jax.Array:
        # Bardi's R never regrows (dR/dt <= 0): no regeneration, no sustainable share
        return regen > 0

    def check_end(self, state: SenecaState, params: SenecaParams) -> jax.Array:
        return (params.collapse_fraction * params.initial >= state.R) | state.failed

    def reference(self, state: SenecaState, params: SenecaParams) -> jax.Array:
        return params.initial

    def extra_observations(self, state: SenecaState, params: SenecaParams) -> dict[str, jax.Array]:
        r0 = jnp.maximum(params.initial, jnp.finfo(state.R.dtype).tiny)
        return {
            "commonsStock": state.R,
            "commonsRatio": state.R / r0,
            "capitalStock": state.C,
            "pollutionLevel": state.P,
        }

    def recorded_values(self, state: SenecaState) -> dict[str, jax.Array]:
        return {"capital": state.C, "pollution": state.P, "solver_failed": state.failed}

    def summary_values(self, state: SenecaState) -> dict[str, jax.Array]:
        return {"solver_failed": state.failed}

    def with_stock(self, state: SenecaState, value: jax.Array) -> SenecaState:
        return SenecaState(R=jnp.maximum(value, 0.0), C=state.C, P=state.P, failed=state.failed)

    def failed(self, state: SenecaState) -> jax.Array:
        return state.failed


SENECA = register(Seneca())
