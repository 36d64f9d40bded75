"""The Ray engine's worker (jeirt_lite._ray.worker) without a Ray runtime: its scorer on Arrow batches, the router
files shipped to it, a bank without ids read with its rows numbered (jeirt_lite._ray.row_numbers) and the scores
of no rows. The bank is tests/ray_fakes.py's; tests/test_ray.py runs the whole pipeline on a real runtime.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from jeirt_lite._artifact_files import read_router_files
from jeirt_lite._errors import JeirtError
from jeirt_lite.artifact import read_manifest

pytest.importorskip("ray", reason='needs Ray: pip install "jeirt-lite[ray]"')

from jeirt_lite._ray.worker import BankScorer  # noqa: E402 - after the skip: the engine's parts import Ray
from ray_fakes import IDS, batch  # noqa: E402


@pytest.fixture(scope="module")
def texts(real_texts: list[str]) -> list[str]:
    return real_texts[: len(IDS)]


def scorer(router_path: Path, *, k: int = 2, all_probabilities: bool = False, skip_bad: bool = False,
           router_files: Optional[dict[str, bytes]] = None) -> Any:
    return BankScorer(str(router_path), "text", "id", k, all_probabilities, skip_bad, 1, router_files)


# -- the worker's scorer ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("all_probabilities", [False, True])
def test_a_batch_whose_every_row_is_skipped_gives_an_empty_table_of_the_scored_schema(
    tiny_router_path: Path, texts: list[str], all_probabilities: bool
) -> None:
    score = scorer(tiny_router_path, k=2, all_probabilities=all_probabilities, skip_bad=True)
    full = score(batch(IDS, texts))
    empty = score(batch(IDS, [None, " ", "", None]))
    assert empty.num_rows == 0
    assert empty.schema == full.schema


def test_large_string_ids_come_out_as_the_single_machine_writer_s_strings(
    tiny_router_path: Path, texts: list[str]
) -> None:
    score = scorer(tiny_router_path)
    plain = score(batch(IDS, texts))
    large = score(batch(IDS, texts, pa.large_string()))
    assert large.schema.field("id").type == pa.string()
    assert large.equals(plain)


def test_skipped_rows_take_their_ids_with_them(tiny_router_path: Path, texts: list[str]) -> None:
    score = scorer(tiny_router_path, skip_bad=True)
    got = score(batch(IDS, [texts[0], None, texts[2], "  "]))
    assert got.column("id").to_pylist() == ["q0", "q2"]
    assert got.equals(score(batch(["q0", "q2"], [texts[0], texts[2]])))
    with pytest.raises(JeirtError, match="row with id 'q1': has no text"):
        scorer(tiny_router_path)(batch(IDS, [texts[0], None, texts[2], texts[3]]))


def test_a_worker_given_the_router_s_files_loads_its_own_copy(
    tiny_router_path: Path, tmp_path: Path, texts: list[str]
) -> None:
    files = read_router_files(tiny_router_path)
    shipped = scorer(tmp_path / "no_such_router", router_files=files)  # the path is not read
    assert shipped(batch(IDS, texts)).equals(scorer(tiny_router_path)(batch(IDS, texts)))


def test_the_router_s_files_are_every_file_of_its_folder_and_need_a_router_json(
    tiny_router_path: Path, tmp_path: Path
) -> None:
    files = read_router_files(tiny_router_path)
    assert sorted(files) == sorted(entry.name for entry in tiny_router_path.iterdir() if entry.is_file())
    assert files["router.json"] == (tiny_router_path / "router.json").read_bytes()
    folder = tmp_path / "not_a_router"
    (folder / "sub").mkdir(parents=True)
    (folder / "table.bin").write_bytes(b"\0")
    with pytest.raises(JeirtError, match="not_a_router: not a router folder"):
        read_router_files(folder)


# -- a bank without ids: its rows numbered ------------------------------------------------------------------------


def test_a_bank_without_ids_is_read_with_its_data_row_numbers_group_by_group(tmp_path: Path) -> None:
    from jeirt_lite._ray.row_numbers import ROW_NUMBER_COLUMN, read_row_groups, row_groups

    texts = [f"question {i}" for i in range(13)]
    path = tmp_path / "bank.parquet"
    pq.write_table(pa.table({"other": list(range(13)), "body": texts}), path, row_group_size=5)
    groups = row_groups(path)
    assert groups == [{"group": 0, "first": 1}, {"group": 1, "first": 6}, {"group": 2, "first": 11}]
    # Each read task reads its groups, batch_size rows at a time, in any order the tasks run.
    later, earlier = pa.Table.from_pylist(groups[1:]), pa.Table.from_pylist(groups[:1])
    tables = list(read_row_groups(later, str(path), "body", 2)) + list(read_row_groups(earlier, str(path), "body", 2))
    assert [table.num_rows for table in tables] == [2, 2, 1, 2, 1, 2, 2, 1]
    assert all(table.column_names == [ROW_NUMBER_COLUMN, "body"] for table in tables)
    numbered = pa.concat_tables(tables).sort_by(ROW_NUMBER_COLUMN)
    assert numbered.column(ROW_NUMBER_COLUMN).to_pylist() == list(range(1, 14))
    assert numbered.column(ROW_NUMBER_COLUMN).type == pa.int64()  # as one machine writes row numbers
    assert numbered.column("body").to_pylist() == texts


@pytest.mark.parametrize("row_group_size", [None, 0])
def test_an_empty_bank_without_ids_still_gives_its_columns(tmp_path: Path, row_group_size: Optional[int]) -> None:
    from jeirt_lite._ray.row_numbers import ROW_NUMBER_COLUMN, read_row_groups, row_groups

    path = tmp_path / "empty.parquet"
    empty = pa.table({"text": pa.array([], pa.large_string())})
    if row_group_size is None:
        pq.write_table(empty, path)  # one row group of no rows
    else:
        pq.ParquetWriter(str(path), empty.schema).close()  # no row group at all
    tables = list(read_row_groups(pa.Table.from_pylist(row_groups(path)), str(path), "text", 4))
    assert [table.num_rows for table in tables] == [0]
    assert tables[0].schema == pa.schema([(ROW_NUMBER_COLUMN, pa.int64()), ("text", pa.large_string())])


def test_a_bad_row_of_a_numbered_bank_is_named_by_its_number(tiny_router_path: Path, texts: list[str]) -> None:
    from jeirt_lite._ray.row_numbers import ROW_NUMBER_COLUMN

    numbered = BankScorer(str(tiny_router_path), "text", ROW_NUMBER_COLUMN, 1, False, False, 1)
    rows = pa.table({ROW_NUMBER_COLUMN: pa.array([7, 8], pa.int64()), "text": [texts[0], " "]})
    with pytest.raises(JeirtError, match=r"^data row 8 \(1-based\): text is empty"):
        numbered(rows)


# -- the scores of no rows ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("id_type", "written"), [(pa.string(), pa.string()), (pa.large_string(), pa.string()),
                                                  (pa.int64(), pa.int64())])
def test_the_scores_of_no_rows_have_the_columns_and_types_of_a_scored_batch(
    tiny_router_path: Path, texts: list[str], id_type: Any, written: Any
) -> None:
    from jeirt_lite._ray.worker import empty_scores

    llms = read_manifest(tiny_router_path).llms
    for k, all_probabilities in ((1, False), (3, True)):
        ids = list(range(len(texts))) if pa.types.is_integer(id_type) else IDS
        full = scorer(tiny_router_path, k=k, all_probabilities=all_probabilities)(batch(ids, texts, id_type))
        empty = empty_scores(pa, id_type, k, llms, all_probabilities)
        assert empty.num_rows == 0 and empty.schema == full.schema
        assert empty.schema.field("id").type == written


# -- routing by a minimum probability: the fallback column --------------------------------------------------------


def test_a_worker_routing_by_a_minimum_probability_marks_the_fallbacks_as_route_does(
    tiny_router_path: Path, texts: list[str]
) -> None:
    from jeirt_lite import Router

    llms = read_manifest(tiny_router_path).llms
    costs = {name: float(i + 1) for i, name in enumerate(llms)}
    router = Router.load(tiny_router_path, threads=1).with_costs(costs, replace=True)
    best = router.route(texts, 1).probabilities[:, 0]
    threshold = float(np.sort(best)[len(best) // 2])  # the upper half clears it (>=), the lower half falls back
    expected = router.route(texts, 2, min_probability=threshold)
    assert expected.fallback is not None and expected.fallback.any() and not expected.fallback.all()
    score = BankScorer(str(tiny_router_path), "text", "id", 2, True, True, 1, None,
                       {"llms": None, "cost_weight": 0.0, "min_probability": threshold}, costs)
    got = score(batch(IDS, texts))
    assert got.column_names[-1] == "fallback" and got.schema.field("fallback").type == pa.bool_()
    assert got.column("fallback").to_pylist() == expected.fallback.tolist()
    assert [list(pair) for pair in zip(got.column("llm_1").to_pylist(), got.column("llm_2").to_pylist())] == \
        expected.names
    kept = score(batch(IDS, [texts[0], None, texts[2], " "]))  # --skip-bad: the kept rows keep their flags
    assert kept.column("fallback").to_pylist() == expected.fallback[[0, 2]].tolist()
    skipped = score(batch(IDS, [None, " ", "", None]))
    assert skipped.num_rows == 0 and skipped.schema == got.schema
    plain = BankScorer(str(tiny_router_path), "text", "id", 2, True, True, 1, None,
                       {"llms": None, "cost_weight": 0.001, "min_probability": None}, costs)
    assert "fallback" not in plain(batch(IDS, texts)).column_names


def test_the_scores_of_no_rows_routed_by_a_minimum_probability_end_in_a_bool_fallback_column(
    tiny_router_path: Path,
) -> None:
    from jeirt_lite._ray.worker import empty_scores

    llms = read_manifest(tiny_router_path).llms
    empty = empty_scores(pa, pa.string(), 1, llms, False, fallback=True)
    assert empty.column_names == ["id", "llm_1", "p_1", "difficulty", "fallback"]
    assert empty.schema.field("fallback").type == pa.bool_()
    assert "fallback" not in empty_scores(pa, pa.string(), 1, llms, False).column_names
