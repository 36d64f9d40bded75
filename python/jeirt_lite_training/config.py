"""What the training's command line needs without torch: the model's settings and the defaults of `fit`'s options.

`jeirt-lite train --help` and the checks of its options run from here, so they work before the `train` extra (torch)
is installed; the modules that train import these names from here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ._runtime import CORRECT_COLUMNS, LLM_COLUMNS, QUESTION_COLUMNS, TEXT_COLUMNS

# Default column names for the long and wide layouts; the first one present in the table is used. The question,
# text, LLM and correct columns are the runtime's, which `add-llm` and `report` read tables by too.
DEFAULT_QUESTION_COLUMNS = QUESTION_COLUMNS
DEFAULT_TEXT_COLUMNS = TEXT_COLUMNS
DEFAULT_LLM_COLUMNS = LLM_COLUMNS
DEFAULT_CORRECT_COLUMNS = CORRECT_COLUMNS
DEFAULT_SUBJECT_COLUMNS = ("subject", "category")
DEFAULT_BENCHMARK_COLUMNS = ("benchmark", "dataset", "task")

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
DEFAULT_MAX_LENGTH = 256
# The names of jeirt_lite_training.encoders.ENCODERS (a test keeps the two lists equal).
ENCODER_NAMES = ("all-MiniLM-L6-v2", "all-mpnet-base-v2")
STATIC = "static"  # the encoder choice: a token table distilled from the default transformer (static_encoder.py)
# The candidates for d (JE-IRT's one structural choice) and dropout (its regularisation): the grid the five-split
# comparison has tuned over (experiments.compare), neither value tied to a dataset.
DEFAULT_DIMS = (64, 128, 256)
DEFAULT_DROPOUTS = (0.3, 0.7)
# `--folds auto` (fit's default): choose by AUTO_FOLDS-fold cross-validation when the questions it learns from hold at
# most AUTO_FOLDS_MAX_CELLS answers (fewer folds where the questions, dealt within each subject, leave one of them
# without an answer: pipeline.auto_fold_parts), else on one held-out part, whatever the encoder. On small sets one
# held-out part is a few thousand answers, few to stop, weigh the votes and calibrate on (the folds' gain is there,
# not in the choice of d and dropout); on large ones the folds cost K times the training
# (docs/research/baselines-same-care.md, "Cross-validated choices on small sets", "What the folds' gain is made of",
# "The static encoder on folds").
AUTO_FOLDS = 5
AUTO_FOLDS_MAX_CELLS = 50_000
# Candidate pulls of `fit --encoder static`; the frozen table is always a candidate too, so fine-tuning is kept only
# where it lowers the validation loss. 0.1 had the lowest validation loss of the pulls tried on both public datasets
# (docs/research/encoders.md); one candidate keeps the extra cost to one held-out run and an end-to-end refit.
DEFAULT_TABLE_PULLS: tuple[float, ...] = (0.1,)
# `fit --encoder static` fits the token table to the teacher's sentence embeddings of the training texts (never the
# validation texts) before the adapter is trained (static_sentences.py); experiments that reproduce runs of the
# distilled table turn it off.
FIT_SENTENCES = True


@dataclass
class JeirtConfig:
    dim: int = 128
    dropout: float = 0.7
    lr: float = 1e-3
    weight_decay: float = 1e-2
    batch_size: int = 1024
    max_epochs: int = 200
    patience: int = 10
    # When validation loss has not improved for `lr_drop_patience` epochs: restore the best weights and divide the
    # learning rate by 10, up to `lr_drops` times; after that, stop at the next plateau of `patience` epochs.
    lr_drops: int = 2
    lr_drop_patience: int = 2
    # The LLM table learns at `llm_lr_scale` times the adapter's rate. Each LLM's row is trained only by its own
    # cells (1/K of them) and starts collinear with the others (llm_init "accuracy"), so at the adapter's rate the
    # rows hardly separate before early stopping, and JE-IRT ordered the LLMs within a question worse than KNN and
    # matrix factorisation. 10 lowered the validation loss of the comparison (docs/research/comparison.md
    # has the numbers).
    llm_lr_scale: float = 10.0
    # Time constant, in epochs, of an exponential moving average of all trained weights (jeirt_lite_training.averaging): the
    # run validates, early-stops on and returns the averaged weights; 0: the raw weights. Half an epoch lowered the
    # validation loss on every zeroeval split and was level or lower on mmlu_pro (docs/research/hyperparameters.md): the
    # raw weights' early stop at lr 1e-3 is noisy on small data, and the average smooths it.
    ema_epochs: float = 0.5
    seed: int = 0
    # "accuracy": every LLM vector starts along one shared random direction with length set so that a typical
    # question gives the LLM's training accuracy (see fit.init_llm_vectors); "random": N(0, 1/d) per entry.
    llm_init: str = "accuracy"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
