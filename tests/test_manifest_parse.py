"""router.json's parser on its own (no folder, no files): every field it checks is refused at the edge of its range
with a JeirtError naming the field, never a KeyError or IndexError, accepted just inside it, and what it accepts
comes back unchanged from `to_json`.

The other manifest tests tamper with a whole router folder (tests/test_artifact_tamper.py); these hold the parser's
boundaries, which a mutation round found unchecked (docs/research/mutation.md)."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any, Callable

import pytest
from jeirt_lite import JeirtError
from jeirt_lite._limits import MAX_CHARS_PER_TOKEN, MAX_DIM, MAX_LLMS, MAX_NAME_CHARS, MAX_REFERENCE
from jeirt_lite._llm_params import check_costs
from jeirt_lite._manifest import (
    DEFAULT_ALIGNMENT_TOP_K,
    block_llms,
    block_tensors,
    check_feature_width,
    check_llm_names,
    parse_manifest,
)
from jeirt_lite._router import DEFAULT_ROUTER_PATH

WHERE = "r/router.json"


@pytest.fixture(scope="module")
def shipped_raw() -> dict[str, Any]:
    raw: dict[str, Any] = json.loads((DEFAULT_ROUTER_PATH / "router.json").read_text())
    return raw


@pytest.fixture()
def raw(shipped_raw: dict[str, Any]) -> dict[str, Any]:
    """The shipped router's router.json with every optional block present (onboarding records and corrections are
    kept as JSON here; their tensors are checked at load)."""
    out = copy.deepcopy(shipped_raw)
    out["onboarded"] = [{"name": out["llms"][-1], "answers": 12}]
    out["corrections"] = {"llms": [out["llms"][-1]], "rank": 2}
    return out


def test_what_is_accepted_comes_back_unchanged(raw: dict[str, Any]) -> None:
    manifest = parse_manifest(raw, WHERE)
    assert manifest.to_json() == raw
    assert manifest.encoder.batch_size == 8 and manifest.encoder.features_width == 384
    assert manifest.onboarded is not None and manifest.corrections is not None and manifest.neighbours is not None
    del raw["onboarded"], raw["corrections"], raw["encoder"]["batch_size"]
    assert parse_manifest(raw, WHERE).to_json() == raw  # absent blocks stay absent


def test_an_encoder_without_features_has_no_feature_width(raw: dict[str, Any]) -> None:
    del raw["encoder"]["feature_output"]
    encoder = parse_manifest(raw, WHERE).encoder
    assert encoder.feature_dim == 0 and encoder.features_width is None
    assert "feature_output" not in encoder.to_json() and "feature_dim" not in encoder.to_json()


def test_a_text_is_cut_at_its_token_budget_in_characters(raw: dict[str, Any]) -> None:
    raw["encoder"]["max_seq_length"] = 7
    short = parse_manifest(raw, WHERE).encoder.max_chars
    raw["encoder"]["max_seq_length"] = 14
    assert parse_manifest(raw, WHERE).encoder.max_chars == 2 * short == 14 * MAX_CHARS_PER_TOKEN


def test_the_parsed_parts_are_frozen(raw: dict[str, Any]) -> None:
    manifest = parse_manifest(raw, WHERE)
    assert manifest.alignment is not None
    for part, field in ((manifest.encoder, "name"), (manifest.alignment, "top_k"), (manifest.files["llms"], "path")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(part, field, "x")


def test_alignment_top_k_defaults_to_its_documented_value(raw: dict[str, Any]) -> None:
    raw["alignment"]["n_reference"] = 50
    del raw["alignment"]["top_k"]
    alignment = parse_manifest(raw, WHERE).alignment
    assert alignment is not None and alignment.top_k == DEFAULT_ALIGNMENT_TOP_K == 10


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.update(format="aaa"), "format is 'aaa'"),
        (lambda m: m.update(format="zzz"), "format is 'zzz'"),
        (lambda m: m.update(format_version=0), "format_version 0 is not supported"),
        (lambda m: m.update(format_version=3), "format_version 3 is not supported"),
        (lambda m: m.update(format_version=1), "older router format"),
        (lambda m: m.update(onboarded={"name": "x"}), "onboarded must be a list"),
        (lambda m: m["onboarded"].append({"name": "gpt-9"}), r"onboarded\[1\] records LLM 'gpt-9', which this router"),
        (lambda m: m["onboarded"].append({"answers": 3}), r"onboarded\[1\] must be a record with the name of its LLM"),
        (lambda m: m["encoder"].pop("output_name"), "encoder lacks output_name"),
        (lambda m: m["encoder"].pop("name"), "encoder lacks name"),
        (lambda m: m["encoder"].update(input_names=["input_ids"]), "must name two inputs"),
        (lambda m: m["encoder"].update(input_names=["a", "b", "c"]), "must name two inputs"),
        (lambda m: m["files"]["tokenizer"].pop("sha256"), "files.tokenizer must give a path and a sha256"),
        (lambda m: m["files"]["tokenizer"].pop("path"), "files.tokenizer must give a path and a sha256"),
        (lambda m: m["files"]["tokenizer"].update(path=m["files"]["encoder"]["path"]), "name the same file"),
        (lambda m: m["files"]["tokenizer"].update(path="t" * 256), "plain file name"),
        (lambda m: m["files"]["llms"].update(sha256="0" * 63), "files.llms.sha256 must be 64 lowercase hex"),
        (lambda m: m["files"]["llms"].update(sha256="0" * 65), "files.llms.sha256 must be 64 lowercase hex"),
        (lambda m: m["files"]["llms"].update(sha256="A" * 64), "files.llms.sha256 must be 64 lowercase hex"),
        (lambda m: m["files"]["llms"].update(sha256=7), "files.llms.sha256 must be 64 lowercase hex"),
        (lambda m: m["alignment"].pop("n_reference"), "alignment must give threshold and n_reference"),
        (lambda m: m.update(alignment=[0.5]), "field 'alignment' must be an object, got an array$"),
        (lambda m: m["alignment"].pop("threshold"), "alignment must give threshold and n_reference"),
        (lambda m: m["alignment"].update(n_reference=0), "alignment.n_reference"),
        (lambda m: m["alignment"].update(n_reference=MAX_REFERENCE + 1), "alignment.n_reference"),
        (lambda m: m["encoder"].update(feature_dim=MAX_DIM + 1), "encoder.feature_dim"),
        (lambda m: m["encoder"].update(feature_dim=0), "encoder.feature_dim must be in 1"),
        (lambda m: m["encoder"].pop("feature_dim"), "encoder.feature_dim must be an integer in 1"),
        (lambda m: m.pop("alignment"), "the alignment block and files.reference go together"),
        (lambda m: m["files"].pop("reference"), "the alignment block and files.reference go together"),
        (lambda m: m["encoder"].update(output_name="o" * (MAX_NAME_CHARS + 1)), "encoder.output_name must be"),
    ],
)
def test_a_field_out_of_range_is_refused_naming_it(
    raw: dict[str, Any], edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    edit(raw)
    with pytest.raises(JeirtError, match=message):
        parse_manifest(raw, WHERE)


def test_values_just_inside_the_ranges_are_accepted(raw: dict[str, Any]) -> None:
    raw["files"]["tokenizer"]["path"] = "t" * 255
    raw["encoder"]["output_name"] = "o" * MAX_NAME_CHARS
    raw["alignment"].update(n_reference=MAX_REFERENCE, top_k=MAX_REFERENCE)
    manifest = parse_manifest(raw, WHERE)
    assert manifest.files["tokenizer"].path == "t" * 255 and manifest.alignment is not None
    assert manifest.alignment.top_k == MAX_REFERENCE
    raw["alignment"].update(n_reference=1, top_k=1)
    raw["encoder"]["feature_dim"] = MAX_DIM
    manifest = parse_manifest(raw, WHERE)
    assert manifest.alignment is not None and manifest.alignment.n_reference == 1
    assert manifest.encoder.features_width == MAX_DIM


def test_a_global_calibration_whose_llms_have_different_pairs_is_read_as_per_llm(raw: dict[str, Any]) -> None:
    # add-llm and add-llm --update of earlier versions wrote such files: they load, under the kind that is true.
    raw["calibration"]["bias"][-1] = 0.0
    calibration = parse_manifest(raw, WHERE).calibration
    assert calibration is not None and calibration.kind == "per_llm" and calibration.bias[-1] == 0.0
    raw["calibration"]["bias"][-1] = raw["calibration"]["bias"][0]  # one pair for all again, as shipped
    assert parse_manifest(raw, WHERE).calibration.kind == "global"  # type: ignore[union-attr]


@pytest.mark.parametrize(("names", "got"), [("abc", "a string"), (b"abc", "a bytes"), ({"a": 1}, "an object"),
                                           (None, "null")])
def test_llm_names_must_be_a_list(names: Any, got: str) -> None:
    # router.json's llms, named by their JSON type: "an object", never Python's "dict"
    with pytest.raises(JeirtError, match=f"LLM names must be a list of strings, got {got}$"):
        check_llm_names(names, WHERE)


def test_costs_of_the_wrong_type_are_named_in_the_words_of_whoever_gave_them(raw: dict[str, Any]) -> None:
    raw["costs"] = [1.0] * len(raw["llms"])
    with pytest.raises(JeirtError, match="costs must map LLM names to numbers, got an array$"):  # router.json's JSON
        parse_manifest(raw, WHERE)
    with pytest.raises(JeirtError, match="costs must map LLM names to numbers, got a list$"):  # a Python caller's
        check_costs(raw["costs"], raw["llms"], "costs")


def test_the_number_of_llms_is_bounded_at_the_limit() -> None:
    names = [f"m{i}" for i in range(MAX_LLMS)]
    assert len(check_llm_names(names, WHERE)) == MAX_LLMS
    with pytest.raises(JeirtError, match=f"{MAX_LLMS + 1} LLMs, at most {MAX_LLMS}"):
        check_llm_names([*names, "one-more"], WHERE)


@pytest.mark.parametrize(("name", "why"), [
    ("a\x1fb", r"holds a control character \('\\x1f'\)"),
    ("a\x7fb", r"holds a control character \('\\x7f'\)"),
    ("a\nb", r"holds a control character \('\\n'\)"),
    ("caf\udcff", r"holds a lone surrogate \('\\udcff'\), not a character"),
    ("n" * (MAX_NAME_CHARS + 1), r"is too long: 1,001 characters, at most 1,000"),
])
def test_a_name_too_long_or_with_a_control_character_is_refused_saying_which(name: str, why: str) -> None:
    with pytest.raises(JeirtError, match=r"LLM name 1 \(.*\) " + why):
        check_llm_names(["ok", name], WHERE)


@pytest.mark.parametrize("name", ["a b", "a~b", "a\x80b", "modèle-été", "n" * MAX_NAME_CHARS])
def test_printable_names_up_to_the_limit_are_accepted(name: str) -> None:
    assert check_llm_names(["ok", name], WHERE) == ("ok", name)


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ([], "the votes block must list its LLMs"),
        ({"k": 3}, "the votes block must list its LLMs"),
        ({"llms": "a"}, "the votes block must list its LLMs"),
        ({"llms": []}, r"votes name unknown, repeated or no LLMs: \[\]"),
        ({"llms": ["a", "a"]}, r"votes name unknown, repeated or no LLMs: \['a', 'a'\]"),
        ({"llms": ["a", "zz"]}, r"votes name unknown, repeated or no LLMs: \['zz'\]"),
    ],
)
def test_an_optional_blocks_llms_must_be_the_routers_each_once(block: Any, message: str) -> None:
    with pytest.raises(JeirtError, match=message):
        block_llms(block, ["a", "b"], "votes", WHERE)


def test_an_optional_blocks_llms_may_be_any_of_the_routers_in_any_order() -> None:
    assert block_llms({"llms": ["b", "a"]}, ["a", "b", "c"], "votes", WHERE) == ["b", "a"]


def test_the_first_missing_tensor_is_named() -> None:
    assert block_tensors({"x": 1, "y": 2}, ("y", "x"), WHERE) == [2, 1]
    with pytest.raises(JeirtError, match="has no tensor 'b'"):
        block_tensors({"a": 1}, ("a", "b", "c"), WHERE)


def test_a_table_on_the_features_must_be_as_wide_as_they_are() -> None:
    check_feature_width(384, 384, "votes", WHERE)
    for width in (383, 385):
        with pytest.raises(JeirtError, match=f"votes need encoder features of size {width}, the encoder gives 384"):
            check_feature_width(width, 384, "votes", WHERE)
    with pytest.raises(JeirtError, match="the encoder gives none"):
        check_feature_width(384, None, "votes", WHERE)
