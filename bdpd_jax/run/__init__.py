"""Batch run: ``simulate`` and the chunked runner that drives the compiled rollout over
many arenas (keys, early exit, re-partition of ended arenas).
"""
