"""scripts.mutate_bindings: a cargo-mutants span (1-based lines and columns counted in characters, the end
exclusive) is replaced exactly, and the per-function sample keeps each function's first mutants in order."""

from __future__ import annotations

from typing import Any

from scripts.mutate_bindings import first_of_each_function, mutated

SOURCE = "fn shape(s: &[usize]) -> usize {\n    match s {\n        [r, _] => *r, // «rows»\n    }\n}\n"


def _mutant(start: tuple[int, int], end: tuple[int, int], replacement: str, function: str = "shape") -> dict[str, Any]:
    return {"span": {"start": {"line": start[0], "column": start[1]}, "end": {"line": end[0], "column": end[1]}},
            "replacement": replacement, "function": {"function_name": function}, "name": f"{function} {replacement}"}


def test_a_span_over_several_lines_is_replaced_whole_and_nothing_else() -> None:
    body = _mutant((2, 5), (4, 6), "0")
    assert mutated(SOURCE, body) == "fn shape(s: &[usize]) -> usize {\n    0\n}\n"


def test_columns_count_characters_and_the_end_is_exclusive() -> None:
    after_comment = SOURCE.replace("\n    }\n", "\n    } // «end»\n")
    operator = _mutant((4, 11), (4, 14), "fin")  # the three letters after "«", a character of two bytes
    assert mutated(after_comment, operator).splitlines()[3] == "    } // «fin»"
    deleted_arm = _mutant((3, 9), (3, 22), "")
    assert mutated(SOURCE, deleted_arm).splitlines()[2] == "         // «rows»"


def test_the_sample_keeps_the_first_mutants_of_each_function_and_every_other_one() -> None:
    mutants = [_mutant((1, 1), (1, 2), str(i), function) for i, function in enumerate("aabab")]
    mutants.append({"span": {}, "replacement": "x", "function": None, "name": "outside any function"})
    kept = first_of_each_function(mutants, 2)
    assert [m["name"] for m in kept] == ["a 0", "a 1", "b 2", "b 4", "outside any function"]
