"""Search the rules (``bdpd_jax.search``): :func:`search` finds the parameters of a config that meet a goal
(objectives, constraints), each generation of candidates one batched sweep; results as
:class:`SearchResults`; ``bdpd search SPEC.toml`` runs a spec resumably (:mod:`.spec`)."""

from .results import SearchResults
from .search import search

__all__ = ["SearchResults", "search"]
