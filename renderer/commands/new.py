"""`gpuplane new KIND NAME`: a commented starting file for a team, pool, queue or cluster.

The file carries the schema modeline, a comment above every field in the schema's own words, and
blanks to fill: an empty value with a `# REPLACE-ME: what to write` comment. An empty value is
null, which no field of any kind accepts, so `gpuplane validate` (and an editor, through the
modeline) reports every blank that is still empty at its line, whatever the field's type: a
half-filled file cannot pass. A placeholder word such as `REPLACE-ME` would not do that: free text
and IdP group names accept any word.

Templates are Jinja2 (`renderer/templates/new-<kind>.yaml.j2`); the names they suggest (queues,
clusters, pools, accelerators) come from the repository and the GPU catalog.
"""

from __future__ import annotations

import ipaddress
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from renderer.inputs.blanks import blank, names_of
from renderer.inputs.schema import KIND_FOLDERS, schema_for
from renderer.inputs.source import load_file
from renderer.model.images import parse_prefix
from renderer.output.jinja_env import environment
from renderer.pipeline import load_platform
from renderer.policy.delivery import REQUIRED_THRESHOLDS

KINDS: Mapping[str, str] = {kind.lower(): folder for folder, kind in KIND_FOLDERS.items()}
"""`team` -> `teams`, and so on: the kinds `gpuplane new` writes and their folders."""

MARK = "REPLACE-ME"
NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
WIDTH = 100


class ScaffoldError(Exception):
    """A name or a target that `gpuplane new` refuses (a usage error, exit 2)."""


@dataclass(frozen=True, slots=True)
class Blank:
    """One value left for the author: its line (1-based), its field, and what to write."""

    line: int
    field: str
    """As findings name it: `spec.namespaces[0].cluster`."""
    what: str


@dataclass(frozen=True, slots=True)
class Scaffold:
    path: str
    """Repository-relative, e.g. `teams/vision.yaml`."""
    text: str
    blanks: tuple[Blank, ...]


_BLANK = re.compile(rf"^\s*(?:- )?[A-Za-z]+:\s+# {MARK}: (?P<what>.*)$")
_KEY = re.compile(r"^(?P<item>- )?(?P<key>[A-Za-z]+):")


def scaffold(kind: str, name: str, root: Path) -> Scaffold:
    """The starting file for a new `kind` named `name` in the repository at `root`."""
    if kind not in KINDS:
        raise ScaffoldError(f"unknown kind '{kind}': one of {', '.join(sorted(KINDS))}")
    if len(name) > 63 or not NAME.match(name):
        raise ScaffoldError(
            f"'{name}' is not a valid {kind} name: a DNS-1123 label (lower-case letters, digits "
            "and '-', starting and ending with a letter or digit, at most 63 characters)"
        )
    known = {
        folder: sorted(
            p.stem for p in (root / folder).glob("*.yaml") if p.is_file() and p.name[0] != "."
        )
        for folder in KINDS.values()
    }
    images, egress = _allowed(root)
    names = names_of(load_platform(root, policy=False).platform)
    of_kind = KIND_FOLDERS[KINDS[kind]]

    def ask(field_path: str) -> str:
        """The blank at that field, in the words `validate`'s hint uses (inputs/blanks.py)."""
        return f"# {MARK}: {blank(of_kind, field_path, names, name, {}).sentence}"

    text = _template(kind).render(
        name=name,
        known=known,
        allowed_images=images,
        allowed_egress=egress,
        comment=_comment,
        thresholds=REQUIRED_THRESHOLDS,
        describe=_describer(KIND_FOLDERS[KINDS[kind]]),
        one_of=_enumerator(KIND_FOLDERS[KINDS[kind]]),
        ask=ask,
        serving=_serving_pool(root, known.get("pools", ())),
        shared_pools=_shared_pools(root, known.get("pools", ())),
    )
    paths = _paths(text)
    blanks = tuple(
        Blank(number, paths[number], match["what"])
        for number, line in enumerate(text.splitlines(), 1)
        if (match := _BLANK.match(line))
    )
    return Scaffold(f"{KINDS[kind]}/{name}.yaml", text, blanks)


