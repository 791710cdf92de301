"""The hint on each value `gpuplane new` left empty says what `new` said, and applying it works.

A fresh `new` file fails at every blank (`schema-wrong-type`, "got an empty value"). Each
finding's hint is `write KEY: VALUE (WHAT)`: WHAT and VALUE are what `new` listed for that blank
(the repository's queues, clusters and pools, the schema's values, an example), and writing
`KEY: VALUE` on the line, as the hint says, leaves no finding on that line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from renderer.commands.new import KINDS
from tests.conftest import REPO, copy_inputs
from tests.test_scaffold import new

HINT = re.compile(r"^write (?P<key>[A-Za-z]+): (?P<value>.+) \((?P<what>[^()]*)\)$")
LISTED = re.compile(r"^(?P<what>.*); for example (?P<value>.+)$")


def _validate(gpuplane, root: Path) -> list[dict[str, object]]:
    found: list[dict[str, object]] = json.loads(
        gpuplane("-C", str(root), "validate", "--format", "json").output
    )["findings"]
    return found


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_blank_hint_applied_as_written_clears_its_line(
    kind: str, tmp_path: Path, gpuplane
) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    listed = _listing(gpuplane, root, kind)
    path = f"{KINDS[kind]}/fresh.yaml"
    blanks = {line for line, _, _ in listed.values()}
    found = [d for d in _validate(gpuplane, root) if d["file"] == path]
    assert {d["line"] for d in found} == blanks
    lines = (root / path).read_text().splitlines(keepends=True)
    for finding in found:
        assert finding["rule"] == "schema-wrong-type"
        hint = HINT.match(str(finding["hint"]))
        assert hint is not None, finding["hint"]
        number = int(str(finding["line"]))
        field, what, value = next((f, w, v) for f, (n, w, v) in listed.items() if n == number)
        # the hint says what `new` said of this blank: the same choices, the same example
        assert (hint["what"], hint["value"]) == (what, value), field
        assert field.endswith(hint["key"])
        line = lines[number - 1]
        prefix = re.match(r"^(\s*(?:- )?)", line)
        assert prefix is not None
        lines[number - 1] = f"{prefix[1]}{hint['key']}: {hint['value']}\n"
    (root / path).write_text("".join(lines))
    left = [d for d in _validate(gpuplane, root) if d["file"] == path and d["line"] in blanks]
    assert left == [], left


def _listing(gpuplane, root: Path, kind: str) -> dict[str, tuple[int, str, str]]:
    """`gpuplane new KIND fresh`'s listing: field -> (line, what, example value)."""
    lines = new(gpuplane, root, kind, "fresh")
    text = (root / f"{KINDS[kind]}/fresh.yaml").read_text().splitlines()
    listed = {}
    for field, number in lines.items():
        comment = text[number - 1].split("# REPLACE-ME: ", 1)[1]
        match = LISTED.match(comment)
        assert match is not None, comment
        listed[field] = (number, match["what"], match["value"])
    return listed


def test_the_team_hints_follow_the_queue_once_it_is_filled(tmp_path: Path, gpuplane) -> None:
    """With `queue: staging` written, the cluster and pool blanks name staging's cluster and
    one of its pools (queues/staging.yaml), not the first queue's."""
    root = copy_inputs(REPO, tmp_path / "repo")
    lines = new(gpuplane, root, "team", "fresh")
    path = root / "teams/fresh.yaml"
    text = path.read_text().splitlines(keepends=True)
    text[lines["spec.queue"] - 1] = "  queue: staging\n"
    path.write_text("".join(text))
    from ruamel.yaml import YAML

    staging = YAML(typ="safe").load((root / "queues/staging.yaml").read_text())["spec"]
    hints = {
        d["line"]: str(d["hint"])
        for d in _validate(gpuplane, root)
        if d["file"] == "teams/fresh.yaml"
    }
    cluster = HINT.match(hints[lines["spec.namespaces[0].cluster"]])
    pool = HINT.match(hints[lines["spec.gpus[0].pool"]])
    assert cluster is not None and pool is not None
    assert cluster["value"] == staging["cluster"]
    assert pool["value"] in staging["pools"]
