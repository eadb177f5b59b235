"""Configuration: the pydantic models users write (game, pacts and talk, perturbation
specs, plugins), the registries' config side, and the bounds every value is checked against.
"""
