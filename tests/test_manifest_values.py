"""Every value of router.json is checked, the displayed ones too: NaN, infinities, numbers too large, huge integers
and mistyped metrics end in a JeirtError naming the field (never a ValueError from the digest); router.json obeys
the rule on links that every file of the folder obeys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pytest
from jeirt_lite import JeirtError, Router
from jeirt_lite._manifest_values import MAX_DEPTH, check_values
from jeirt_lite.artifact import load_artifact, read_manifest
from tiny_router import copy_router, edit_and_reseal


def _metrics_text(value: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        manifest = json.loads(text)
        manifest["metrics"] = {"how": "by hand", "heldout": {"n": 10, "auc": "VALUE"}}
        return json.dumps(manifest).replace('"VALUE"', value)

    return edit


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NaN", "field metrics.heldout.auc is nan"),
        ("Infinity", "field metrics.heldout.auc is inf"),
        ("-Infinity", "field metrics.heldout.auc is -inf"),
        ("1e400", "field metrics.heldout.auc is inf"),
        ("9" * 30, "field metrics.heldout.auc is an integer of 30 digits, beyond 64 bits"),
    ],
)
def test_a_non_finite_or_huge_number_anywhere_is_a_jeirt_error_naming_the_field(
    tiny_router_path: Path, tmp_path: Path, value: str, message: str
) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    path = folder / "router.json"
    path.write_text(_metrics_text(value)(path.read_text()))
    for load in (Router.load, load_artifact, read_manifest):
        with pytest.raises(JeirtError, match=message.replace("(", r"\(")):
            load(folder)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.update(metrics={"heldout": {"auc": "high"}}), "field metrics.heldout.auc must be a number"),
        (lambda m: m.update(metrics={"test": {"log_loss": [0.5]}}), "field metrics.test.log_loss must be a number"),
        (lambda m: m.update(metrics={"heldout": {"ece": True}}), "field metrics.heldout.ece must be a number"),
        (lambda m: m.update(training={"split": "0.8/0.2"}), "field training.split must be an object, got a string$"),
        (lambda m: m.update(training={"split": {"seed": "0"}}), "field training.split.seed must be an integer"),
        (lambda m: m.update(training={"split": {"n_test_questions": -1}}), "training.split.n_test_questions must"),
        (lambda m: m.update(training={"split": {"val_fraction": 0.1, "test_fraction": 1.0}}),
         r"training.split.test_fraction must be a number in \[0, 1\), got 1.0"),
        (lambda m: m.update(training={"split": {"val_fraction": 0.1}}), "records val_fraction or test_fraction without the other"),
        (lambda m: m.update(training={"split": {"val_fraction": None, "test_fraction": 0.2}}),
         r"training.split.val_fraction must be a number in \[0, 1\), got None"),
        (lambda m: m.update(training={"deep": json.loads("[" * 40 + "]" * 40)}), "nested more than 32 levels"),
    ],
)
def test_a_mistyped_descriptive_field_is_refused_by_name(
    tiny_router_path: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    edit_and_reseal(folder, edit)  # consistent hashes and binding: only the value check can catch it
    with pytest.raises(JeirtError, match=message):
        Router.load(folder)


def test_well_typed_metrics_and_nulls_load(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    edit_and_reseal(folder, lambda m: m.update(
        metrics={"how": "text", "heldout": {"auc": 0.75, "n": 100, "ece": None}, "test": None, "note": "free text"},
        training={"split": {"seed": 3, "n_test_questions": 0}, "anything": ["goes", 1, 2.5, None, True]},
    ))
    assert Router.load(folder).manifest["metrics"]["heldout"]["auc"] == 0.75


def test_a_key_given_twice_is_refused(tiny_router_path: Path, tmp_path: Path) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    path = folder / "router.json"
    path.write_text(path.read_text().replace('"label":', '"label": "first", "label":', 1))
    with pytest.raises(JeirtError, match="the key 'label' appears twice"):
        Router.load(folder)


@pytest.mark.parametrize("name", ["router.json", "tokenizer.json", "llms.safetensors"])
def test_one_rule_on_links_for_every_file_router_json_included(
    tiny_router_path: Path, tmp_path: Path, name: str
) -> None:
    folder = copy_router(tiny_router_path, tmp_path / "r")
    outside = tmp_path / f"outside-{name}"
    (folder / name).rename(outside)
    (folder / name).symlink_to(outside)  # the same bytes, so the same hash: only the link gives it away
    for load in (Router.load, read_manifest):
        with pytest.raises(JeirtError, match=f"{name}: a link; every file of a router folder"):
            load(folder)


def _nested(levels: int, container: str) -> Any:
    """A value `levels` objects (or lists) deep around a number."""
    value: Any = 1
    for _ in range(levels):
        value = {"a": value} if container == "object" else [value]
    return value


@pytest.mark.parametrize("container", ["object", "list"])
def test_nesting_is_accepted_to_the_limit_and_refused_past_it(container: str) -> None:
    # router.json itself is level 0 and its field `notes` level 1: a number MAX_DEPTH levels down still reads
    check_values({"notes": _nested(MAX_DEPTH - 1, container)}, "router.json")
    with pytest.raises(JeirtError, match=f"router.json: field notes.* is nested more than {MAX_DEPTH} levels deep"):
        check_values({"notes": _nested(MAX_DEPTH, container)}, "router.json")


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63), 0, True])
def test_integers_within_64_bits_are_accepted(value: int) -> None:
    check_values({"training": {"seed_used": value}}, "router.json")


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**40])
def test_integers_beyond_64_bits_are_refused_by_their_digits(value: int) -> None:
    digits = len(str(value))
    with pytest.raises(JeirtError, match=rf"field training.seed_used is an integer of {digits} digits, beyond 64 bits"):
        check_values({"training": {"seed_used": value}}, "router.json")


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"metrics": {"test": {"auc": "x" * 1000}}}, "metrics.test.auc must be a number or null"),
        ({"training": {"split": {"seed": "x" * 1000}}}, "training.split.seed must be an integer"),
        ({"training": {"split": {"n_test_cells": "x" * 1000}}}, "training.split.n_test_cells must be a whole number"),
    ],
)
def test_a_long_wrong_value_is_cut_short_in_the_message(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(JeirtError) as refused:
        check_values(raw, "router.json")
    message = str(refused.value)
    assert message.startswith(f"router.json: field {field}") and len(message) == 300


@pytest.mark.parametrize("size", [0, 1, 68_745, None])
def test_a_split_size_that_is_a_whole_number_or_null_is_accepted(size: Any) -> None:
    check_values({"training": {"split": {"n_test_cells": size, "seed": 0}}}, "router.json")


@pytest.mark.parametrize("size", [-1, 2.0, True, "3"])
def test_a_split_size_that_is_not_a_whole_number_is_refused(size: Any) -> None:
    with pytest.raises(JeirtError, match="field training.split.n_test_cells must be a whole number >= 0"):
        check_values({"training": {"split": {"n_test_cells": size}}}, "router.json")
