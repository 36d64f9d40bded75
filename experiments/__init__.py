"""The laboratory: comparisons with baselines, evaluations and research runs behind docs/research/. Not shipped in
the wheel; run from a checkout (`python -m experiments.compare --data data/mmlu_pro --out results/`), with the
train extra. Built on the shipped training library, jeirt_lite_training."""
