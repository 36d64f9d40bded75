"""Hostile cases against the installed `jeirt-lite` console script, each in a subprocess: every one ends in a clean
error (exit code non-zero, exactly one `jeirt-lite: error: ...` line, no traceback, nothing written) or in a
complete, correct result. The classes: options out of bounds, damaged router.json values, links, ids that are not
strings or integers, empty files, NUL bytes, a static router whose graph and fast path disagree, missing output
folders (docs/guide/guarantees.md lists what holds)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pytest
from tiny_router import copy_router, edit_and_reseal

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "python" / "jeirt_lite" / "default_router"
SCRIPT = Path(sys.executable).parent / "jeirt-lite"
BANK = "id,text\nq1,what is the price of a market\nq2,which acid base reaction\n"


@dataclass
class Case:
    """`args` may hold {tmp}, {tiny} and {router} (the folder `router` made); `files` are written into {tmp}."""

    name: str
    args: list[str]
    match: str = ""  # in the error line; "" when the case must succeed
    files: dict[str, bytes] = field(default_factory=dict)
    stdin: bytes = b""
    router: Optional[Callable[[Path, Path], Path]] = None  # (tiny router, tmp) -> a router folder
    code: int = 1
    check: Optional[Callable[[Path, str], None]] = None  # (tmp, stdout) for a case that succeeds


def _raw_edit(text_edit: Callable[[str], str]) -> Callable[[Path, Path], Path]:
    """A copy of the tiny router whose router.json text is edited (NaN and Infinity cannot be re-sealed)."""

    def make(tiny: Path, tmp: Path) -> Path:
        folder = copy_router(tiny, tmp / "edited")
        manifest = folder / "router.json"
        manifest.write_text(text_edit(manifest.read_text()))
        return folder

    return make


def _resealed(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path, Path], Path]:
    """A copy of the tiny router edited and re-sealed (hashes and binding recomputed): consistent but wrong."""

    def make(tiny: Path, tmp: Path) -> Path:
        folder = copy_router(tiny, tmp / "resealed")
        edit_and_reseal(folder, edit)
        return folder

    return make


def _with_metrics(value: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        manifest = json.loads(text)
        manifest["metrics"] = {"heldout": {"auc": "VALUE"}}
        return json.dumps(manifest).replace('"VALUE"', value)

    return edit


def _linked_manifest(tiny: Path, tmp: Path) -> Path:
    folder = copy_router(tiny, tmp / "linked")
    outside = tmp / "elsewhere.json"
    (folder / "router.json").rename(outside)
    (folder / "router.json").symlink_to(outside)  # the same bytes: only the link gives it away
    return folder


def _without_relu(tiny: Path, tmp: Path) -> Path:
    """The shipped static router with the adapter's ReLU removed from encoder.onnx, everything re-sealed."""
    onnx = pytest.importorskip("onnx")
    folder = copy_router(SHIPPED, tmp / "norelu")
    model = onnx.load(str(folder / "encoder.onnx"), load_external_data=False)
    relu = next(node for node in model.graph.node if node.op_type == "Relu")
    for node in model.graph.node:
        node.input[:] = [relu.input[0] if name == relu.output[0] else name for name in node.input]
    model.graph.node.remove(relu)
    (folder / "encoder.onnx").write_bytes(model.SerializeToString())
    edit_and_reseal(folder)
    return folder


def _jsonl(*ids: Any) -> bytes:
    rows = [{"id": ident, "text": f"what is the price of market {i}"} for i, ident in enumerate(ids)]
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def _npy(rows: int, dim: int) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.ones((rows, dim), dtype=np.float32))
    return buffer.getvalue()


def _scores_have_ids(*ids: str) -> Callable[[Path, str], None]:
    def check(tmp: Path, stdout: str) -> None:
        lines = (tmp / "out.csv").read_text().splitlines()
        assert [line.split(",")[0] for line in lines[1:]] == list(ids)

    return check


def _routes_json(tmp: Path, stdout: str) -> None:
    assert [json.loads(line)["text"] for line in stdout.splitlines()] == ["what is the price", "acid base"]


SCORE = ["score", "{tmp}/bank", "-o", "{tmp}/out.csv", "--router", "{tiny}"]
TRAIN = ["train", "--data", "{tmp}/t.csv", "--out", "{tmp}/r"]
LONG = b"question_id,text,llm,correct\nq1,what is the price,a,1\nq1,what is the price,b,0\n"

