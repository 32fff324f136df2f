"""Per-question results: long format, deterministic files, exact round trips, resumable parts."""

import random

import pandas as pd
import pyarrow as pa
import pytest

from harness.errors import HarnessError, InputError
from harness.grid.paths import part_path
from harness.pipeline.parts import combine_parts, write_part
from harness.grid.results import COLUMNS, ResultRow, question_rows, read_per_question, write_per_question
from metrics_support import question


def row(
    arm="S", retriever="bm25", qid="q1", metric="rec@512t", value=0.5, cluster="c1", stratum="", dataset="d"
):
    return ResultRow(dataset, arm, retriever, qid, cluster, stratum, metric, value)


ROWS = [
    row(arm="S+T", qid="1909.00694", metric="rec@1", value=1 / 3, cluster="1909.00694"),
    row(arm="S", qid="007", metric="rec@512t", value=0.1, cluster="p7"),
    row(arm="S", qid="007", metric="hit@1", value=1.0, cluster="p7"),
    row(arm="E", retriever="hybrid", qid="007", metric="mrr@10", value=0.0, cluster="p7"),
]


def test_round_trip_is_exact_and_sorted(tmp_path):
    pq_path, csv_path = tmp_path / "d.parquet", tmp_path / "d.csv"
    assert write_per_question(ROWS, pq_path, csv_path) == 4
    expected_order = [("E", "hybrid", "007", "mrr@10"), ("S", "bm25", "007", "hit@1"),
                      ("S", "bm25", "007", "rec@512t"), ("S+T", "bm25", "1909.00694", "rec@1")]
    for path in (pq_path, csv_path):
        df = read_per_question(path)
        assert tuple(df.columns) == COLUMNS
        assert list(zip(df.arm, df.retriever, df.qid, df.metric)) == expected_order
        assert df.value.tolist() == [0.0, 1.0, 0.1, 1 / 3]  # bit-identical, including 1/3
        assert df.stratum.tolist() == ["", "", "", ""]  # empty stratum is "", not NaN


def test_read_ids_share_one_object_per_distinct_value(tmp_path):
    # Millions of rows repeat a few dozen ids; one str object per cell made the paper-size table 1.5 GB.
    rows = [
        row(arm=f"A{i % 3}", qid=f"q{i % 50}", cluster=f"c{i % 50}", metric=f"m{i // 150}")
        for i in range(600)
    ]
    write_per_question(rows, tmp_path / "d.parquet", tmp_path / "d.csv")
    for path in (tmp_path / "d.parquet", tmp_path / "d.csv"):
        df = read_per_question(path)
        for column in ("dataset", "arm", "qid", "metric", "stratum"):
            assert len({id(v) for v in df[column]}) == df[column].nunique(), (path.suffix, column)
        assert df.arm.map(type).eq(str).all() and df.dtypes.arm == object  # noqa: E721 (a dtype, not a type)


def test_csv_floats_use_repr(tmp_path):
    write_per_question(ROWS, tmp_path / "d.parquet", tmp_path / "d.csv")
    lines = (tmp_path / "d.csv").read_text().splitlines()
    assert lines[0] == "dataset,arm,retriever,qid,cluster,stratum,metric,value"
    assert lines[1] == "d,E,hybrid,007,p7,,mrr@10,0.0"
    assert lines[4] == "d,S+T,bm25,1909.00694,1909.00694,,rec@1,0.3333333333333333"


def test_same_rows_in_any_order_give_identical_bytes(tmp_path):
    write_per_question(ROWS, tmp_path / "a.parquet", tmp_path / "a.csv")
    shuffled = ROWS[:]
    random.Random(3).shuffle(shuffled)
    write_per_question(shuffled, tmp_path / "b.parquet", tmp_path / "b.csv")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_question_rows_carry_cluster_and_stratum():
    q = question("a b")
    rows = question_rows("d", "S", "bm25", q, [("hit@1", 1), ("rec@1", 0.5)])
    assert rows == [row(metric="hit@1", value=1.0), row(metric="rec@1", value=0.5)]
    assert isinstance(rows[0].value, float)


