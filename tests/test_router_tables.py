"""What a router holds and the copies that change its LLMs (jeirt_lite._router_tables), at the edges a mutation
round found untested: the cores a process may use, keyword-only options, shapes of vectors passed in, selecting
an LLM twice, merging or replacing costs, removing one LLM from the middle, and read-only tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from child_env import cli_env
from jeirt_lite import EncodedQuestions, JeirtError, Router, _core
from jeirt_lite._limits import MAX_THREADS
from jeirt_lite._manifest import freeze, thaw
from jeirt_lite._router import DEFAULT_ROUTER_PATH
from jeirt_lite._router_tables import usable_cores
from jeirt_lite.artifact import load_artifact


@pytest.fixture(scope="module")
def router(tiny_router_path: Path) -> Router:
    return Router.load(tiny_router_path, threads=1)


def _cores_in_a_child(pin_to_one: bool) -> list[str]:
    """usable_cores() and the default thread count, in a child process (pinned to one core when asked)."""
    pin = f"import os; os.sched_setaffinity(0, {{{min(os.sched_getaffinity(0))}}}); " if pin_to_one else ""
    code = pin + "from jeirt_lite._router_tables import resolve_threads, usable_cores; " \
                 "print(usable_cores(), resolve_threads(None))"
    child = subprocess.run(
        [sys.executable, "-c", code], env=cli_env(), capture_output=True, text=True, timeout=60, check=True
    )
    return child.stdout.split()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs a CPU affinity mask (Linux)")
def test_usable_cores_counts_the_cores_the_process_may_run_on_not_the_machine() -> None:
    # Read from the operating system as Rust's thread pools read it (the affinity mask and the cgroup's CPU quota,
    # which os.sched_getaffinity does not show), not from the machine's core count.
    assert _cores_in_a_child(pin_to_one=True) == ["1", "1"]
    cores, threads = map(int, _cores_in_a_child(pin_to_one=False))
    assert 1 <= cores <= len(os.sched_getaffinity(0)) and threads == min(cores, MAX_THREADS)
    assert usable_cores() == _core.available_cores()


def test_options_after_the_first_argument_are_keyword_only(router: Router, tiny_router_path: Path) -> None:
    artifact = load_artifact(tiny_router_path)
    with pytest.raises(TypeError):
        Router(artifact, 1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        router.with_calibration([1.0] * 5, [0.0] * 5, "global")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        router.with_costs({"llm-0": 1.0}, True)  # type: ignore[call-arg]


def test_a_static_router_built_from_its_artifact_encodes_in_rust_by_default() -> None:
    router = Router(load_artifact(DEFAULT_ROUTER_PATH), threads=1)
    assert router.fast_path is True
    assert router.path == DEFAULT_ROUTER_PATH


def test_path_is_the_folder_it_was_loaded_from(router: Router, tiny_router_path: Path) -> None:
    assert router.path == tiny_router_path
    assert router.fast_path is False  # a graph without a static table: encoded by ONNX Runtime


@pytest.mark.parametrize("shape", [(2, 5), (2, 3), (2, 4, 1), (4,)])
def test_question_vectors_of_another_shape_are_refused_by_shape(router: Router, shape: tuple[int, ...]) -> None:
    with pytest.raises(JeirtError, match=rf"question vectors must have shape \(N, 4\), got \({shape[0]},"):
        router.predict_proba(EncodedQuestions(np.ones(shape, np.float32)))


def test_selecting_an_llm_twice_is_refused(router: Router) -> None:
    with pytest.raises(JeirtError, match="each LLM may be selected once"):
        router.select_llms(["llm-2", "llm-0", "llm-2"])


def test_costs_merge_over_the_stored_ones_unless_replaced(router: Router) -> None:
    priced = router.with_costs({"llm-0": 1.0, "llm-1": 2.0})
    assert priced.with_costs({"llm-1": 5.0}).costs == {"llm-0": 1.0, "llm-1": 5.0}
    assert priced.with_costs({"llm-1": 5.0}, replace=True).costs == {"llm-1": 5.0}
    assert priced.with_costs({"llm-1": 5.0}, replace=True).priced_llms == ("llm-1",)


def test_removing_an_llm_from_the_middle_keeps_every_other_row(router: Router) -> None:
    smaller = router.remove_llm("llm-2")
    assert smaller.llms == ("llm-0", "llm-1", "llm-3", "llm-4")
    np.testing.assert_array_equal(smaller.llm_vectors, router.llm_vectors[[0, 1, 3, 4]])


def test_removing_the_only_llm_says_so_in_remove_llm_words(router: Router) -> None:
    # It said "select at least one LLM", select_llms' words, to a caller who never called select_llms.
    with pytest.raises(JeirtError, match=r"cannot remove 'llm-3': it is this router's only LLM"):
        router.select_llms(["llm-3"]).remove_llm("llm-3")


def test_every_derived_router_keeps_its_llm_table_read_only(router: Router) -> None:
    derived = [
        router.select_llms(["llm-3", "llm-1"]),
        router.remove_llm("llm-0"),
        router.with_costs({"llm-0": 1.0}),
        router.rename_llms({"llm-0": "renamed"}),
        router.with_calibration([1.0] * 5, [0.0] * 5),
    ]
    for copy in derived:
        assert not copy.llm_vectors.flags.writeable
        with pytest.raises(ValueError):
            copy.llm_vectors[0, 0] = 1.0


def test_the_record_of_unanswered_benchmarks_follows_the_llms_a_copy_keeps(router: Router, tmp_path: Path) -> None:
    # training.unanswered_benchmarks marks an LLM in score --forecast and info. A removed LLM's entry left behind
    # marked a new LLM added later under its name (add_llm, from answers on every benchmark) with the old gaps.
    training = {**thaw(router.manifest.training or {}), "unanswered_benchmarks": {"llm-1": ["gsm"], "llm-3": ["math"]}}
    recorded = router._with_llms(router.llms, router.llm_vectors, training=freeze(training))

    def record(copy: Router) -> object:
        return thaw(copy.manifest.training).get("unanswered_benchmarks")

    assert record(recorded.remove_llm("llm-1")) == {"llm-3": ["math"]}
    assert record(recorded.select_llms(["llm-3", "llm-0"])) == {"llm-3": ["math"]}
    assert record(recorded.select_llms(["llm-0"])) is None  # the key goes, as train writes no empty record
    assert record(recorded.with_costs({"llm-0": 1.0})) == {"llm-1": ["gsm"], "llm-3": ["math"]}
    again = recorded.remove_llm("llm-1").add_llm("llm-1", EncodedQuestions(np.eye(4, dtype=np.float32)), [1, 0, 1, 0])
    assert record(again) == {"llm-3": ["math"]}
    assert record(recorded.rename_llms({"llm-3": "x"}).remove_llm("x")) == {"llm-1": ["gsm"]}
    saved = Router.load(recorded.remove_llm("llm-3").save(tmp_path / "router"))
    assert record(saved) == {"llm-1": ["gsm"]}


def _answers() -> tuple[EncodedQuestions, list[int]]:
    """Answers of a new LLM on the tiny router's questions (no features: no correction, router scale 1)."""
    return EncodedQuestions(np.eye(4, dtype=np.float32)), [1, 0, 1, 0]


