"""The self-test of picoemu on real clusters (run.py: the runner; one module per scenario)."""
