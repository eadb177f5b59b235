"""Prepare: a validated config becomes the kernels' static ``Game`` and array ``Params``
(plus the governance, perturbation and plugin layers), once per config content:
``prepare(config) -> PreparedRun``.

Call it as ``from bdpd_jax.prepare import prepare`` (or ``bdpd_jax.lab.prepare``); the
package's modules stay importable by path (``from bdpd_jax.prepare.game import build``).
"""

from .prepared import LiveOptions, PreparedRun, prepare

__all__ = ["LiveOptions", "PreparedRun", "prepare"]
