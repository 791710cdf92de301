"""The model is immutable and knows where each object came from; the output is machine-independent."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import yaml

from renderer.output.canonical import _EMITTER, CDumper, PythonDumper, dump
from renderer.output.writer import HEADER
from renderer.pipeline import load_platform
from tests.conftest import REPO


def test_model_objects_are_frozen_and_their_mappings_read_only() -> None:
    platform = load_platform(REPO).platform
    team = platform.teams["vision"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        team.queue = "staging"  # type: ignore[misc]
    with pytest.raises(TypeError):
        team.resources["cpu"] = "1"  # type: ignore[index]
    pool = platform.pools["a100-mig"]
    with pytest.raises(TypeError):
        pool.mig_layout["7g.80gb"] = 1  # type: ignore[index]
    assert isinstance(team.gpus, tuple) and isinstance(team.namespaces, tuple)


def test_every_object_knows_its_source() -> None:
    platform = load_platform(REPO).platform
    quota = platform.teams["vision"].gpus[0]
    where = quota.origin.at("nominal")
    line = (REPO / where.file).read_text().splitlines()[where.line - 1]
    assert line[where.col - 1 :].startswith("8,")  # `nominal: 8` on the h100-train entry
    assert quota.pool == "h100-train"


@pytest.mark.slow
def test_c_and_python_yaml_emitters_agree_on_every_rendered_file() -> None:
    """The writer uses gpuplane's emitter, which must write PyYAML's bytes (without handing the
    file to PyYAML); libyaml's and the pure-Python emitter must agree with it, so output does not
    depend on how PyYAML was built."""
    checked = 0
    for path in sorted((REPO / "rendered").rglob("*.yaml")):
        text = path.read_text()
        body = yaml.safe_load(text)
        lines = text.splitlines(keepends=True)
        comments = next(i for i, line in enumerate(lines) if not line.startswith("#"))
        header = "".join(lines[:comments])  # the provenance line, and a file's own note
        for dumper in (PythonDumper, CDumper):
            assert header + dump(body, dumper) == text, f"{path} differs with {dumper.__name__}"
        assert header + _EMITTER.dump(body) == text, f"{path} differs with gpuplane's emitter"
        checked += 1
    assert checked > 150
    assert HEADER.startswith("# Rendered by gpuplane")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_symlinked_input_is_refused(platform: Path, gpuplane, tmp_path: Path) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("password: hunter2\n")
    (platform / "teams" / "leak.yaml").symlink_to(secret)
    result = gpuplane("-C", str(platform), "validate")
    assert result.exit_code == 1
    assert "teams/leak.yaml: error[stray-file] symbolic links are not followed" in result.output
    assert "hunter2" not in result.output