CASES = [
    # options, bounded where they are parsed
    Case("threads-huge", ["route", "q", "--threads", "100000"], "--threads: must be at most 256", code=2),
    Case("threads-negative", ["route", "q", "--threads", "-3"], "--threads: must be at least 1", code=2),
    Case("threads-word", ["info", "--threads", "many"], "--threads: 'many' is not a whole number", code=2),
    Case("k-zero", ["route", "q", "--k", "0"], "--k: must be at least 1", code=2),
    Case("chunk-zero", [*SCORE, "--chunk-size", "0"], "--chunk-size: must be at least 1", code=2,
         files={"bank": BANK.encode()}),
    Case("cost-nan", ["route", "q", "--cost-weight", "nan"], "--cost-weight: must be a finite number", code=2),
    Case("k-float", ["route", "q", "--k", "1e9"], "--k: '1e9' is not a whole", code=2),
    Case("k-more-than-llms", ["route", "what is the price", "--k", "9", "--router", "{tiny}"],
         "k must be between 1 and the 5 LLMs routed among (the router's LLMs), got 9", code=2),
    Case("k-more-than-the-subset", ["route", "what is the price", "--k", "3", "--llms", "llm-0,llm-1", "--router",
                                    "{tiny}"], "k must be between 1 and the 2 LLMs routed among (the given LLMs)",
         code=2),
    Case("both-cost-rules", ["route", "what is the price", "--cost-weight", "0.1", "--min-probability", "0.5",
                             "--router", "{tiny}"], "use either cost_weight", code=2),
    Case("unpriced-llm-named", ["route", "what is the price", "--cost-weight", "0.1", "--llms", "gemini-3.1-pro"],
         "cost-aware routing needs a cost for every LLM; missing: gemini-3.1-pro", code=2),
    Case("score-empty-output", ["score", "{tmp}/b.csv", "-o", "", "--router", "{tiny}"],
         "argument -o/--output: is empty; give a path", files={"b.csv": b"id,text\nq1,law\n"}, code=2),
    Case("train-empty-out", [*TRAIN[:-2], "--out", ""], "argument --out: is empty; give a path", code=2),
    Case("train-threads-huge", [*TRAIN, "--threads", "100000"], "--threads: must be at most 256", code=2),
    Case("train-threads-negative", [*TRAIN, "--threads", "-3"], "--threads: must be at least 1, got -3", code=2),
    Case("train-dim-negative", [*TRAIN, "--dim", "-5"], "'-5': must be at least 1", code=2),
    Case("train-batch-zero", [*TRAIN, "--batch-size", "0"], "--batch-size: must be at least 1", code=2),
    Case("train-fraction", [*TRAIN, "--val-fraction", "1.5"], "--val-fraction: must be a finite number in (0, 1)",
         code=2),
    # training tables: columns named from the command line, rows numbered as every command numbers them
    Case("train-unknown-column", [*TRAIN, "--text-column", "body"], "no column 'body' for the text",
         files={"t.csv": LONG}),
    Case("train-named-columns-bad-row", [*TRAIN, "--question-column", "q", "--text-column", "body",
                                         "--llm-column", "who", "--correct-column", "ok"],
         "t.csv: data row 2 (1-based, header not counted): label not 0/1/true/false",
         files={"t.csv": b"q,body,who,ok\nq1,what is the price,a,1\nq1,what is the price,b,maybe\n"}),
    Case("train-columns-on-a-folder", ["train", "--data", "{tmp}", "--out", "{tmp}/r", "--text-column", "body"],
         "a data folder's files have fixed column names"),
    Case("train-missing-parent", ["train", "--data", "{tmp}/t.csv", "--out", "{tmp}/a/b/r"],
         "no such folder for the output", files={"t.csv": LONG}),
    # router.json: every value checked, named by field
    Case("manifest-nan", ["info", "--router", "{router}"], "field metrics.heldout.auc is nan",
         router=_raw_edit(_with_metrics("NaN"))),
    Case("manifest-infinity", ["info", "--router", "{router}"], "field metrics.heldout.auc is -inf",
         router=_raw_edit(_with_metrics("-Infinity"))),
    Case("manifest-overflow", ["info", "--router", "{router}"], "field metrics.heldout.auc is inf",
         router=_raw_edit(_with_metrics("1e999"))),
    Case("manifest-huge-int", ["info", "--router", "{router}"], "field metrics.heldout.auc is an integer of 40",
         router=_raw_edit(_with_metrics("1" * 40))),
    Case("manifest-string-metric", ["info", "--router", "{router}"], "field metrics.heldout.auc must be a number",
         router=_resealed(lambda m: m.update(metrics={"heldout": {"auc": "high"}}))),
    Case("manifest-split-list", ["info", "--router", "{router}"], "field training.split must be an object",
         router=_resealed(lambda m: m.update(training={"split": [1, 2]}))),
    Case("manifest-nan-route", ["route", "what is the price", "--router", "{router}"], "field training.lr is nan",
         router=_raw_edit(lambda text: text.replace('"training": null', '"training": {"lr": NaN}'))),
    Case("manifest-repeated-key", ["info", "--router", "{router}"], "the key 'dim' appears twice",
         router=_raw_edit(lambda text: text.replace('"dim":', '"dim": 3, "dim":', 1))),
    Case("manifest-link", ["info", "--router", "{router}"], "router.json: a link", router=_linked_manifest),
    # ids: strings or integers, no NUL; the same empty-file rule for every format
    Case("id-null", [*SCORE], "data row 2 (1-based, blank lines not counted, line 2): has no id",
         files={"bank": _jsonl("a", None)}),
    Case("id-list", [*SCORE], "data row 1 (1-based, blank lines not counted, line 1): id '[1, 2]' is a list",
         files={"bank": _jsonl([1, 2])}),
    Case("id-object", [*SCORE], "id \"{'a': 1}\" is a dict", files={"bank": _jsonl({"a": 1})}),
    Case("id-bool", [*SCORE], "id 'True' is a bool", files={"bank": _jsonl(True)}),
    Case("id-float", [*SCORE], "id '1.5' is a float", files={"bank": _jsonl(1.5)}),
    Case("id-nul-csv", [*SCORE], "data row 2 (1-based, header not counted, ending on line 3): id holds a NUL",
         files={"bank": b"id,text\nq1,what is the price\nq\x002,acid base\n"}),
    Case("ids-ok", [*SCORE], files={"bank": _jsonl("a", 7, "c")}, check=_scores_have_ids("a", "7", "c")),
    Case("empty-jsonl", [*SCORE], "empty file", files={"bank": b""}),
    Case("blank-jsonl", [*SCORE], "empty file", files={"bank": b"\n\n  \n"}),
    Case("empty-csv", [*SCORE], "empty file", files={"bank": b""}),
    # NUL inside a text, from stdin as from a file
    Case("route-nul-stdin", ["route", "--router", "{tiny}"], "stdin line 2: text holds a NUL",
         stdin=b"what is the price\nacid\x00base\n"),
    Case("route-stdin-ok", ["route", "--router", "{tiny}", "--json"], stdin=b"what is the price\n\nacid base\n",
         check=_routes_json),
    Case("ids-file-nul", ["score", "--vectors", "{tmp}/v.npy", "--ids", "{tmp}/ids.txt", "-o", "{tmp}/out.csv",
                          "--router", "{tiny}", "--no-neighbours"], "ids.txt: id 2 (1-based): id holds a NUL",
         files={"v.npy": _npy(3, 4), "ids.txt": b"a\nb\x00c\nd\n"}),
    Case("manifest-dim-overflow", ["route", "what is the price", "--router", "{router}"], "field dim is inf",
         router=_raw_edit(lambda text: text.replace('"dim": 4', '"dim": 1e400', 1))),
    Case("report-missing-parent", ["report", "--router", "{tiny}", "--data", "{tmp}", "-o", "{tmp}/a/b/r.html"],
         "does not exist"),
    # a static router's graph must compute what its fast path computes
    Case("static-graph-altered", ["route", "what is the price", "--router", "{router}"],
         "encoder.onnx: computes other question vectors", router=_without_relu),
    # one rule on missing output folders: refused, never created
    Case("add-llm-missing-parent", ["add-llm", "--router", "{tiny}", "--name", "x", "--answers", "{tmp}/a.csv",
                                    "-o", "{tmp}/a/b/c"], "no such folder for the output",
         files={"a.csv": b"text,correct\nwhat is the price,1\n"}),
    Case("score-missing-parent", ["score", "{tmp}/bank", "-o", "{tmp}/a/b/out.csv", "--router", "{tiny}"],
         "no such folder for the output", files={"bank": BANK.encode()}),
]


