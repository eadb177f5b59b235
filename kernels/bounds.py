"""Bounds on governance and perturbation magnitudes: one bound per quantity, applied by the
kernels as clamps (so no recorded amount is ever non-finite) and by the host as refusals
(``bdpd_jax.config.limits`` re-exports them; docs/semantics/governance.md "Magnitude bounds").

float32 holds a product of two numbers of at most ``MAX_MAGNITUDE`` (1e30 < 3.4e38), so an
amount times a bounded factor stays finite before it is clamped.
"""

from __future__ import annotations

#: |x| of any real number of a config, and of a fine, a cap, a regeneration rate or a stock change
MAX_MAGNITUDE: float = 1e15
#: the factor on every sanction amount (``ladder_scale``), and the built-in regulator's ``tighten``
MAX_LADDER_SCALE: float = 1e6
#: the bound of each governed quantity, by name (documented and checked by tests)
QUANTITY_BOUNDS: dict[str, float] = {
    "ladder_scale": MAX_LADDER_SCALE,
    "fine": MAX_MAGNITUDE,
    "cap": MAX_MAGNITUDE,
    "regen": MAX_MAGNITUDE,
    "stock_change": MAX_MAGNITUDE,
}

__all__ = ["MAX_MAGNITUDE", "MAX_LADDER_SCALE", "QUANTITY_BOUNDS"]
