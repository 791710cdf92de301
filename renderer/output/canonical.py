"""Canonical YAML: the one dumper every rendered file goes through, with fixed settings.

Block style, keys in the order the layer built them (apiVersion, kind, metadata, then the body,
as kubectl prints), no line folding, UTF-8, and multi-line strings as literal blocks (`|`) so an
embedded config file reads as itself. libyaml's emitter is used when PyYAML has it; the pure
Python one gives the same bytes (tests/test_model.py checks every rendered file with both).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


class PythonDumper(yaml.SafeDumper):
    """The pure-Python emitter with gpuplane's string style."""


PythonDumper.add_representer(str, _represent_str)

_LIBYAML: type[yaml.SafeDumper] | None = getattr(yaml, "CSafeDumper", None)
CDumper: type[yaml.SafeDumper] = (
    type("CDumper", (_LIBYAML,), {"__doc__": "libyaml's emitter with gpuplane's string style."})
    if _LIBYAML is not None
    else PythonDumper  # PyYAML built without libyaml: same output, slower
)
CDumper.add_representer(str, _represent_str)
DEFAULT_DUMPER = CDumper


def dump(body: Mapping[str, Any], dumper: type[yaml.SafeDumper] = DEFAULT_DUMPER) -> str:
    text: str = yaml.dump(
        body,
        Dumper=dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1_000_000,
    )
    return text


def sorted_keys(value: Any) -> Any:
    """A JSON-shaped value with every mapping's keys sorted, for stable JSON reports."""
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(v) for v in value]
    return value