def test_repeated_result_is_refused(tmp_path):
    with pytest.raises(
        ValueError,
        match=r"x.parquet: row 1: repeated result for dataset 'd', arm 'S', retriever 'bm25', "
        r"qid 'q1', metric 'rec@512t' \(first at row 0\)",
    ):
        write_per_question([row(), row(value=0.25)], tmp_path / "x.parquet", None)


@pytest.mark.parametrize("value", [1.5, -0.1, float("nan")])
def test_value_outside_unit_interval_is_refused(tmp_path, value):
    with pytest.raises(
        ValueError,
        match=r"row 0: metric values must lie in \[0, 1\]; rec@512t = (1.5|-0.1|nan) for qid 'q1' \(S / "
              r"bm25\)",
    ):
        write_per_question([row(value=value)], tmp_path / "x.parquet", None)


def test_qid_with_two_clusters_is_refused(tmp_path):
    with pytest.raises(
        ValueError,
        match=r"row 1: qid 'q1' of dataset 'd' has more than one cluster or stratum "
        r"\('c2' / '', before 'c1' / ''\)",
    ):
        write_per_question([row(), row(metric="hit@1", cluster="c2")], tmp_path / "x.parquet", None)


def test_non_string_id_is_refused(tmp_path):
    with pytest.raises(ValueError, match="row 0: column 'qid' must hold strings, got 7"):
        write_per_question([row(qid=7)], tmp_path / "x.parquet", None)


@pytest.mark.parametrize("column", ["dataset", "arm", "retriever", "qid", "cluster", "metric"])
def test_empty_id_is_refused(tmp_path, column):
    with pytest.raises(ValueError, match=f"row 0: empty '{column}'"):
        write_per_question([row(**{column: ""})], tmp_path / "x.parquet", None)


def test_nothing_is_written_when_rows_are_refused(tmp_path):
    with pytest.raises(ValueError):
        write_per_question([row(), row()], tmp_path / "x.parquet", tmp_path / "x.csv")
    assert list(tmp_path.iterdir()) == []


def test_read_errors_name_the_file(tmp_path):
    with pytest.raises(InputError, match="missing.parquet: per-question results file not found"):
        read_per_question(tmp_path / "missing.parquet")
    bad = tmp_path / "bad.csv"
    bad.write_text("dataset,arm,qid,value,note\nd,S,q1,0.5,x\n")
    with pytest.raises(
        InputError,
        match=r"bad.csv: columns are \['dataset', 'arm', 'qid', 'value', 'note'\], expected "
        r"\[.*\] \(missing: retriever, cluster, stratum, metric; unexpected: note\)",
    ):
        read_per_question(bad)
    other = tmp_path / "x.json"
    other.write_text("{}")
    with pytest.raises(InputError, match="x.json: expected a .parquet or .csv"):
        read_per_question(other)


HEADER = "dataset,arm,retriever,qid,cluster,stratum,metric,value\n"


