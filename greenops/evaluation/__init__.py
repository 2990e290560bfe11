"""Evaluation of the scheduler on real traces (greenops-eval)."""
