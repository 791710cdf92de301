"""The OpenCost custom-pricing ConfigMap: the CSV OpenCost's CSV provider reads, one price per
pool, and OpenCost's own matching (modelled here from its source) prices each pool's nodes at the
pool's `cost.gpuHour`."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from renderer.layers.observability import pricing
from renderer.model.view import ClusterView
from renderer.pipeline import load_platform
from tests.conftest import REPO, copy_inputs

OPENCOST_COLUMNS = [
    # opencost/opencost pkg/cloud/provider/csvprovider.go, the `csv:` tags of `type price struct`
    # in field order; `csvutil.Header(price{}, "csv")` makes the header, and `FieldsPerRecord`
    # is its length.
    "EndTimestamp",
    "InstanceID",
    "Region",
    "AssetClass",
    "InstanceIDField",
    "InstanceType",
    "MarketPriceHourly",
    "Version",
]


def parse(text: str) -> list[dict[str, str]]:
    """Read the file as Go's encoding/csv does (RFC 4180, Comma ',', FieldsPerRecord 8): a record
    of another length is skipped by the provider, so here it fails."""
    records = list(csv.reader(io.StringIO(text), strict=True))
    for record in records:
        assert len(record) == len(OPENCOST_COLUMNS), record
    assert records[0] == OPENCOST_COLUMNS  # the header line, as configs/pricing_schema.csv has
    return [dict(zip(OPENCOST_COLUMNS, r, strict=True)) for r in records[1:]]


def node_price(rows: list[dict[str, str]], labels: dict[str, str], gpus: int) -> Decimal | None:
    """OpenCost's CSVProvider.NodePricing for a node without a region: the node field is the
    last node row's InstanceIDField; `metadata.labels.<key>` reads the node label <key>; the
    key is lower-cased; a `gpu` row's InstanceIDField is a bare label key, and its price is
    added once per `nvidia.com/gpu` of the node's capacity."""
    nodes = {r["InstanceID"].lower(): r for r in rows if r["AssetClass"] == "node"}
    gpu_rows = {r["InstanceID"].lower(): r for r in rows if r["AssetClass"] == "gpu"}
    field = [r for r in rows if r["AssetClass"] == "node"][-1]["InstanceIDField"]
    parts = field.split(".")
    assert parts[:2] == ["metadata", "labels"], field
    found = nodes.get(labels.get(".".join(parts[2:]), "").lower())
    if found is None:
        return None
    cost = Decimal(found["MarketPriceHourly"])
    gpu_fields = [r["InstanceIDField"].lower() for r in rows if r["AssetClass"] == "gpu"]
    gpu_type = next((labels[f] for f in gpu_fields if f in labels), "")
    if gpu_type:
        row = gpu_rows.get(gpu_type.lower())
        cost += (Decimal(row["MarketPriceHourly"]) if row else Decimal(0)) * gpus
    return cost


def pool_files() -> dict[str, tuple[dict[str, Any], str]]:
    out = {}
    for path in sorted((REPO / "pools").glob("*.yaml")):
        text = path.read_text()
        out[path.stem] = (yaml.safe_load(text)["spec"], text)
    return out


def written_gpu_hour(text: str) -> Decimal:
    """`cost.gpuHour` as the pool file writes it, digit for digit."""
    match = re.search(r"^\s*gpuHour:\s*([0-9.]+)", text, re.MULTILINE)
    assert match
    return Decimal(match.group(1))


def advertised_gpus(spec: dict[str, Any]) -> int:
    """`nvidia.com/gpu` a node of the pool advertises (what OpenCost's GetKey counts): whole GPUs,
    or time-sliced replicas unless renamed `.shared`; MIG under the mixed strategy advertises
    `nvidia.com/mig-*` instead, DRA nothing."""
    if spec.get("exposure", "device-plugin") == "dra":
        return 0
    sharing = spec.get("sharing", "full-gpu")
    gpus = int(spec["gpusPerNode"])
    if sharing == "full-gpu":
        return gpus
    if sharing in ("time-slicing", "mps"):
        shared = spec.get("timeSlicing", spec.get("mps", {}))
        return 0 if shared.get("renameByDefault") else gpus * int(shared["replicas"])
    return 0


