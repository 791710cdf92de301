"""MIG layouts by name, and hints that lead to a valid layout.

The named layouts are compared with the GPU Operator's default mig-parted config in
../shared/reference (those tests skip, with one line of reason, where it is absent). The hostile
inputs are one-line changes to the example platform; where a hint proposes a layout or a name,
the test applies it and validates again: a hint that does not lead to a valid layout fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.layers.gpu import sharing as gpu_sharing
from renderer.model import catalog
from renderer.model.capacity import pool_offers
from renderer.pipeline import load_platform
from tests.conftest import REPO

REFERENCE = REPO.parent / "shared" / "reference" / "gpu-operator"
MIG_PARTED = REFERENCE / "default-mig-parted-config.yaml"
MIG_MAX = REFERENCE / "mig-max.json"
MIG_CONFIGS = REFERENCE / "mig-configs.json"

POOL = "pools/a100-mig.yaml"
LAYOUT = "    layout:\n      1g.10gb: 2\n      2g.20gb: 1\n      3g.40gb: 1\n"
"""The example pool's layout: a100-80gb, written out by profile."""

A100_80GB = "0x20B210DE"  # mig-parted device-filter id of the example pool's A100 SXM4 80GB
H200 = "0x233510DE"  # H200 SXM 141GB
PROFILE = re.compile(r"\b[1-7]g\.[0-9]+gb(?:\+me)?\b")
NEAREST = re.compile(r"nearest valid layout: (\{[^}]*\})")
NOT_A_LAYOUT = ("all-disabled", "all-enabled")


def _reference(path: Path) -> Any:
    if not path.is_file():
        pytest.skip(
            f"upstream reference {path.name} is absent (expected ../shared beside the repo)"
        )
    text = path.read_text(encoding="utf-8")
    return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)


@pytest.fixture(scope="module")
def mig_parted() -> dict[str, Any]:
    data: dict[str, Any] = _reference(MIG_PARTED)["mig-configs"]
    return data


@pytest.fixture(scope="module")
def mig_max() -> dict[str, Any]:
    data: dict[str, Any] = _reference(MIG_MAX)
    return data


@pytest.fixture(scope="module")
def mig_configs() -> dict[str, Any]:
    data: dict[str, Any] = _reference(MIG_CONFIGS)
    return data


def _upstream_named(device: str, mig_parted: dict[str, Any], mig_max: dict[str, Any]) -> dict:
    """The layouts mig-parted's default config gives a GPU of this device id, by name: the first
    entry that selects the device (a `device-filter` naming it, or none), when every profile of
    it is one the GPU has (mig-max.json); `all-disabled` and `all-enabled` are no layouts."""
    profiles = set(mig_max[device]["profiles"])
    named: dict[str, dict[str, int]] = {}
    for name, entries in mig_parted.items():
        if name in NOT_A_LAYOUT:
            continue
        for entry in entries:
            wanted = entry.get("device-filter", [device])
            wanted = [wanted] if isinstance(wanted, str) else wanted
            if device in wanted:
                if set(entry["mig-devices"]) <= profiles:
                    named[name] = dict(entry["mig-devices"])
                break
    return named


def _mig_keys() -> list[str]:
    return [key for key, gpu in catalog.CATALOG.items() if gpu.supports_mig]


# --- the named layouts, against the GPU Operator's default config --------------------------------


@pytest.mark.parametrize("key", _mig_keys())
def test_named_layouts_equal_the_gpu_operators(
    key: str, mig_parted: dict[str, Any], mig_max: dict[str, Any]
) -> None:
    gpu = catalog.CATALOG[key]
    for device in gpu.pci_device_ids:
        expected = _upstream_named(device, mig_parted, mig_max)
        assert "all-balanced" in expected, device
        assert gpu.named_mig_layouts() == expected, device


@pytest.mark.parametrize("key", _mig_keys())
def test_all_balanced_is_upstreams_for_every_device(key: str, mig_configs: dict[str, Any]) -> None:
    gpu = catalog.CATALOG[key]
    for device in gpu.pci_device_ids:
        upstream = mig_configs["devices"][device]["all_balanced"]
        assert gpu.named_mig_layouts()["all-balanced"] == upstream, device


@pytest.mark.parametrize("key", _mig_keys())
def test_every_named_layout_is_valid(key: str) -> None:
    gpu = catalog.CATALOG[key]
    for name, layout in gpu.named_mig_layouts().items():
        assert gpu.mig_layout_problems(layout) == [], name


