"""Tests of the laboratory (experiments/): CI runs them as a step of their own, after the README's test command."""