def test_csv_errors_name_the_line(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text(HEADER + "d,S,bm25,007,p7,,hit@1,1\nd,S,bm25,008,p8,,hit@1,1\nd,S,bm25,007,p7,,hit@1,0\n")
    with pytest.raises(
        InputError,
        match=r"d\.csv: line 4: repeated result for .* qid '007', metric 'hit@1' \(first at line 2\)",
    ):
        read_per_question(path)
    path.write_text(HEADER + "d,S,bm25,007,p7,,hit@1,1\nd,S,bm25,008,p8,,hit@1,n/a\n")
    with pytest.raises(InputError, match=r"d\.csv: line 3: value 'n/a' is not a number"):
        read_per_question(path)


def test_parquet_null_reads_as_empty_and_errors_name_the_row(tmp_path):
    frame = pd.DataFrame(
        {
            "dataset": ["d", "d"],
            "arm": ["S", "S"],
            "retriever": ["r", "r"],
            "qid": ["1", "2"],
            "cluster": ["1", "2"],
            "stratum": [None, None],
            "metric": ["m", "m"],
            "value": [0.25, 1.0],
        }
    )
    frame.to_parquet(tmp_path / "d.parquet")
    assert read_per_question(tmp_path / "d.parquet").stratum.tolist() == ["", ""]
    frame.loc[1, "value"] = 2.0
    frame.to_parquet(tmp_path / "d.parquet")
    with pytest.raises(
        InputError, match=r"d\.parquet: row 1: metric values must lie in \[0, 1\]; m = 2\.0 for qid '2'"
    ):
        read_per_question(tmp_path / "d.parquet")


# --- parts: a resumed score skips completed cells ---


def test_parts_record_completed_cells_and_combine_in_order(tmp_path):
    root = tmp_path / "per_question"
    assert not part_path(root, "d", "S", "bm25").exists()
    write_part(root, "d", "S+T", "bm25", [row(arm="S+T", qid="q2"), row(arm="S+T", qid="q1")])
    write_part(root, "d", "S", "bm25", [row(arm="S", qid="q1")])
    write_part(root, "d", "F512c", "bm25", [row(arm="F512c", qid="q1")])  # no longer in the config
    assert part_path(root, "d", "S+T", "bm25") == root / "d" / "S+T__bm25.parquet"
    assert sorted(p.name for p in (root / "d").iterdir()) == ["F512c__bm25.parquet", "S+T__bm25.parquet",
                                                               "S__bm25.parquet"]
    n = combine_parts(root, "d", [("S+T", "bm25"), ("S", "bm25")], tmp_path / "d.parquet", tmp_path / "d.csv")
    assert n == 3
    df = read_per_question(tmp_path / "d.csv")
    assert list(zip(df.arm, df.qid)) == [("S", "q1"), ("S+T", "q1"), ("S+T", "q2")]


def test_parts_are_checked_once_joined_and_a_bad_part_is_still_named(tmp_path, monkeypatch):
    """combine_parts checks the joined rows once, not every part as well; a part whose own check fails is
    named by that check, as reading it alone names it."""
    import pyarrow.parquet as pq
    from harness.grid import results

    root = tmp_path / "per_question"
    for arm in ("S", "E", "F512c"):
        write_part(root, "d", arm, "bm25", [row(arm=arm, qid="q1"), row(arm=arm, qid="q2")])
    checked = []
    real_check = results.check_per_question
    monkeypatch.setattr(results, "check_per_question", lambda df, where, **kw: (checked.append(str(where)),
                                                                             real_check(df, where, **kw)))
    cells = [("S", "bm25"), ("E", "bm25"), ("F512c", "bm25")]
    assert combine_parts(root, "d", cells, tmp_path / "d.parquet", None) == 6
    assert checked == [str(tmp_path / "d.parquet")]
    bad = part_path(root, "d", "E", "bm25")
    table = pq.read_table(bad).to_pandas()
    table.loc[1, "value"] = 1.5
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), bad)
    with pytest.raises(InputError, match=r"E__bm25.parquet: row 1: metric values must lie in \[0, 1\]"):
        combine_parts(root, "d", cells, tmp_path / "d.parquet", None)


def test_combine_refuses_missing_cells(tmp_path):
    root = tmp_path / "per_question"
    write_part(root, "d", "S", "bm25", [row()])
    with pytest.raises(HarnessError, match="dataset 'd': 2 cell\\(s\\) not scored yet: E / bm25, S / hybrid"):
        combine_parts(
            root, "d", [("S", "bm25"), ("S", "hybrid"), ("E", "bm25")], tmp_path / "d.parquet", None
        )


def test_part_refuses_rows_of_another_cell(tmp_path):
    with pytest.raises(
        ValueError, match=r"S__bm25.parquet: rows of cells \[\('d', 'E', 'bm25'\)\] do not belong"
    ):
        write_part(tmp_path, "d", "S", "bm25", [row(arm="E")])


def test_combine_refuses_a_tampered_part(tmp_path):
    root = tmp_path / "per_question"
    write_part(root, "d", "E", "bm25", [row(arm="E")])
    (root / "d" / "E__bm25.parquet").rename(root / "d" / "S__bm25.parquet")
    with pytest.raises(InputError, match=r"S__bm25.parquet: holds a row of another cell \(d, E, bm25\)"):
        combine_parts(root, "d", [("S", "bm25")], tmp_path / "d.parquet", None)


@pytest.mark.parametrize("arm", ["", "a/b", ".hidden", "x__y"])
def test_names_that_cannot_name_a_part_are_refused(tmp_path, arm):
    with pytest.raises(ValueError, match="arm name .* cannot name a part file"):
        part_path(tmp_path, "d", arm, "bm25")


