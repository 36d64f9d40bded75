"""The one module through which the training library takes what it needs from the runtime package, jeirt_lite: the
router folder it writes (Router, save_artifact, file names), the table readers and their vocabulary, the neighbour
search its votes share with routing, the alignment reference and the record of training questions.

Training writes what the runtime reads, so it must use the runtime's own definitions rather than copies; keeping
every such import here shows in one place which private parts of jeirt_lite the training library depends on.
"""

from __future__ import annotations

from jeirt_lite import JeirtError, Router
from jeirt_lite import _alignment as alignment
from jeirt_lite._artifact_files import write_tensors
from jeirt_lite._errors import error_text, option_error, reraised_as
from jeirt_lite._io.cells import merge_repeated_cells
from jeirt_lite._io.costs import read_costs
from jeirt_lite._io.formats import table_format
from jeirt_lite._io.outputs import (
    HIDDEN_WRITE_KINDS,
    WRITING_KIND,
    atomic_output,
    check_output_folder,
    hidden_prefix,
    move_into_place,
    refuse_inputs,
    remove_stale_folders,
    remove_stale_partials_like,
)
from jeirt_lite._io.tables import read_table
from jeirt_lite._io.vocabulary import (
    CORRECT_COLUMNS,
    EMPTY_LABELS,
    FALSE_LABELS,
    LLM_COLUMNS,
    QUESTION_COLUMNS,
    TEXT_COLUMNS,
    TRUE_LABELS,
    TYPED_IDS,
    not_utf8,
)
from jeirt_lite._limits import check_seed
from jeirt_lite._manifest_values import check_llm_names
from jeirt_lite._metrics import all_metrics, cell_log_losses, log_loss
from jeirt_lite._neighbours import (
    NOT_ASKED,
    NeighbourVotes,
    neighbour_sums,
    short_rows,
    smoothed,
    unit_rows,
    vote_logits,
)
from jeirt_lite._onnx_external import safetensors_layout
from jeirt_lite._router_tables import resolve_threads  # --threads' default: the cores this process may use
from jeirt_lite._text import bytes_escaped, counted, first_and_more
from jeirt_lite._training_questions import normalise_question, training_question_set
from jeirt_lite._type_names import python_type
from jeirt_lite.artifact import ENCODER_FILE, STATIC_ENCODER_FILE, refuse_existing, save_artifact
from jeirt_lite.cli import _options as cli_options  # the converters and parser class of every command
from jeirt_lite.cli import run_command  # how every command runs: its streams, one-line errors and exit codes
from jeirt_lite.cli._shared import stderr_is_terminal  # progress drawn on a terminal only, as every command's
from jeirt_lite.cli.train import run_training  # a training command's data errors as the command line's

__all__ = [
    "CORRECT_COLUMNS", "EMPTY_LABELS", "ENCODER_FILE", "FALSE_LABELS", "HIDDEN_WRITE_KINDS", "LLM_COLUMNS", "NOT_ASKED", "QUESTION_COLUMNS", "STATIC_ENCODER_FILE", "TEXT_COLUMNS", "TRUE_LABELS", "TYPED_IDS", "WRITING_KIND", "JeirtError",
    "NeighbourVotes", "Router", "alignment", "all_metrics", "atomic_output", "cell_log_losses", "check_output_folder", "check_seed",
    "check_llm_names", "cli_options", "counted", "error_text", "first_and_more", "hidden_prefix", "log_loss", "merge_repeated_cells", "move_into_place", "neighbour_sums", "normalise_question", "not_utf8", "option_error", "python_type",
    "read_costs", "read_table", "reraised_as", "refuse_existing", "run_command", "run_training", "refuse_inputs", "remove_stale_folders", "remove_stale_partials_like", "resolve_threads", "safetensors_layout", "save_artifact", "short_rows",
    "smoothed", "stderr_is_terminal", "table_format", "training_question_set", "unit_rows", "vote_logits",
    "write_tensors", "bytes_escaped",
]
