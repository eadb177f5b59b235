"""Prepare: a validated config becomes the kernels' static ``Game`` and array ``Params``
(plus the governance layer), once per config content: ``prepare(config) -> PreparedRun``.
"""

from .prepared import LiveOptions, PreparedRun, prepare

__all__ = ["LiveOptions", "PreparedRun", "prepare"]
