"""Sweeps: parameter points, config paths, the compile-once sweep, sweep files
(``bdpd sweep``), the distributed runner and the sensitivity analyses.
"""
