"""Reproducible studies on real judge data (one module per study)."""
