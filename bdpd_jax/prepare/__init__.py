"""Prepare: a validated config becomes the kernels' static ``Game`` and array ``Params``
(plus the governance, perturbation and plugin layers), once per config content: ``prepare(config) -> PreparedRun``.

The package itself is callable, ``bdpd_jax.prepare(config, ...)`` being
``bdpd_jax.prepare.prepare(config, ...)``: one public name for the step, while its modules
stay importable by path (``from bdpd_jax.prepare.game import build``) whatever was imported
first.
"""

import sys
import types

from .prepared import LiveOptions, PreparedRun, prepare


class _CallablePackage(types.ModuleType):
    def __call__(self, config, **options) -> PreparedRun:
        return prepare(config, **options)


sys.modules[__name__].__class__ = _CallablePackage

__all__ = ["LiveOptions", "PreparedRun", "prepare"]
