"""What a scoring run asks for, and the one check of it that `jeirt-lite score`, `batch.score_file` and the Ray
engine (`ray_engine.score_file_on_ray`, `score_dataset`) all make, so that each bad request gets the same words
wherever it comes from, before anything is read or written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ._errors import JeirtError, option_error
from ._io.formats import format_of
from ._limits import check_chunk_rows

DEFAULT_CHUNK_SIZE = 4096
LOCAL, RAY = "local", "ray"


@dataclass(frozen=True)
class ScoreOptions:
    k: int = 1
    all_probabilities: bool = False  # one p[<llm>] column per LLM
    forecast: bool = False  # accumulate each LLM's expected accuracy over the bank
    # And per group of questions: the column (of a text bank) whose value names each row's group; implies forecast.
    forecast_by: Optional[str] = None
    chunk_size: int = DEFAULT_CHUNK_SIZE
    skip_bad: bool = False  # skip and count bad rows instead of stopping at the first
    # The routing rules of `Router.route` for the top-k columns (the forecast and `p[<llm>]` columns stay every
    # LLM's): route only among `llms`, weigh P(correct) against cost, or the cheapest LLM above a probability.
    llms: Optional[tuple[str, ...]] = None
    cost_weight: float = 0.0
    min_probability: Optional[float] = None

    @property
    def forecasting(self) -> bool:
        return self.forecast or self.forecast_by is not None


def check_k(k: object, n_llms: int) -> int:
    """k as an int in 1..n_llms (the router's LLMs), else a JeirtError saying the range."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n_llms:
        raise option_error(f"k must be between 1 and the router's {n_llms} LLMs, got {k!r}")
    return k


def check_score_request(
    options: ScoreOptions,
    n_llms: int,
    *,
    input_path: Optional[Path] = None,
    vectors_path: Optional[Path] = None,
    ids_path: Optional[Path] = None,
    output: Optional[Path] = None,
    engine: str = LOCAL,
) -> None:
    """Refuse a scoring request that cannot run: the sources (a text bank or an .npy of vectors, exactly one; ids
    only with vectors), something to produce (an output file or the forecast), k and the chunk size in range, and
    for the Ray engine a Parquet bank in and Parquet out."""
    if (input_path is None) == (vectors_path is None):
        raise option_error("give an input file of question texts, or a .npy of question vectors (--vectors), exactly one "
                         "of them")
    if ids_path is not None and vectors_path is None:
        raise option_error("ids (--ids) go with question vectors (--vectors); a text bank carries its ids in its id column")
    if options.forecast_by is not None and vectors_path is not None:
        raise option_error("forecast by a column (--forecast-by) reads a column of a text bank, not question vectors")
    if output is None and not options.forecasting:
        raise option_error("nothing to do: give an output file (-o OUTPUT), or ask for the forecast (--forecast)")
    check_k(options.k, n_llms)
    check_chunk_rows(options.chunk_size, "chunk_size")
    if engine == RAY:
        if input_path is None:
            raise option_error("the Ray engine scores text banks only; question vectors run on one machine")
        if format_of(input_path) != "parquet" or not Path(input_path).is_file():
            raise JeirtError(f"{input_path}: the Ray engine reads an existing Parquet file")
        if output is not None and format_of(output, "output") != "parquet":
            raise JeirtError(f"{output}: the Ray engine writes Parquet")