def rendered(root: Path) -> dict[str, str]:
    loaded = load_platform(root)
    out = {}
    for name, cluster in sorted(loaded.platform.clusters.items()):
        (obj,) = pricing.render(ClusterView.of(loaded.platform, cluster))
        assert obj.body["kind"] == "ConfigMap"
        assert obj.body["metadata"]["namespace"] == "monitoring"
        out[name] = obj.body["data"][pricing.PRICING_KEY]
    return out


def test_each_pools_nodes_cost_its_gpu_hour_times_its_gpus() -> None:
    pools = pool_files()
    seen = set()
    for _cluster, text in rendered(REPO).items():
        rows = parse(text)
        for pool in {r["InstanceID"] for r in rows}:
            spec, source = pools[pool]
            seen.add(pool)
            node = node_price(rows, {"gpuplane.dev/pool": pool}, advertised_gpus(spec))
            assert node == written_gpu_hour(source) * int(spec["gpusPerNode"]), pool
        assert node_price(rows, {"gpuplane.dev/pool": "not-a-pool"}, 8) is None
    assert seen == set(pools)


def test_a_pod_is_charged_per_gpu_it_requests() -> None:
    """Where OpenCost counts the pool's GPUs, one `nvidia.com/gpu` costs gpuHour / replicas."""
    pools = pool_files()
    for text in rendered(REPO).values():
        for row in parse(text):
            if row["AssetClass"] != "gpu":
                continue
            spec, source = pools[row["InstanceID"]]
            assert row["InstanceIDField"] == "gpuplane.dev/pool"
            per_gpu = advertised_gpus(spec) // int(spec["gpusPerNode"])
            assert Decimal(row["MarketPriceHourly"]) * per_gpu == written_gpu_hour(source)
    # By hand, from pools/*.yaml: h100-train 2.85 a GPU; l40s-infer 0.95 time-sliced 4 ways.
    rows = parse(rendered(REPO)["prod-east"])
    gpu = {r["InstanceID"]: r["MarketPriceHourly"] for r in rows if r["AssetClass"] == "gpu"}
    assert gpu["h100-train"] == "2.85" and gpu["l40s-infer"] == "0.2375"
    assert "a100-mig" not in gpu  # MIG devices are not nvidia.com/gpu: the node row prices it
    node = {r["InstanceID"]: r["MarketPriceHourly"] for r in rows if r["AssetClass"] == "node"}
    assert node["a100-mig"] == "12.8"  # 8 GPUs x 1.60


def test_prices_are_exact_decimals() -> None:
    for text in rendered(REPO).values():
        for row in parse(text):
            assert re.fullmatch(r"\d+(\.\d+)?", row["MarketPriceHourly"]), row


def test_free_text_and_odd_names_cannot_break_the_csv(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    pool = root / "pools" / "h100-train.yaml"
    text = pool.read_text()
    assert "  description:" in text
    pool.write_text(
        re.sub(
            r"^  description:.*$",
            '  description: "a, \\"quoted\\"\\nsecond line,,\\r\\n#x"',
            text,
            count=1,
            flags=re.MULTILINE,
        )
    )
    assert rendered(root) == rendered(REPO)
    # A value with the CSV's own separators round-trips through the csv module's quoting.
    loaded = load_platform(REPO)
    some = next(iter(loaded.platform.pools.values()))
    odd = replace(some, name='x,"y"\nz')
    rows = parse(pricing.pricing_csv([odd]))
    assert {r["InstanceID"] for r in rows} == {'x,"y"\nz'}


def test_rendered_only_with_pools_and_deterministic() -> None:
    loaded = load_platform(REPO)
    cluster = next(iter(loaded.platform.clusters.values()))
    view = ClusterView.of(loaded.platform, cluster)
    assert [o.body for o in pricing.render(view)] == [o.body for o in pricing.render(view)]
    assert list(pricing.render(replace(view, pools=()))) == []


@pytest.mark.parametrize(
    ("rate", "units", "expected"), [(0.95, 4, "0.2375"), (1.6, 7, "0.228571"), (2.85, 1, "2.85")]
)
def test_per_unit_prices_round_only_when_they_must(rate: float, units: int, expected: str) -> None:
    loaded = load_platform(REPO)
    pool = loaded.platform.pools["l40s-infer"]
    shared = replace(pool, gpu_hour=rate, replicas=units, sharing="time-slicing")
    if units == 1:
        shared = replace(shared, sharing="full-gpu")
    price = pricing.pool_price(shared)
    assert price.gpu_unit_hourly is not None
    assert pricing.decimal_text(price.gpu_unit_hourly) == expected