def test_a_calibration_is_global_only_while_every_llm_has_the_one_pair(router: Router, tmp_path: Path) -> None:
    # add_llm gives the new LLM its own pair (scale 1, bias 0); router.json and info said "global" after it.
    shared = router.with_calibration([2.0] * 5, [0.5] * 5, kind="global")
    grown = shared.add_llm("new", *_answers())
    assert grown.calibration is not None and grown.calibration.kind == "per_llm"
    saved = grown.save(tmp_path / "grown")
    assert json.loads((saved / "router.json").read_text())["calibration"]["kind"] == "per_llm"
    assert Router.load(saved).calibration.kind == "per_llm"  # type: ignore[union-attr]
    # The new LLM's pair is the others' one: the calibration is still one pair for all, through a save.
    identity = router.with_calibration([1.0] * 5, [0.0] * 5, kind="global").add_llm("new", *_answers())
    assert identity.calibration is not None and identity.calibration.kind == "global"
    assert Router.load(identity.save(tmp_path / "identity")).calibration.kind == "global"  # type: ignore[union-attr]
    assert grown.select_llms(["llm-1", "llm-0"]).calibration.kind == "per_llm"  # type: ignore[union-attr]
    with pytest.raises(JeirtError, match=r"kind 'global' is one scale and bias for every LLM, but LLM 2 \(in table "
                                         r"order\) has \(3, 0\) and LLM 0 \(1, 0\); give kind 'per_llm'"):
        router.with_calibration([1.0, 1.0, 3.0, 1.0, 1.0], [0.0] * 5, kind="global")


