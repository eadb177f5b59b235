"""Configuration: the pydantic models users write (game, pacts and talk, perturbation
specs, plugins), the registries' config side, and the bounds every value is checked against.
Validation only: building kernel layers and arrays from a config is bdpd_jax/prepare/'s job.
"""