def test_combined_file_equals_direct_write(tmp_path):
    root = tmp_path / "per_question"
    rows = [
        row(arm=a, retriever=r, qid=q, metric=m, value=v / 7)
        for a in ("S", "E")
        for r in ("bm25", "hybrid")
        for q in ("q1", "q2")
        for v, m in enumerate(("hit@1", "rec@1"))
    ]
    for a in ("S", "E"):
        for r in ("bm25", "hybrid"):
            write_part(root, "d", a, r, [x for x in rows if (x.arm, x.retriever) == (a, r)])
    combine_parts(
        root,
        "d",
        [(a, r) for a in ("S", "E") for r in ("bm25", "hybrid")],
        tmp_path / "c.parquet",
        tmp_path / "c.csv",
    )
    write_per_question(rows, tmp_path / "w.parquet", tmp_path / "w.csv")
    assert (tmp_path / "c.csv").read_bytes() == (tmp_path / "w.csv").read_bytes()
    assert (tmp_path / "c.parquet").read_bytes() == (tmp_path / "w.parquet").read_bytes()
    pd.testing.assert_frame_equal(
        read_per_question(tmp_path / "c.parquet"), read_per_question(tmp_path / "w.parquet")
    )


def test_csv_written_in_blocks_equals_one_block_and_a_failed_write_leaves_nothing(tmp_path):
    from harness.files import atomic_write_blocks
    from harness.grid.results import _csv_blocks

    write_per_question(ROWS, tmp_path / "d.parquet", tmp_path / "d.csv")
    df = read_per_question(tmp_path / "d.csv")
    whole = (tmp_path / "d.csv").read_text(encoding="utf-8")
    assert "".join(_csv_blocks(df, rows_per_block=3)) == "".join(_csv_blocks(df, rows_per_block=1)) == whole
    assert whole.count("dataset,arm") == 1

    def failing():
        yield b"half"
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        atomic_write_blocks(tmp_path / "d.csv", failing())
    assert (tmp_path / "d.csv").read_text(encoding="utf-8") == whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv", "d.parquet"]


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda lines: lines, None),
        (
            lambda lines: [lines[0]] + [lines[1].replace("mrr@10", "mrr@5")] + lines[2:],
            "1 value(s) differ from d.parquet: line 2 metric: 'mrr@5' in the CSV, 'mrr@10' in d.parquet",
        ),
        (lambda lines: lines[:-1], "1 value(s) differ from d.parquet: 3 rows in the CSV, 4 in d.parquet"),
        (
            lambda lines: lines + [lines[-1]],
            "1 value(s) differ from d.parquet: 5 rows in the CSV, 4 in d.parquet",
        ),
        (
            lambda lines: lines[:2] + [lines[2] + ",x"] + lines[3:],
            "1 value(s) differ from d.parquet: 4 rows in the CSV",
        ),
        (
            lambda lines: [lines[0].replace("qid", "question")] + lines[1:],
            "header ['dataset', 'arm', 'retriever', 'question'",
        ),
        (lambda lines: [], "header (empty file) is not"),
        (
            lambda lines: lines[:1] + [lines[1].replace(",0.0", ",0.0000001")] + lines[2:],
            "line 2 value: '0.0000001' in the CSV, 0.0 in d.parquet",
        ),
    ],
)
def test_csv_is_compared_with_its_parquet_twin_row_by_row(tmp_path, edit, message):
    from harness.provenance.release import csv_matches_parquet

    write_per_question(ROWS, tmp_path / "d.parquet", tmp_path / "d.csv")
    lines = (tmp_path / "d.csv").read_text(encoding="utf-8").splitlines()
    (tmp_path / "d.csv").write_text("".join(f"{line}\n" for line in edit(lines)), encoding="utf-8")
    check = csv_matches_parquet(tmp_path / "d.csv")
    if message is None:
        assert check.status == "PASS" and "4 rows equal to d.parquet" in check.detail
    else:
        assert check.status == "FAIL" and message in check.detail, check.detail


