"""Results: the pandas frames of a run (turns, players, summary, perturbations,
violations, sanctions), GovSim columns and the report's victory evaluation.
"""
