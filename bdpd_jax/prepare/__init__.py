"""Prepare: a validated config becomes the kernels' static ``Game`` and array ``Params``
(plus the governance layer), cached per config content.
"""