def test_a_name_resolves_to_its_layout_and_nothing_else() -> None:
    assert catalog.resolve_mig_layout("h100-80gb", "all-1g.10gb") == {"1g.10gb": 7}
    assert catalog.resolve_mig_layout("a100-40gb", "all-1g.10gb") == {"1g.10gb": 4}
    assert catalog.resolve_mig_layout("h100-80gb", "all-1g.10gb.me") == {"1g.10gb+me": 1}
    for name in ("all-disabled", "all-enabled", "all-1g.5gb", "balanced", "all-1g.10gb+me"):
        assert catalog.resolve_mig_layout("h100-80gb", name) == {}, name
    assert catalog.resolve_mig_layout("no-such-gpu", "all-balanced") == {}
    assert catalog.resolve_mig_layout("l40s", "all-balanced") == {}


# --- a named layout in a pool file ---------------------------------------------------------------


def _line(platform: Path, start: str, file: str = POOL) -> int:
    """The 1-based line of `file` that starts with `start` (the one the finding should name)."""
    lines = (platform / file).read_text().splitlines()
    return next(n for n, line in enumerate(lines, start=1) if line.startswith(start))


def _edit(platform: Path, old: str, new: str, file: str = POOL) -> None:
    path = platform / file
    text = path.read_text()
    assert old in text, f"the example changed: {old!r} is no longer in {file}"
    path.write_text(text.replace(old, new))


def _findings(gpuplane: Any, platform: Path, rule: str) -> list[dict[str, Any]]:
    result = gpuplane("-C", str(platform), "validate", "--format", "json")
    found: list[dict[str, Any]] = json.loads(result.output)["findings"]
    return [d for d in found if d["rule"] == rule]


def test_a_named_layout_renders_what_the_layout_written_out_renders(platform: Path) -> None:
    written = load_platform(platform).platform.pools["a100-mig"]
    _edit(platform, LAYOUT, "    layout: all-balanced\n")
    loaded = load_platform(platform)
    assert loaded.diagnostics == []
    named = loaded.platform.pools["a100-mig"]
    assert named.mig_layout_name == "all-balanced"
    assert dict(named.mig_layout) == dict(written.mig_layout)
    assert gpu_sharing.mig_parted_config([named]) == gpu_sharing.mig_parted_config([written])
    assert pool_offers(named) == pool_offers(written)


def test_every_upstream_name_for_the_gpu_is_accepted(
    platform: Path, gpuplane: Any, mig_parted: dict[str, Any], mig_max: dict[str, Any]
) -> None:
    current = LAYOUT
    for name in _upstream_named(A100_80GB, mig_parted, mig_max):
        _edit(platform, current, f"    layout: {name}\n")
        current = f"    layout: {name}\n"
        assert _findings(gpuplane, platform, "mig-layout-invalid") == [], name


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("all-1g.5gb", "all-1g.10gb"),  # the A100 40GB's name for the same slice
        ("all-1g.10gb+me", "all-1g.10gb.me"),  # written with the profile's "+"
        ("balanced", "all-balanced"),
        ("all-3g.71gb", "all-3g.40gb"),  # an H200 name on an A100 80GB
    ],
)
def test_an_unknown_name_is_refused_with_the_valid_names(
    name: str,
    meant: str,
    platform: Path,
    gpuplane: Any,
    mig_parted: dict[str, Any],
    mig_max: dict[str, Any],
) -> None:
    _edit(platform, LAYOUT, f"    layout: {name}\n")
    (finding,) = _findings(gpuplane, platform, "mig-layout-invalid")
    assert (finding["file"], finding["line"]) == (POOL, _line(platform, "    layout: "))
    assert f"'{name}' is not a named MIG layout of a100-80gb" in finding["message"]
    assert finding["hint"].startswith(f"did you mean '{meant}'?")
    listed = finding["hint"].split("named layouts of a100-80gb: ")[1].split(", ")
    assert set(listed) == set(_upstream_named(A100_80GB, mig_parted, mig_max))
    _edit(platform, f"    layout: {name}\n", f"    layout: {meant}\n")
    assert _findings(gpuplane, platform, "mig-layout-invalid") == []