def _bank_name(case: Case) -> str:
    """The bank's suffix from the case: JSONL unless its bytes look like a CSV header."""
    data = case.files.get("bank", b"")
    return "bank.csv" if data.startswith(b"id,") or case.name == "empty-csv" else "bank.jsonl"


def _run(case: Case, tmp: Path, tiny: Path) -> tuple[subprocess.CompletedProcess[str], set[Path]]:
    for name, data in case.files.items():
        (tmp / (_bank_name(case) if name == "bank" else name)).write_bytes(data)
    router = case.router(tiny, tmp) if case.router is not None else None
    before = set(tmp.rglob("*"))
    args = [
        arg.replace("{tmp}/bank", str(tmp / _bank_name(case))).replace("{tmp}", str(tmp))
        .replace("{tiny}", str(tiny)).replace("{router}", str(router))
        for arg in case.args
    ]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    raw = subprocess.run([str(SCRIPT), *args], input=case.stdin, capture_output=True, timeout=120, env=env, check=False)
    done = subprocess.CompletedProcess(
        raw.args, raw.returncode, raw.stdout.decode("utf-8", "replace"), raw.stderr.decode("utf-8", "replace")
    )
    return done, set(tmp.rglob("*")) - before


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_hostile_case_ends_cleanly(case: Case, tmp_path: Path, tiny_router_path: Path) -> None:
    if not SCRIPT.is_file():
        pytest.skip(f"no jeirt-lite console script next to {sys.executable} (install the package)")
    done, written = _run(case, tmp_path, tiny_router_path)
    assert "Traceback" not in done.stderr, done.stderr
    if not case.match:
        assert done.returncode == 0, done.stderr
        assert case.check is not None
        case.check(tmp_path, done.stdout)
        return
    errors = [line for line in done.stderr.splitlines() if line.startswith("jeirt-lite: error: ")]
    assert done.returncode == case.code, done.stderr
    assert len(errors) == 1, done.stderr
    assert case.match in errors[0], errors[0]
    assert not written, f"written: {sorted(map(str, written))}"
