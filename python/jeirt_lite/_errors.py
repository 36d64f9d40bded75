"""The one exception type of jeirt-lite (a ``ValueError`` subclass), and hints that name an option.

A library error that a caller can avoid with an option (``skip_bad=True``, ``text_column=...``) carries a
`Hint`: the message names the option as the library spells it, and the command line swaps in its own flag
(``--skip-bad``), or drops the advice for a command without that flag. Library code never names a flag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, TypeVar

from jeirt_lite._core import JeirtError

__all__ = [
    "SKIP_BAD", "Hint", "JeirtError", "column_hint", "error_text", "hinted_error", "in_file", "is_option_error",
    "option_error", "rehint", "reraised_as",
]


@dataclass(frozen=True)
class Hint:
    """Advice naming an option: `advice` holds "{option}" where the option's name goes."""

    option: str  # the keyword argument, e.g. "skip_bad"
    advice: str  # e.g. "fix the row or pass {option} to skip such rows"
    spelled: str  # how the library names it in the message, e.g. "skip_bad=True"


SKIP_BAD = Hint("skip_bad", "fix the row or pass {option} to skip such rows", "skip_bad=True")


def column_hint(option: str) -> Hint:
    """"see text_column" for a column the caller can name with the keyword argument `option`."""
    return Hint(option, "see {option}", option)


def hinted_error(problem: str, hint: Hint) -> JeirtError:
    """A JeirtError whose message is `problem` followed by the hint's advice in the library's words."""
    error = JeirtError(f"{problem}; {hint.advice.format(option=hint.spelled)}")
    setattr(error, "problem", problem)  # noqa: B010 - the extension's exception type declares no attributes
    setattr(error, "hint", hint)  # noqa: B010
    return error


def option_error(message: str) -> JeirtError:
    """A JeirtError about the options of a call rather than its input (k beyond the LLMs routed among, two rules
    that exclude each other): the command line ends it as it ends an option out of its bound (exit 2)."""
    error = JeirtError(message)
    setattr(error, "option", True)  # noqa: B010 - the extension's exception type declares no attributes
    return error


def is_option_error(error: BaseException) -> bool:
    return bool(getattr(error, "option", False))


def in_file(path: object, error: JeirtError) -> JeirtError:
    """`error` named by the file at `path` it is about, as the readers name a file's errors (`path: problem`); its
    hint is kept."""
    hint: Optional[Hint] = getattr(error, "hint", None)
    problem: Optional[str] = getattr(error, "problem", None)
    if hint is None or problem is None:
        return JeirtError(f"{path}: {error}")
    return hinted_error(f"{path}: {problem}", hint)


def rehint(message: str) -> JeirtError:
    """A JeirtError rebuilt from its message alone (after crossing processes), with its hint when known."""
    for hint in (SKIP_BAD,):
        advice = "; " + hint.advice.format(option=hint.spelled)
        if message.endswith(advice):
            return hinted_error(message[: -len(advice)], hint)
    return JeirtError(message)


ErrorT = TypeVar("ErrorT", bound=BaseException)
# What a front end reads of an error besides its message: its problem and hint (error_text), and whether it is about
# the options (is_option_error).
_FRONT_END_ATTRIBUTES = ("problem", "hint", "option")


def reraised_as(error: ErrorT, source: BaseException) -> ErrorT:
    """`error`, raised in place of `source` (as another type), with what a front end reads of `source`: a command
    line then words its advice in its own flags, or leaves it out, as it would have for `source`."""
    for name in _FRONT_END_ATTRIBUTES:
        if hasattr(source, name):
            setattr(error, name, getattr(source, name))
    return error


def error_text(error: BaseException, flag_for: Callable[[str], Optional[str]]) -> str:
    """The error's message for a front end: the advice names `flag_for(option)`, or is left out when None."""
    hint: Optional[Hint] = getattr(error, "hint", None)
    problem: Optional[str] = getattr(error, "problem", None)
    if hint is None or problem is None:
        return str(error)
    flag = flag_for(hint.option)
    return f"{problem}; {hint.advice.format(option=flag)}" if flag else problem