def _paths(text: str) -> dict[int, str]:
    """The field path of each line that starts a key, from the indentation of the block-style
    YAML the templates write (`spec.addons.kueue.version`, `spec.gpus[0].pool`)."""
    frames: list[tuple[int, str]] = []  # (column, key or [index]) from the root down
    items: dict[str, int] = {}
    paths: dict[int, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        content = line.lstrip(" ")
        if not content or content.startswith("#"):
            continue
        column = len(line) - len(content)
        while frames and frames[-1][0] >= column:
            frames.pop()
        match = _KEY.match(content)
        if content.startswith("- "):
            parent = _join(frames)
            items[parent] = items.get(parent, -1) + 1
            frames.append((column, f"[{items[parent]}]"))
            column += 2
        if match:
            frames.append((column, match["key"]))
            paths[number] = _join(frames)
    return paths


def _join(frames: Sequence[tuple[int, str]]) -> str:
    return "".join(k if k.startswith("[") or i == 0 else f".{k}" for i, (_, k) in enumerate(frames))


def write_scaffold(root: Path, new: Scaffold) -> Path:
    """Create the file; an existing one is never overwritten (ScaffoldError)."""
    path = root / new.path
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with path.open("x", encoding="utf-8") as out:
            out.write(new.text)
    except FileExistsError as err:
        raise ScaffoldError(f"{new.path} exists already; edit it, or pick another name") from err
    return path


@cache
def _template(kind: str) -> jinja2.Template:
    # the only inserted values are a validated name, names checked as names, and the blanks
    return environment().get_template(f"new-{kind}.yaml.j2")


@dataclass(frozen=True, slots=True)
class _Network:
    """An allowed egress network as a new team file shows it, and a port to suggest."""

    cidr: str
    shown: str
    port: int


def _serving_pool(root: Path, pools: Sequence[str]) -> tuple[str, str]:
    """The first pool in `pools/` whose workload is online inference, and its cluster, for the
    commented endpoint of a new team file (names only, checked as names: no free text of the
    file goes into the scaffold)."""
    for name in pools:
        loaded = load_file(root / "pools" / f"{name}.yaml", f"pools/{name}.yaml")
        data = loaded.document.data if loaded.document is not None else None
        spec = data.get("spec") if isinstance(data, Mapping) else None
        if not isinstance(spec, Mapping) or spec.get("workload") != "online-inference":
            continue
        cluster = spec.get("cluster")
        if isinstance(cluster, str) and NAME.match(cluster) and len(cluster) <= 63:
            return name, cluster
    return "an-inference-pool", "its-cluster"


def _shared_pools(root: Path, pools: Sequence[str]) -> list[str]:
    """`l40s-infer: 4 time-slicing replicas per GPU, so nominal 4 is 1 GPU` for each pool in
    `pools/` whose GPUs are shared (time-slicing or MPS), where quota counts replicas, not
    GPUs (names only, checked as names, and a whole number: no free text of the file goes
    into the scaffold)."""
    found = []
    for name in pools:
        loaded = load_file(root / "pools" / f"{name}.yaml", f"pools/{name}.yaml")
        data = loaded.document.data if loaded.document is not None else None
        spec = data.get("spec") if isinstance(data, Mapping) else None
        sharing = spec.get("sharing") if isinstance(spec, Mapping) else None
        if sharing not in ("time-slicing", "mps") or not NAME.match(name):
            continue
        assert isinstance(spec, Mapping)
        block = spec.get("timeSlicing" if sharing == "time-slicing" else "mps")
        replicas = block.get("replicas") if isinstance(block, Mapping) else None
        if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas > 1:
            found.append(
                f"{name}: {replicas} {sharing} replicas per GPU, so nominal {replicas} is 1 GPU"
            )
    return found


def _allowed(root: Path) -> tuple[list[str], list[_Network]]:
    """What gpuplane.yaml's `spec.allowlists` holds, for a new team file's comments: the
    registry paths, and each network with its protocol and ports. Only entries that read as a
    registry path or a network are shown: none of the file's free text goes into the scaffold.
    """
    file = root / "gpuplane.yaml"
    loaded = load_file(file, "gpuplane.yaml") if file.is_file() else None
    data = loaded.document.data if loaded is not None and loaded.document is not None else None
    spec = data.get("spec") if isinstance(data, Mapping) else None
    lists = spec.get("allowlists") if isinstance(spec, Mapping) else None
    if not isinstance(lists, Mapping):
        return [], []
    images = [
        text
        for text in lists.get("images") or []
        if isinstance(text, str) and text.endswith("/") and parse_prefix(text) is not None
    ]
    egress = []
    for entry in lists.get("egress") or []:
        network = _network(entry.get("cidr")) if isinstance(entry, Mapping) else None
        if network is None:
            continue
        protocol = entry.get("protocol") if entry.get("protocol") in ("TCP", "UDP") else None
        ports = entry.get("ports") or []
        shown = [str(p) for p in ports if isinstance(p, int) and not isinstance(p, bool)]
        detail = f"{protocol or 'TCP/UDP'} {', '.join(shown) or 'any port'}"
        egress.append(_Network(network, f"{network} {detail}", int(shown[0]) if shown else 443))
    return images, egress


def _network(cidr: object) -> str | None:
    try:
        return str(ipaddress.IPv4Network(cidr, strict=False)) if isinstance(cidr, str) else None
    except ValueError:
        return None


def _comment(text: str, indent: int = 2) -> str:
    """`text` as comment lines at that indentation, wrapped like the schema's descriptions."""
    prefix = " " * indent + "# "
    return "\n".join(textwrap.wrap(text, WIDTH, initial_indent=prefix, subsequent_indent=prefix))


def _describer(kind: str) -> Any:
    """`describe("spec.namespaces[].cluster", 6)`: the schema's description of that field as
    comment lines at that indentation."""
    schema = schema_for(kind).raw

    def describe(path: str, indent: int = 2) -> str:
        text = " ".join(str(_field(schema, path)["description"]).split())
        prefix = " " * indent + "# "
        return "\n".join(
            textwrap.wrap(text, WIDTH, initial_indent=prefix, subsequent_indent=prefix)
        )

    return describe


def _enumerator(kind: str) -> Any:
    """`one_of("spec.workload")`: the values the schema allows there, as `a | b | c`."""
    schema = schema_for(kind).raw

    def one_of(path: str) -> str:
        return " | ".join(str(v) for v in _resolve(schema, _field(schema, path))["enum"])

    return one_of


def _field(schema: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """The schema of the field at a dotted path (`[]` for a list's items), with its description:
    a property's own, or that of the definition it refers to."""
    node: Mapping[str, Any] = schema
    for part in path.replace("[]", ".[]").split("."):
        node = _resolve(schema, node)
        node = node["items"] if part == "[]" else node["properties"][part]
    return node if "description" in node else _resolve(schema, node)


def _resolve(schema: Mapping[str, Any], node: Mapping[str, Any]) -> Mapping[str, Any]:
    while "$ref" in node and "properties" not in node and "items" not in node:
        ref = str(node["$ref"])
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"cannot follow {ref}")
        node = schema["$defs"][ref.removeprefix("#/$defs/")]
    return node
