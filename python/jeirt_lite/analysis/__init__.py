"""Reading the geometry of a router: difficulty, an LLM-centred taxonomy, ability probes, alignment (out of
distribution) and a visual report. NumPy only (the report needs matplotlib: `pip install "jeirt-lite[report]"`).
"""

from .._alignment import AlignmentResult, align, alignment_scores, reference_directions, validation_threshold
from ._difficulty import DifficultyReport, difficulty_vs_error
from ._probes import Probe, needs_calculation, probe, probe_vectors
from ._taxonomy import Cluster, Taxonomy, taxonomy

__all__ = [
    "AlignmentResult", "Cluster", "DifficultyReport", "Probe", "Taxonomy", "align", "alignment_scores",
    "difficulty_vs_error", "needs_calculation", "probe", "probe_vectors", "reference_directions", "taxonomy",
    "validation_threshold",
]