@pytest.mark.parametrize("name", NOT_A_LAYOUT)
def test_the_entries_that_are_no_layout_are_refused(
    name: str, platform: Path, gpuplane: Any
) -> None:
    _edit(platform, LAYOUT, f"    layout: {name}\n")
    (finding,) = _findings(gpuplane, platform, "mig-layout-invalid")
    assert "no MIG device" in finding["message"]
    assert "sharing: full-gpu" in finding["hint"] and "all-balanced" in finding["hint"]


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        ("all-" + "x" * 60, "schema-invalid-value"),  # longer than a label value
        ('""', "schema-invalid-value"),
        ("7", "schema-wrong-type"),
        ("[all-balanced]", "schema-wrong-type"),
        ('"all-balanced\\u202e"', "mig-layout-invalid"),  # a right-to-left override
        ('"all-balanced; rm -rf /"', "mig-layout-invalid"),
    ],
)
def test_hostile_names_are_refused_plainly(
    value: str, rule: str, platform: Path, gpuplane: Any
) -> None:
    _edit(platform, LAYOUT, f"    layout: {value}\n")
    result = gpuplane("-C", str(platform), "validate", "--format", "json")
    assert result.exit_code == 1
    rules = {d["rule"] for d in json.loads(result.output)["findings"]}
    assert rule in rules


# --- hints for layouts written out ---------------------------------------------------------------


def _profiles(device: str, mig_max: dict[str, Any]) -> set[str]:
    return set(mig_max[device]["profiles"])


def test_a_profile_of_the_smaller_a100_names_the_same_slice_here(
    platform: Path, gpuplane: Any, mig_max: dict[str, Any], mig_configs: dict[str, Any]
) -> None:
    # the 1g profile of all-balanced is the smallest slice on each GPU: 1g.5gb on the A100 40GB
    # is what 1g.10gb is on the A100 80GB
    small = next(p for p in mig_configs["devices"]["0x20B010DE"]["all_balanced"] if "1g" in p)
    here = next(p for p in mig_configs["devices"][A100_80GB]["all_balanced"] if "1g" in p)
    _edit(platform, LAYOUT, f"    layout:\n      {small}: 7\n")
    (finding,) = _findings(gpuplane, platform, "mig-layout-invalid")
    at = _line(platform, f"      {small}: 7")
    assert (finding["file"], finding["line"], finding["column"]) == (POOL, at, 7)
    assert f"'{small}' is not a MIG profile of a100-80gb but of a100-40gb" in finding["message"]
    assert finding["hint"].startswith(f"did you mean '{here}'")
    assert set(PROFILE.findall(finding["hint"])) == _profiles(A100_80GB, mig_max)
    _edit(platform, f"      {small}: 7\n", f"      {here}: 7\n")
    assert _findings(gpuplane, platform, "mig-layout-invalid") == []


def test_an_a100_profile_on_an_h200_names_the_h200_profile_of_its_shape(
    platform: Path, gpuplane: Any, mig_max: dict[str, Any], mig_configs: dict[str, Any]
) -> None:
    h200_3g = next(p for p in mig_configs["devices"][H200]["all_balanced"] if p.startswith("3g"))
    _edit(platform, "accelerator: a100-80gb", "accelerator: h200-141gb")
    _edit(platform, LAYOUT, "    layout:\n      3g.40gb: 2\n")
    (finding,) = _findings(gpuplane, platform, "mig-layout-invalid")
    assert "'3g.40gb' is not a MIG profile of h200-141gb" in finding["message"]
    assert finding["hint"].startswith(f"did you mean '{h200_3g}'")
    suggested = set(PROFILE.findall(finding["hint"]))
    assert suggested <= _profiles(H200, mig_max) and "3g.40gb" not in suggested
    _edit(platform, "      3g.40gb: 2\n", f"      {h200_3g}: 2\n")
    assert _findings(gpuplane, platform, "mig-layout-invalid") == []


def test_a_profile_that_exists_nowhere_suggests_only_this_gpus(
    platform: Path, gpuplane: Any, mig_max: dict[str, Any]
) -> None:
    _edit(platform, LAYOUT, "    layout:\n      2g.20gb+me: 1\n")
    (finding,) = _findings(gpuplane, platform, "mig-layout-invalid")
    assert "'2g.20gb+me' is not a MIG profile of a100-80gb" in finding["message"]
    assert "but of" not in finding["message"]
    hinted = PROFILE.findall(finding["hint"])
    assert set(hinted) == _profiles(A100_80GB, mig_max)


