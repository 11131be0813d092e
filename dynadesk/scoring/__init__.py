"""Scoring: the Dynascore, perturbation suites and the local leaderboard.

Kept light: importing the package imports nothing heavy; use the submodules
(:mod:`dynadesk.scoring.dynascore`, :mod:`.perturb`, :mod:`.leaderboard`).
"""