def test_a_result_row_is_its_columns_in_order_and_to_frame_refuses_anything_else():
    from harness.grid.results import COLUMNS, ResultRow, to_frame

    row = ResultRow("d", "a", "r", "q1", "c1", "", "rec@256t", 0.5)
    assert ResultRow._fields == COLUMNS and tuple(row) == tuple(getattr(row, c) for c in COLUMNS)
    frame = to_frame([row, row._replace(qid="q2", value=1.0)])
    assert list(frame.columns) == list(COLUMNS) and frame["qid"].tolist() == ["q1", "q2"]
    assert frame["value"].dtype == "float64" and frame["stratum"].tolist() == ["", ""]
    with pytest.raises(TypeError, match="expected ResultRow, got tuple"):
        to_frame([row, tuple(row)])


def _value_field(line, new):
    return line.rsplit(",", 1)[0] + "," + new


@pytest.mark.parametrize(
    "edit, passes",
    [
        (lambda lines: lines, True),
        # float() reads each of these as the Parquet's value: equal, as row by row
        (lambda lines: lines[:2] + [_value_field(lines[2], "1.00")] + lines[3:], True),
        (lambda lines: lines[:2] + [_value_field(lines[2], "1e0")] + lines[3:], True),
        (lambda lines: lines[:2] + [_value_field(lines[2], " 1.0 ")] + lines[3:], True),
        (lambda lines: lines[:2] + [_value_field(lines[2], "1_0.0e-1")] + lines[3:], True),
        (lambda lines: lines[:1] + [_value_field(lines[1], "-0.0")] + lines[2:], True),  # 0.0 in the table
        (lambda lines: lines[:1] + [",".join(f'"{f}"' for f in lines[1].split(","))] + lines[2:], True),
        (lambda lines: [line + "\r" for line in lines], True),  # CRLF line ends
        (lambda lines: lines[:4] + [_value_field(lines[4], "0.33333333333333331")], True),  # 1/3, more digits
        # and these differ, row by row as at C speed
        (lambda lines: [f'"{field}"' for field in lines[:1]] + lines[1:], False),  # a one-field header
        (lambda lines: lines[:4] + [_value_field(lines[4], "nan")], False),
        (lambda lines: lines[:4] + [_value_field(lines[4], "")], False),
        (lambda lines: lines[:4] + [_value_field(lines[4], "0.3333333333333334")], False),  # the next float
        (lambda lines: lines[:2] + [""] + lines[2:], False),  # a blank line
        (lambda lines: lines + [""], False),
        (lambda lines: lines + ["", ""], False),
        (lambda lines: ["\ufeff" + lines[0]] + lines[1:], False),  # a byte-order mark
        (lambda lines: lines[:1], False),
        (lambda lines: lines[:1] + [lines[1].replace(",", ",,", 1)] + lines[2:], False),
        (lambda lines: lines[:1] + [lines[1].rsplit(",", 1)[0]] + lines[2:], False),
        (lambda lines: lines[:4] + [lines[4] + ","], False),
        (lambda lines: lines[:1] + [lines[2], lines[1]] + lines[3:], False),  # two rows swapped
        (lambda lines: lines[:1] + [lines[1].replace("007", " 007")] + lines[2:], False),
        (lambda lines: lines[:1] + [lines[1].replace("007", "7")] + lines[2:], False),
        (lambda lines: lines[:1] + [lines[1].replace("007", '"007')] + lines[2:], False),
    ],
)
@pytest.mark.parametrize("block_rows", [3, 50_000])
def test_csv_compared_in_blocks_decides_as_row_by_row(tmp_path, monkeypatch, edit, passes, block_rows):
    """csv_matches_parquet's comparison at C speed passes exactly what the row-by-row comparison passes
    (whichever block a row falls in), with the same message."""
    from harness.provenance import release

    write_per_question(ROWS, tmp_path / "d.parquet", tmp_path / "d.csv")
    lines = (tmp_path / "d.csv").read_text(encoding="utf-8").splitlines()
    text = "".join(f"{line}\n" for line in edit(lines))
    (tmp_path / "d.csv").write_text(text, encoding="utf-8", newline="")
    monkeypatch.setattr(release, "CSV_BLOCK_ROWS", block_rows)
    check = release.csv_matches_parquet(tmp_path / "d.csv")
    row_by_row = release._rows_compared(tmp_path / "d.csv", read_per_question(tmp_path / "d.parquet"))
    assert check == row_by_row and (check.status == "PASS") == passes, check.detail
    assert release._blocks_equal(tmp_path / "d.csv", read_per_question(tmp_path / "d.parquet")) == passes