@pytest.mark.parametrize(
    ("layout", "problem"),
    [
        ("      1g.10gb: 8\n", "exceed the per-GPU maximum of 7"),
        ("      7g.80gb: 1\n      1g.10gb: 1\n", "needs 8 compute slices"),
        ("      1g.10gb: 2\n      2g.20gb: 2\n      3g.40gb: 1\n", "needs 9 compute slices"),
        ("      3g.40gb: 3\n", "exceed the per-GPU maximum of 2"),
        ("      1g.10gb+me: 1\n      1g.10gb: 7\n", "needs 8 compute slices"),
    ],
)
def test_too_many_slices_gets_the_nearest_valid_layout(
    layout: str, problem: str, platform: Path, gpuplane: Any
) -> None:
    _edit(platform, LAYOUT, "    layout:\n" + layout)
    found = _findings(gpuplane, platform, "mig-layout-invalid")
    assert any(problem in f["message"] for f in found), found
    hints = {f["hint"] for f in found}
    assert len(hints) == 1
    (hint,) = hints
    match = NEAREST.search(hint)
    assert match, hint
    nearest = yaml.safe_load(match[1])
    assert "all-balanced" in hint
    # the hint's layout is one edit away from being accepted
    body = "".join(f"      {profile}: {count}\n" for profile, count in nearest.items())
    _edit(platform, "    layout:\n" + layout, "    layout:\n" + body)
    assert _findings(gpuplane, platform, "mig-layout-invalid") == []


def test_the_nearest_layout_keeps_what_fits() -> None:
    gpu = catalog.CATALOG["a100-80gb"]
    balanced = gpu.named_mig_layouts()["all-balanced"]
    assert gpu.nearest_mig_layout({"1g.10gb": 2, "2g.20gb": 2, "3g.40gb": 1}) == balanced
    assert gpu.nearest_mig_layout({"1g.10gb": 8}) == {"1g.10gb": 7}
    assert gpu.nearest_mig_layout({"7g.80gb": 1, "1g.10gb": 1}) == {"7g.80gb": 1}
    assert gpu.nearest_mig_layout({"3g.40gb": 2}) == {"3g.40gb": 2}  # valid: itself
    # another accelerator's profiles count as this one's of the same shape
    h200 = catalog.CATALOG["h200-141gb"]
    assert h200.nearest_mig_layout({"3g.40gb": 3}) == {"3g.71gb": 2}
    assert catalog.CATALOG["l40s"].nearest_mig_layout({"1g.10gb": 1}) is None


def test_mig_on_a_gpu_without_mig_is_refused_at_sharing(platform: Path, gpuplane: Any) -> None:
    _edit(platform, "accelerator: a100-80gb", "accelerator: l40s")
    (finding,) = _findings(gpuplane, platform, "mig-layout-invalid")
    assert "l40s" in finding["message"] and "has no MIG" in finding["message"]
    assert "sharing: full-gpu" in finding["hint"]
    assert all(catalog.CATALOG[k].supports_mig for k in finding["hint"].split(": ")[-1].split(", "))


def test_quota_with_another_gpus_profile_names_the_layouts_profile(
    platform: Path, gpuplane: Any
) -> None:
    _edit(
        platform,
        "{pool: a100-mig, profile: 3g.40gb,",
        "{pool: a100-mig, profile: 3g.71gb,",
        "teams/vision.yaml",
    )
    (finding,) = _findings(gpuplane, platform, "quota-profile")
    assert finding["file"] == "teams/vision.yaml"
    assert finding["hint"] == "did you mean '3g.40gb'?"


def test_quota_on_a_broken_layout_waits_for_the_layout(platform: Path, gpuplane: Any) -> None:
    """The layout is what to fix first: its quotas are not reported against it as well."""
    _edit(platform, LAYOUT, "    layout: all-1g.5gb\n")
    assert _findings(gpuplane, platform, "mig-layout-invalid")
    assert _findings(gpuplane, platform, "quota-profile") == []


def test_the_dot_me_spelling_of_a_profile_is_answered_with_the_plus_me_one(
    platform: Path, gpuplane
) -> None:
    """NVIDIA's resource name (`nvidia.com/mig-1g.10gb.me`) and named layouts write `.me`; a
    profile in a layout or a quota is `1g.10gb+me`. Both places say so, at the value."""
    pool = platform / "pools/a100-mig.yaml"
    pool.write_text(
        pool.read_text().replace("      1g.10gb: 2\n", "      1g.10gb: 1\n      1g.10gb.me: 1\n")
    )
    team = platform / "teams/recsys.yaml"
    team.write_text(team.read_text().replace("profile: 1g.10gb,", "profile: 1g.10gb.me,", 1))
    result = gpuplane("-C", str(platform), "validate")
    assert result.exit_code == 1
    assert result.output.count("hint: did you mean '1g.10gb+me'?") == 2, result.output
    line = next(
        n for n, text in enumerate(pool.read_text().splitlines(), 1) if "1g.10gb.me" in text
    )
    assert f"pools/a100-mig.yaml:{line}:7:" in result.output  # the layout's key, not `layout:`
