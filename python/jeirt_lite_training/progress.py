"""Training's progress bars: drawn only when stderr is a terminal, as the runtime's progress lines are, so that a
`train` run writing to a log, a pipe or a batch job's output gets its report lines and not a bar redrawn after every
text and epoch."""

from __future__ import annotations

from typing import Any

from ._runtime import stderr_is_terminal


def progress_bar(total: int, desc: str, unit: str) -> Any:
    """A tqdm bar of `total` steps, silent (its updates do nothing) where stderr is not a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not stderr_is_terminal())