@pytest.mark.parametrize(("scale", "bias", "named"), [
    # The first LLM whose pair is not LLM 0's is named, whichever of its scale and bias differs (higher or lower),
    # with LLM 0's own pair beside it: a mutation round found a later LLM, the pair of LLM 1 or of the last LLM,
    # and a bias above LLM 0's read as the same pair, all passing the one case tested.
    ([1.0, 1.0, 1.0, 1.0, 2.0], [0.0, 0.5, 0.0, 0.0, 0.0], r"LLM 1 \(in table order\) has \(1, 0\.5\) and LLM 0 \(1, 0\)"),
    ([1.0] * 5, [0.0, 0.0, -0.5, 0.5, 0.25], r"LLM 2 \(in table order\) has \(1, -0\.5\) and LLM 0 \(1, 0\)"),
    ([1.0] * 5, [0.0, 0.0, 0.0, 0.5, 0.0], r"LLM 3 \(in table order\) has \(1, 0\.5\) and LLM 0 \(1, 0\)"),
    ([1.0, 2.0, 1.0, 1.0, 1.0], [0.0] * 5, r"LLM 1 \(in table order\) has \(2, 0\) and LLM 0 \(1, 0\)"),
    ([2.0, 2.0, 1.0, 2.0, 2.0], [0.0] * 5, r"LLM 2 \(in table order\) has \(1, 0\) and LLM 0 \(2, 0\)"),
    ([1.0, 1.0, 3.0, 1.0, 1.0], [0.0, 0.0, 0.5, 0.25, 0.0], r"LLM 2 \(in table order\) has \(3, 0\.5\) and LLM 0 \(1, 0\)"),
])
def test_a_global_calibration_refused_names_the_first_llm_whose_pair_differs(
    router: Router, scale: list[float], bias: list[float], named: str
) -> None:
    with pytest.raises(JeirtError, match=rf"kind 'global' is one scale and bias for every LLM, but {named}; give kind"):
        router.with_calibration(scale, bias, kind="global")


def test_a_global_calibration_is_checked_whatever_string_object_names_its_kind(router: Router) -> None:
    # A kind read from a file or a command line is a string equal to "global" but not the interned literal: it is
    # refused over different pairs all the same (compared by identity, it passed unchecked).
    kind = "".join(["glo", "bal"])
    with pytest.raises(JeirtError, match="kind 'global' is one scale and bias for every LLM, but LLM 2"):
        router.with_calibration([1.0, 1.0, 3.0, 1.0, 1.0], [0.0] * 5, kind=kind)


def test_a_global_calibration_of_one_llm_is_one_pair(router: Router, tmp_path: Path) -> None:
    one = router.select_llms(["llm-3"]).with_calibration([2.0], [0.5], kind="global")
    assert one.calibration is not None and one.calibration.kind == "global"
    selected = router.with_calibration([2.0] * 5, [0.5] * 5, kind="global").select_llms(["llm-1"])
    loaded = Router.load(selected.save(tmp_path / "one")).calibration
    assert loaded is not None and loaded.kind == "global" and loaded.scale.tolist() == [2.0]


def test_removing_an_onboarded_llm_leaves_no_record_of_it(router: Router, tmp_path: Path) -> None:
    # remove_llm and select_llms kept a removed LLM's onboarding record, which info then printed for an LLM the
    # router no longer held (and a new LLM added later under its name would have shown two histories).
    grown = router.add_llm("gone-llm", *_answers(), cost=2.0).add_llm("kept-llm", *_answers(), cost=3.0)
    smaller = grown.remove_llm("gone-llm")
    assert [record["name"] for record in smaller.manifest["onboarded"]] == ["kept-llm"]
    assert smaller.costs == {"kept-llm": 3.0}
    text = (smaller.save(tmp_path / "smaller") / "router.json").read_text()
    assert "gone-llm" not in text and Router.load(tmp_path / "smaller").manifest["onboarded"][0]["name"] == "kept-llm"
    selected = grown.select_llms(["llm-0", "llm-1"])
    assert "onboarded" not in selected.manifest and "costs" in selected.manifest and not selected.costs
    assert "-llm" not in (selected.save(tmp_path / "selected") / "router.json").read_text()
    renamed = grown.rename_llms({"gone-llm": "x"}).remove_llm("x")
    assert [record["name"] for record in renamed.manifest["onboarded"]] == ["kept-llm"]
