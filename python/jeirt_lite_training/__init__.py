"""Training, evaluation, baselines and export for jeirt-lite routers (needs the `train` extra: torch)."""
