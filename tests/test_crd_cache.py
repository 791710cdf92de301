"""The disk cache of parsed CRD files: what it gives back is what parsing gives, it is keyed by
content, and a cache that is broken, unfaithful or unwritable changes nothing but speed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.output import crd_cache, crds
from renderer.output.validation import OutputValidator

CRDS = Path(__file__).resolve().parents[2] / "shared" / "crds"
WORKFLOWS = CRDS / "argo-workflows" / "argoproj.io_workflowtemplates.yaml"
pytestmark = pytest.mark.skipif(
    not WORKFLOWS.is_file(), reason="../shared/crds is not beside this checkout"
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv(crd_cache.CACHE_ENV, str(folder))
    monkeypatch.setattr(crds, "_PARSED", {})  # no in-process shortcut
    return folder


def parse_counting(text: str, calls: list[int]) -> Any:
    def parse() -> list[Any]:
        calls.append(1)
        return list(yaml.safe_load_all(text))

    return parse


def test_a_second_read_comes_from_the_cache_and_equals_the_parse(cache: Path) -> None:
    raw = WORKFLOWS.read_bytes()
    calls: list[int] = []
    first = crd_cache.documents(raw, parse_counting(raw.decode(), calls))
    assert len(list(cache.iterdir())) == 1
    second = crd_cache.documents(raw, parse_counting(raw.decode(), calls))
    assert calls == [1]
    assert second == first == list(yaml.safe_load_all(raw.decode()))


def test_other_bytes_are_parsed_again(cache: Path) -> None:
    calls: list[int] = []
    crd_cache.documents(b"a: 1\n", parse_counting("a: 1\n", calls))
    assert crd_cache.documents(b"a: 2\n", parse_counting("a: 2\n", calls)) == [{"a": 2}]
    assert calls == [1, 1]


def test_a_broken_entry_is_parsed_again_and_replaced(cache: Path) -> None:
    calls: list[int] = []
    crd_cache.documents(b"a: 1\n", parse_counting("a: 1\n", calls))
    (entry,) = cache.iterdir()
    entry.write_text('{"truncated": ')
    assert crd_cache.documents(b"a: 1\n", parse_counting("a: 1\n", calls)) == [{"a": 1}]
    assert calls == [1, 1]
    assert json.loads(entry.read_text()) == [{"a": 1}]


@pytest.mark.parametrize("text", ["when: 2006-01-02\n", "{1: one}\n", "x: .inf\n"])
def test_documents_json_would_change_are_not_kept(cache: Path, text: str) -> None:
    calls: list[int] = []
    parsed = crd_cache.documents(text.encode(), parse_counting(text, calls))
    assert parsed == list(yaml.safe_load_all(text))
    assert not cache.exists() or not list(cache.iterdir())


def test_an_unwritable_cache_is_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(crd_cache.CACHE_ENV, str(blocker / "cache"))  # below a file
    calls: list[int] = []
    assert crd_cache.documents(b"a: 1\n", parse_counting("a: 1\n", calls)) == [{"a": 1}]


def test_an_empty_setting_turns_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(crd_cache.CACHE_ENV, "")
    monkeypatch.chdir(tmp_path)
    assert crd_cache.cache_dir() is None
    calls: list[int] = []
    crd_cache.documents(b"a: 1\n", parse_counting("a: 1\n", calls))
    crd_cache.documents(b"a: 1\n", parse_counting("a: 1\n", calls))
    assert calls == [1, 1]
    assert os.listdir(tmp_path) == []


def test_validation_from_the_cache_finds_what_it_found_from_yaml(cache: Path) -> None:
    bad = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "WorkflowTemplate",
        "metadata": {"name": "x", "namespace": "y"},
        "spec": {"entrypoint": "main", "templates": [{"name": "main", "contianer": {}}]},
    }
    cold = OutputValidator([CRDS]).validate(bad, "1.33")
    assert list(cache.iterdir())
    crds._PARSED.clear()
    warm = OutputValidator([CRDS]).validate(bad, "1.33")
    assert warm == cold and cold
