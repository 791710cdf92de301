"""Each pool's GPU-hour rate where OpenCost-style tools read it: a CSV custom-pricing ConfigMap.

Design: docs/observability.md#the-csv-pricing-configmap-as-opencost-reads-it
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal, Inexact, localcontext

from renderer.model.capacity import pool_offers
from renderer.model.names import PROMETHEUS_NAMESPACE
from renderer.model.nodes import PREFIX
from renderer.model.platform import Pool
from renderer.model.view import ClusterView
from renderer.output.manifest import Manifest, Output, metadata

LAYER = "observability"

CONFIG_MAP = "gpuplane-opencost-pricing"
PRICING_KEY = "pricing.csv"
"""The ConfigMap's key: the file OpenCost's `CSV_PATH` names once the ConfigMap is mounted."""

COLUMNS = (
    "EndTimestamp",
    "InstanceID",
    "Region",
    "AssetClass",
    "InstanceIDField",
    "InstanceType",
    "MarketPriceHourly",
    "Version",
)
"""The `csv:` tags of OpenCost's `price` struct, in field order (`csvutil.Header(price{}, "csv")`)."""

POOL_LABEL = f"{PREFIX}pool"
NODE_FIELD = f"metadata.labels.{POOL_LABEL}"
"""A node row's match: the node label that names the node's pool."""
GPU_FIELD = POOL_LABEL
"""A `gpu` row's match: the same label, as `csvKey.GPUType` reads it (a bare label key)."""
COUNTED_RESOURCE = "nvidia.com/gpu"
"""The only extended resource OpenCost's CSV provider counts GPUs by (`CSVProvider.GetKey`)."""
CURRENCY_ANNOTATION = f"{PREFIX}currency"
"""The currencies of the prices (the CSV has no currency column: OpenCost reports in the one its
`currencyCode` setting names)."""
PLACES = Decimal("0.000001")
"""Where a per-unit price that does not divide exactly is rounded (OpenCost prints `%f`)."""


@dataclass(frozen=True, slots=True)
class PoolPrice:
    """What one pool's rows say: the node's own hourly price and, where OpenCost counts the
    pool's GPUs, the price of one `nvidia.com/gpu` unit."""

    pool: str
    node_hourly: Decimal
    gpu_unit_hourly: Decimal | None


def decimal_text(value: Decimal) -> str:
    """A price as a plain decimal string: no exponent, no trailing zeros (`2.85`, `0.8`, `0`)."""
    return format(value.normalize(), "f")


def gpu_hour(pool: Pool) -> Decimal:
    """The pool's `cost.gpuHour` as the decimal the file wrote: the shortest text that reads
    back as the same float (`0.80` -> `0.8`, `2.85` -> `2.85`, never `2.8500000000000001`)."""
    return Decimal(repr(pool.gpu_hour))


def units_per_gpu(pool: Pool) -> int | None:
    """How many `nvidia.com/gpu` units each physical GPU of the pool advertises, or None when
    the pool advertises something else (MIG devices, `.shared` replicas, DRA, AMD)."""
    offers = pool_offers(pool)
    if len(offers) != 1 or offers[0].device_class is not None:
        return None
    offer = offers[0]
    if offer.resource != COUNTED_RESOURCE or pool.gpus_per_node < 1:
        return None
    return offer.per_node // pool.gpus_per_node


def pool_price(pool: Pool) -> PoolPrice:
    rate = gpu_hour(pool)
    units = units_per_gpu(pool)
    if units is None or units < 1:
        return PoolPrice(pool.name, rate * pool.gpus_per_node, None)
    with localcontext() as context:
        context.prec = 34
        per_unit = rate / units
        if context.flags[Inexact]:
            per_unit = per_unit.quantize(PLACES)
    return PoolPrice(pool.name, Decimal(0), per_unit)


def rows(prices: Sequence[PoolPrice]) -> list[list[str]]:
    """The header, the node rows, then the `gpu` rows (the last node row sets the provider's
    node field; every one names the same)."""
    table = [list(COLUMNS)]
    for price in prices:
        table.append(
            ["", price.pool, "", "node", NODE_FIELD, "", decimal_text(price.node_hourly), ""]
        )
    for price in prices:
        if price.gpu_unit_hourly is not None:
            table.append(
                ["", price.pool, "", "gpu", GPU_FIELD, "", decimal_text(price.gpu_unit_hourly), ""]
            )
    return table


def pricing_csv(pools: Sequence[Pool]) -> str:
    """The CSV file, written by Python's csv module (RFC 4180 quoting, `\\n` line ends)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerows(rows([pool_price(p) for p in pools]))
    return out.getvalue()


def render(view: ClusterView) -> Iterator[Output]:
    """One ConfigMap in `monitoring` with every pool of the cluster."""
    if not view.pools:
        return
    yield Manifest(
        LAYER,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                **metadata(CONFIG_MAP, PROMETHEUS_NAMESPACE),
                "annotations": {
                    CURRENCY_ANNOTATION: ",".join(sorted({p.currency for p in view.pools}))
                },
            },
            "data": {PRICING_KEY: pricing_csv(view.pools)},
        },
        view.pools[0].origin.at("spec", "cost"),
    )
