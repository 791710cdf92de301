"""`gpuplane cost`'s readers: the CSV and the Prometheus API's JSON, every problem a finding at
`file:line:col` (exit 1, no traceback), hostile files included."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from renderer.commands.cost.prometheus import read_json
from renderer.commands.cost.rules import MAX_USAGE_BYTES
from renderer.commands.cost.usage import read_csv, split_cells
from tests.conftest import Result
from tests.cost.platform import RATES, cost_platform

Run = Callable[..., Result]
HEADER = "team,pool,allocated_gpu_hours,used_gpu_hours,failed_gpu_hours,accepted_units,support\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return cost_platform(tmp_path_factory.mktemp("cost") / "repo")


def write(tmp_path: Path, text: str | bytes, name: str = "u.csv") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def errors(gpuplane: Run, root: Path, path: Path, *args: str) -> list[str]:
    done = gpuplane("-C", str(root), "cost", str(path), *args)
    assert done.exit_code == 1, done.output
    assert "Traceback" not in done.output
    return [line for line in done.output.splitlines() if ": error[" in line]


# --- CSV --------------------------------------------------------------------------------------


def test_cells_keep_their_columns() -> None:
    assert split_cells('a, "b,""c"" " ,,d,') == [
        ("a", 1),
        ('b,"c" ', 4),
        ("", 16),
        ("d", 17),
        ("", 19),
    ]
    assert split_cells('a,"open') == ("unclosed quote", 3)
    assert split_cells('"x"y') == ("text after a closing quote", 4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "team,pool,alocated_gpu_hours\n",
            ["1:11: error[cost-csv-header] unknown column 'alocated_gpu_hours'"],
        ),
        ("team,pool,team\n", ["1:11: error[cost-csv-header] column 'team' appears twice"]),
        ("pool,support\n", ["1:1: error[cost-csv-header] the header has no 'team' column"]),
        (
            HEADER + "vision,h100-train,ten,5,,,\n",
            ["2:19: error[cost-number] allocated_gpu_hours 'ten' is not a number"],
        ),
        (
            HEADER + "vision,h100-train,10,NaN,,,\n",
            ["2:22: error[cost-number] used_gpu_hours 'NaN' is not a number"],
        ),
        (
            HEADER + "vision,h100-train,10,1e999,,,\n",
            ["2:22: error[cost-number] used_gpu_hours '1e999' is too large to be a figure"],
        ),
        (
            HEADER + "vision,h100-train,10,-1,,,\n",
            ["2:22: error[cost-number] used_gpu_hours is negative (-1)"],
        ),
        (
            HEADER + "vision,h100-train,10\n",
            ["2:19: error[cost-csv-row] 3 cells where the header has 7 columns"],
        ),
        (
            HEADER + "vision,h100-train,10,5,1,3,\n",
            [
                "2:26: error[cost-csv-row] a row with a pool gives GPU-hours only, not accepted_units"
            ],
        ),
        (
            HEADER + "vision,,10,,,,\n",
            ["2:9: error[cost-csv-row] allocated_gpu_hours without a pool"],
        ),
        (HEADER + ",h100-train,1,1,,,\n", ["2:1: error[cost-csv-row] no team"]),
        (
            HEADER + "*,h100-train,1,1,,,\n",
            [
                "2:1: error[cost-csv-row] team '*' is the platform-wide row: it holds money terms, not GPU-hours"
            ],
        ),
        (HEADER + '"vision,h100-train,1,1,,,\n', ["2:1: error[cost-csv-row] unclosed quote"]),
        (
            HEADER + "vision,h100-train,1,1,,,\nvision,h100-train,2,1,,,\n",
            [
                "3:1: error[cost-duplicate] a second GPU-hours row for team 'vision' on pool 'h100-train'"
            ],
        ),
        (
            HEADER + "vision,,,,,1,\nvision,,,,,2,\n",
            ["3:1: error[cost-duplicate] a second row of terms for team 'vision'"],
        ),
        ("# only a comment\n", ["1:1: error[cost-empty] no header and no rows"]),
        (HEADER, ["1:1: error[cost-empty] no GPU-hours and no team terms"]),
    ],
)
def test_csv_problems_are_findings_at_their_cell(
    gpuplane: Run, root: Path, tmp_path: Path, text: str, expected: list[str]
) -> None:
    path = write(tmp_path, text)
    assert errors(gpuplane, root, path) == [f"{path}:{e}" for e in expected]


def test_a_bom_crlf_comments_and_column_order_are_fine(
    gpuplane: Run, root: Path, tmp_path: Path
) -> None:
    path = write(
        tmp_path,
        b"\xef\xbb\xbf# exported 2025-06\r\nused_gpu_hours,team,pool,allocated_gpu_hours\r\n"
        b"  5 , vision , h100-train , 10\r\n\r\n",
    )
    done = gpuplane("-C", str(root), "cost", str(path), "--format", "json")
    assert done.exit_code == 0, done.output
    team = json.loads(done.output)["teams"][0]
    assert team["terms"]["compute"] == pytest.approx(5 * RATES["h100-train"])
    assert team["terms"]["idle"] == pytest.approx(5 * RATES["h100-train"])


def test_a_huge_file_is_refused_unread(gpuplane: Run, root: Path, tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    with path.open("wb") as stream:  # sparse: a 1 GB file that takes no disk
        stream.write(HEADER.encode())
        stream.truncate(1024**3)
    got = errors(gpuplane, root, path)
    assert got == [
        f"{path}:1:1: error[cost-unreadable] file is larger than {MAX_USAGE_BYTES:,} bytes"
    ]


def test_not_utf8_names_the_byte(gpuplane: Run, root: Path, tmp_path: Path) -> None:
    path = write(tmp_path, HEADER.encode() + b"vision,h100-tr\xe4in,1,1,,,\n")
    assert errors(gpuplane, root, path) == [
        f"{path}:2:15: error[cost-unreadable] byte 0xe4 is not valid UTF-8"
    ]


def test_hostile_names_print_inert(gpuplane: Run, root: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        HEADER + '"\x1b[31mvision\x1b]0;owned\x07",h100-train,1,1,,,\n'
        "<b>*x*</b>,h100-train,1,1,,,\n"
        '=HYPERLINK("x"),h100-train,1,1,,,\n'
        "::error::x,h100-train,1,1,,,\n",
    )
    done = gpuplane("-C", str(root), "cost", str(path))
    assert done.exit_code == 1
    assert "\x1b" not in done.output and "\x07" not in done.output
    assert "\\x1b[31mvision" in done.output
    assert not any(line.startswith("::") for line in done.output.splitlines())
    assert done.output.count("error[cost-unknown-name]") == 4
    as_json = gpuplane("-C", str(root), "cost", str(path), "--format", "json")
    messages = [d["message"] for d in json.loads(as_json.output)["findings"]]
    assert all("\x1b" not in m for m in messages)


def test_the_reader_alone_returns_rows(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + "vision,h100-train,10,5,1,,\nvision,,,,,3,\n*,,,,,,7\n")
    usage = read_csv(path)
    assert usage.findings == ()
    assert [(h.team, h.pool, h.allocated, h.used, h.failed) for h in usage.hours] == [
        ("vision", "h100-train", 10, 5, 1)
    ]
    assert [(t.team, t.accepted_units, t.support) for t in usage.terms] == [
        ("vision", 3, 0),
        ("*", None, 7),
    ]


# --- the Prometheus API's JSON ----------------------------------------------------------------


def response(series: list[dict[str, Any]], kind: str = "vector") -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": kind, "result": series}}


def sample(
    term: str, value: str, team: str = "vision", pool: str = "h100-train", **labels: str
) -> dict[str, Any]:
    metric = {"term": term, "team": team, "pool": pool, "cluster": "prod-east", **labels}
    return {"metric": metric, "value": [1750000000, value]}


def test_a_vector_gives_the_three_figures(tmp_path: Path) -> None:
    body = response(
        [
            sample("allocated_gpu_hours", "10"),
            sample("used_gpu_hours", "6.5"),
            sample("failed_gpu_hours", "1"),
            sample("allocated_gpu_hours", "4", pool="a100-mig"),  # no used, no failed: 0
        ]
    )
    usage = read_json(write(tmp_path, json.dumps(body), "u.json"))
    assert usage.findings == ()
    assert [(h.pool, h.allocated, h.used, h.failed) for h in usage.hours] == [
        ("h100-train", 10, 6.5, 1),
        ("a100-mig", 4, 0, 0),
    ]
    assert usage.ending == "2025-06-15T15:06:40Z"


def test_json_needs_terms_for_team_rows(gpuplane: Run, root: Path, tmp_path: Path) -> None:
    usage = write(
        tmp_path,
        json.dumps(response([sample("allocated_gpu_hours", "10"), sample("used_gpu_hours", "5")])),
        "u.json",
    )
    terms = write(tmp_path, "team,accepted_units\nvision,5\n", "terms.csv")
    done = gpuplane("-C", str(root), "cost", str(usage), "--terms", str(terms), "--format", "json")
    assert done.exit_code == 0, done.output
    team = json.loads(done.output)["teams"][0]
    assert team["costPerUnit"] == pytest.approx(10 * RATES["h100-train"] / 5)
    stray = write(
        tmp_path, "team,pool,allocated_gpu_hours,used_gpu_hours\nvision,a100-mig,1,1\n", "s.csv"
    )
    assert errors(gpuplane, root, usage, "--terms", str(stray)) == [
        f"{stray}:2:1: error[cost-csv-row] a --terms file gives team rows only: GPU-hours come "
        "from the usage export"
    ]


def test_a_matrix_is_read_by_its_last_sample_when_all_end_together(tmp_path: Path) -> None:
    def series(term: str, values: list[list[Any]]) -> dict[str, Any]:
        return {"metric": {"term": term, "team": "vision", "pool": "h100-train"}, "values": values}

    same = response(
        [
            series("allocated_gpu_hours", [[100, "1"], [200, "8"]]),
            series("used_gpu_hours", [[100, "1"], [200, "4"]]),
        ],
        "matrix",
    )
    usage = read_json(write(tmp_path, json.dumps(same), "m.json"))
    assert usage.findings == ()
    assert (usage.hours[0].allocated, usage.hours[0].used) == (8, 4)
    apart = response(
        [
            series("allocated_gpu_hours", [[100, "1"], [200, "8"]]),
            series("used_gpu_hours", [[100, "1"]]),
        ],
        "matrix",
    )
    usage = read_json(write(tmp_path, json.dumps(apart), "m.json"))
    assert [f.rule for f in usage.findings] == ["cost-json"]
    assert "cover different windows" in usage.findings[0].message


def series_line(text: str, index: int) -> int:
    """The line where the `index`-th series object opens, found by hand in the indented JSON."""
    starts = [n for n, line in enumerate(text.splitlines(), 1) if line == "      {"]
    return starts[index]


@pytest.mark.parametrize(
    ("series", "rule", "message"),
    [
        (sample("used_gpu_hours", "NaN"), "cost-number", "value 'NaN' is not a number"),
        (sample("used_gpu_hours", "+Inf"), "cost-number", "value '+Inf' is not a number"),
        (sample("idle_gpu_hours", "1"), "cost-json", "label term is 'idle_gpu_hours'"),
        (sample("used_gpu_hours", "1", team=""), "cost-json", "no team or no pool label"),
        ({"metric": {"term": "used_gpu_hours"}, "value": 3}, "cost-json", "no team or no pool"),
        (
            {"metric": {"term": "used_gpu_hours", "team": "a", "pool": "b"}, "value": [1, 3]},
            "cost-json",
            'its sample is not [timestamp, "value"]',
        ),
        (sample("used_gpu_hours", "1", team="vison"), "cost-unknown-name", "no team 'vison'"),
        (
            sample("used_gpu_hours", "1", cluster="staging-west"),
            "cost-wrong-cluster",
            "pool 'h100-train' is on cluster 'prod-east', the series says 'staging-west'",
        ),
    ],
)
def test_a_bad_series_is_named_by_index_labels_and_line(
    gpuplane: Run, root: Path, tmp_path: Path, series: dict[str, Any], rule: str, message: str
) -> None:
    text = json.dumps(response([sample("allocated_gpu_hours", "10"), series]), indent=2)
    path = write(tmp_path, text, "u.json")
    got = errors(gpuplane, root, path)
    assert len(got) == 1, got
    assert got[0].startswith(f"{path}:{series_line(text, 1)}:7: error[{rule}] ")
    assert message in got[0]
    if rule != "cost-json" or "term" in message:
        assert "series 1 {term=" in got[0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "{",
            "1:2: error[cost-json] invalid JSON: Expecting property name enclosed in double quotes",
        ),
        ('{"status": NaN}', "1:1: error[cost-json] invalid JSON: NaN is not a JSON number"),
        ('{"a": 1, "a": 2}', "1:1: error[cost-json] invalid JSON: duplicate key 'a'"),
        ("[" * 100_000 + "]" * 100_000, "1:1: error[cost-json] JSON nested deeper than 16 levels"),
        ("[1]", "1:1: error[cost-json] not a JSON object"),
        (
            '{"status": "error", "errorType": "bad_data", "error": "parse error"}',
            "1:1: error[cost-json] the query failed: bad_data: parse error",
        ),
        (
            '{"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}}',
            "1:31: error[cost-json] result type 'scalar': the export query answers a vector",
        ),
        (
            '{"status": "success", "data": {"resultType": "vector", "result": []}}',
            "1:1: error[cost-empty]",
        ),
    ],
)
def test_json_that_is_not_an_api_response(
    gpuplane: Run, root: Path, tmp_path: Path, text: str, message: str
) -> None:
    path = write(tmp_path, text, "u.json")
    got = errors(gpuplane, root, path)
    assert len(got) == 1 and got[0].startswith(f"{path}:{message}"), got


def test_duplicate_series_are_a_finding(tmp_path: Path) -> None:
    body = response([sample("used_gpu_hours", "1"), sample("used_gpu_hours", "2")])
    usage = read_json(write(tmp_path, json.dumps(body), "u.json"))
    assert [f.rule for f in usage.findings] == ["cost-duplicate"]
