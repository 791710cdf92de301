"""`gpuplane fit` on real, unmodified upstream workloads, against expectations written from
Kueue's source.

`../shared/reference/workloads/` (62 files) and `../shared/reference/workloads-2/` (37) hold
upstream manifests, byte for byte, with their sources in each folder's SOURCES.md.
`tests/fit_corpus/*.yaml` holds, for each file (`workloads2.yaml` for the second folder), what Kueue
v0.19.2 does with it on the example platform's cluster prod-east (Kubernetes 1.36, so the
priority policy is the mutating one): each workload's verdict, whether Kueue admits it as one
gang, the integration, the ClusterQueue, each pod set's count, flavor and per-pod requests, and
for `never` Kueue's message. Each entry names the Kueue (or upstream) source file and function
that decides it; none was copied from fit's output. Failing cases are fit's to-do list. An
entry's `kueue:` (Kueue's own verdict, where gpuplane's checks beyond Kueue change the answer)
and `beyond:` (what those checks conclude) document the difference; the verdict compared is
the one fit must give. For a `never` that comes from gpuplane's own checks rather than Kueue
(an entry with `kueue:`, or `messageFrom: gpuplane`), the expected message may be fit's
`message` or one of its `reasons`. A TrainJob whose runtime is not in the file (`runtime:
not-in-file`) is expected as its trainer `node` job alone, with a note of fit's that names the
runtime as not in the file. `messageFrom: API server` or `Kueue` is compared with fit's
`messageFrom`. A file whose expectation waits for a step of the chain not built yet says which
(`pending: ...`): the test expects it to fail, with that reason, until it agrees.

fit now answers for the whole admission chain, and no upstream file carries the platform's
team and cost-centre labels, a TTL within the team's retention, an image of the team's
registries or (in llm-serve) what Pod Security's restricted level asks, so every file is refused
before Kueue. The example's prod-east declares neither the Kubeflow Training Operator, the MPI
Operator nor AppWrapper, so their files are refused at discovery too (kubectl's `no matches for
kind`), whose fix is to declare the add-on. The verdicts here are Kueue's (and the checks after
it): they are compared with fit's `kueueVerdict`, its answer for the object as if those
refusals were fixed (for an add-on, on the cluster as if it declared it; tests/
test_fit_served.py holds that answer equal to the one where it is declared). An expected
`never` whose message is a refusal of the chain itself (the API server's discovery and decoding,
Kueue's validating webhooks, the priority policy) is compared with fit's verdict and the
chain's refusals (`_decided_by_the_chain`).

The upstream files are never copied into this repository: the tests read them beside the
checkout (`REPO.parent / "shared"`) and skip where that folder is absent. Their git blob ids
are checked against SOURCES.md first, so an expectation is known to be about the upstream file.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from ruamel.yaml import YAML

from renderer.cli import main
from tests.conftest import example_at_kubernetes

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO.parent / "shared" / "reference"
WORKLOADS = REFERENCE / "workloads"
CORPUS = REPO / "tests" / "fit_corpus"
KUBERNETES_VERSION = "1.36"

FOLDERS = {"workloads2.yaml": REFERENCE / "workloads-2"}
"""The corpus folder of each expectations file; the others' is `../shared/reference/workloads/`."""


def folder_of(corpus: str) -> Path:
    return FOLDERS.get(corpus, WORKLOADS)


CORPUS_FOLDERS = sorted({WORKLOADS, *FOLDERS.values()})

MESSAGE_FROM = ("gpuplane", "API server", "Kueue")
"""Who answers a `never`: gpuplane's own checks (the platform's policies, the nodes; fit may
name them more precisely, so this is not compared), the API server (or kubectl before it), or
Kueue."""
PENDING = ("apiserver gates",)
NOT_CREATED = "refused before it is created"
"""The summary fit gives an object that is no workload and that the chain refuses."""
"""Steps of the chain an expectation may wait for (`pending:`)."""


# --- the expectations ---------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    corpus: str
    """The expectations file (`batch.yaml`, `serving.yaml`, `workloads2.yaml`)."""
    file: str
    """The workload file, relative to the corpus folder."""
    entry: dict[str, Any]

    @property
    def folder(self) -> Path:
        return folder_of(self.corpus)

    @property
    def id(self) -> str:
        return f"{self.folder.name}/{self.file}"


def _expectations() -> dict[tuple[Path, str], tuple[str, dict[str, Any]]]:
    found: dict[tuple[Path, str], tuple[str, dict[str, Any]]] = {}
    for path in sorted(CORPUS.glob("*.yaml")):
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        assert isinstance(loaded, dict), f"{path.name}: a mapping of file -> expectation"
        for file, entry in loaded.items():
            key = (folder_of(path.name), str(file))
            assert key not in found, f"{file} is expected both in {found[key][0]} and {path.name}"
            found[key] = (path.name, entry)
    return found


EXPECTED = _expectations()
CASES = [Case(corpus, file, entry) for (_, file), (corpus, entry) in EXPECTED.items()]


def _param(case: Case) -> Any:
    """A case, expected to fail while its expectation waits for a step not built yet."""
    pending = case.entry.get("pending")
    marks = [pytest.mark.xfail(reason=f"pending: {pending}", strict=True)] if pending else []
    return pytest.param(case, marks=marks, id=case.id)


def _sources(folder: Path = WORKLOADS) -> dict[str, str]:
    """file -> git blob id, from the table of the folder's SOURCES.md."""
    blobs: dict[str, str] = {}
    for line in (folder / "SOURCES.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and re.fullmatch(r"[0-9a-f]{40}", cells[5]):
            blobs[cells[0]] = cells[5]
    return blobs


def _git_blob_id(path: Path) -> str:
    """What `git hash-object FILE` prints."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


# --- quantities ---------------------------------------------------------------------------

_SUFFIX = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(?:[eE]([+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?)$")


def quantity(value: object) -> Fraction:
    """A Kubernetes quantity as an exact number (`500m`, `2Gi`, `8G`, `1e3`, 4)."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return Fraction(str(value))
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise ValueError(f"not a quantity: {value!r}")
    number, exponent, suffix = match.groups()
    scale = Fraction(10) ** int(exponent) if exponent else _SUFFIX[suffix or ""]
    return Fraction(number) * scale


def test_quantities_compare_as_kubernetes_does() -> None:
    assert quantity("500m") == quantity("0.5") == Fraction(1, 2)
    assert quantity("2Gi") == quantity(2 * 2**30) == quantity("2048Mi")
    assert quantity("8G") == quantity("8e9") != quantity("8Gi")
    assert quantity(4) == quantity("4")
    with pytest.raises(ValueError):
        quantity("lots")


# --- running fit --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example platform, both clusters at Kubernetes 1.36."""
    return example_at_kubernetes(tmp_path_factory.mktemp("platform"), KUBERNETES_VERSION)


_FIT_CACHE: dict[tuple[Path, str, str], dict[str, Any]] = {}


def in_namespace(platform: Path, file: str, namespace: str, folder: Path = WORKLOADS) -> Path:
    """The corpus file itself, or, where its objects name another namespace, a copy with
    `metadata.namespace` set to the team's, as a team lead edits it before applying it there:
    `kubectl apply -n` refuses an object of another namespace
    (`test_a_file_of_another_namespace_is_refused_as_kubectl_refuses`)."""
    source = folder / file
    yaml = YAML()
    documents = list(yaml.load_all(source.read_text(encoding="utf-8")))
    moved = False
    for document in documents:
        metadata = document.get("metadata") if isinstance(document, dict) else None
        if isinstance(metadata, dict) and metadata.get("namespace") not in (None, namespace):
            metadata["namespace"] = namespace
            moved = True
    if not moved:
        return source
    copy = platform.parent / "moved" / folder.name / file
    copy.parent.mkdir(parents=True, exist_ok=True)
    with copy.open("w", encoding="utf-8") as out:
        yaml.dump_all(documents, out)
    return copy


def run_fit(platform: Path, file: str, namespace: str, folder: Path = WORKLOADS) -> dict[str, Any]:
    """fit's JSON for one corpus file (run once per file and namespace)."""
    key = (folder, file, namespace)
    if key not in _FIT_CACHE:
        target = in_namespace(platform, file, namespace, folder)
        args = ["-C", str(platform), "fit", str(target), "--namespace", namespace]
        result = CliRunner().invoke(main, [*args, "--format", "json"], catch_exceptions=True)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            f"fit crashed on {file}: {result.exception!r}\n{result.output}"
        )
        try:
            answer = json.loads(result.stdout)
        except json.JSONDecodeError:
            pytest.fail(
                f"fit printed no JSON for {file} (exit {result.exit_code}):\n{result.output}"
            )
        assert isinstance(answer, dict), f"fit's JSON for {file} is not an object"
        _FIT_CACHE[key] = answer
    return _FIT_CACHE[key]


def workloads_of(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-workload objects: `workloads` of the file's answer (one job's answer, before
    the multi-document shape, counts as a file of one workload)."""
    listed = answer.get("workloads")
    if isinstance(listed, list):
        return [w for w in listed if isinstance(w, dict)]
    return [answer]


def _object_of(workload: dict[str, Any]) -> tuple[str, str]:
    identity = workload.get("workload") or {}
    return str(identity.get("kind") or ""), str(identity.get("name") or "")


def _same_object(expected: str, workload: dict[str, Any]) -> bool:
    kind, _, name = expected.partition(" ")
    got_kind, got_name = _object_of(workload)
    if got_kind != kind:
        return False
    if name.endswith("-"):  # generateName: fit may keep the prefix or add a suffix
        return got_name == name or got_name.startswith(name) or got_name == ""
    return got_name == name


def _ignored_of(answer: dict[str, Any]) -> list[str]:
    return sorted(
        f"{i.get('kind')} {i.get('name')}"
        for i in answer.get("ignored") or []
        if isinstance(i, dict)
    )


def _pod_sets_of(workload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(ps.get("name")): ps for ps in workload.get("podSets") or [] if isinstance(ps, dict)}


def _nonzero(requests: dict[str, Any]) -> dict[str, Fraction]:
    return {k: quantity(v) for k, v in requests.items() if quantity(v) != 0}


def _messages(workload: dict[str, Any]) -> str:
    return str(workload.get("message") or "")


def _reasons(workload: dict[str, Any]) -> list[str]:
    return [str(r) for r in workload.get("reasons") or [] if r]


def _notes(workload: dict[str, Any]) -> list[str]:
    return [str(n) for n in workload.get("notes") or [] if n]


def _from_gpuplane(want: dict[str, Any]) -> bool:
    """A `never` that gpuplane's own checks decide (Kueue alone would answer otherwise, or the
    platform refuses the object before Kueue sees it)."""
    return "kueue" in want or want.get("messageFrom") == "gpuplane"


def _runtime_name(file: str, want: dict[str, Any], folder: Path = WORKLOADS) -> str:
    """spec.runtimeRef.name of the TrainJob `want` names, read from the upstream file."""
    kind, _, name = str(want["object"]).partition(" ")
    text = (folder / file).read_text(encoding="utf-8")
    for document in yaml.safe_load_all(text):
        if not isinstance(document, dict) or document.get("kind") != kind:
            continue
        metadata = document.get("metadata") or {}
        if name not in (metadata.get("name"), metadata.get("generateName")):
            continue
        ref = (document.get("spec") or {}).get("runtimeRef") or {}
        if ref.get("name"):
            return str(ref["name"])
    raise AssertionError(f"{file}: {want['object']} has no spec.runtimeRef.name")


# --- the tests ----------------------------------------------------------------------------


def _shared(folder: Path) -> None:
    if not (folder / "SOURCES.md").is_file():
        pytest.skip(f"../shared/reference/{folder.name} is not beside this checkout")


@pytest.mark.parametrize("folder", CORPUS_FOLDERS, ids=[f.name for f in CORPUS_FOLDERS])
def test_the_corpus_is_the_upstream_files_byte_for_byte(folder: Path) -> None:
    _shared(folder)
    blobs = _sources(folder)
    assert blobs, "SOURCES.md lists no file with a blob id"
    wrong = {
        file: (_git_blob_id(folder / file), blob)
        for file, blob in blobs.items()
        if not (folder / file).is_file() or _git_blob_id(folder / file) != blob
    }
    assert not wrong, f"files that are not the upstream blob (got, SOURCES.md): {wrong}"


@pytest.mark.parametrize("folder", CORPUS_FOLDERS, ids=[f.name for f in CORPUS_FOLDERS])
def test_every_corpus_file_has_an_expectation(folder: Path) -> None:
    _shared(folder)
    sources = folder / "SOURCES.md"
    on_disk = sorted(
        str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p != sources
    )
    expected = [file for (where, file) in EXPECTED if where == folder]
    missing = [f for f in on_disk if f not in expected]
    unknown = [f for f in expected if f not in on_disk]
    unsourced = [f for f in on_disk if f not in _sources(folder)]
    assert not missing, f"corpus files without an expectation in tests/fit_corpus: {missing}"
    assert not unknown, f"expectations for files the corpus does not have: {unknown}"
    assert not unsourced, f"corpus files SOURCES.md does not list: {unsourced}"


def test_every_expectation_is_complete() -> None:
    """The expectations themselves: the keys the format allows, a reason for each workload."""
    workload_keys = {
        "object", "verdict", "gang", "integration", "clusterQueue", "podSets", "message", "why",
        "kueue", "beyond", "messageFrom", "runtime",
    }  # fmt: skip
    pod_set_keys = {"count", "flavor", "borrows", "perPod"}
    for case in CASES:
        entry = case.entry
        assert set(entry) <= {"namespace", "workloads", "ignored", "pending"}, case.file
        assert entry.get("pending") in (None, *PENDING), (case.file, entry.get("pending"))
        assert entry.get("namespace") in {"llm-train", "llm-serve", "llm-notebooks"}, case.file
        for workload in entry.get("workloads") or []:
            assert set(workload) <= workload_keys, (case.file, set(workload) - workload_keys)
            assert re.fullmatch(r"[A-Za-z]+ \S+", str(workload.get("object"))), case.file
            assert workload.get("verdict") in {"fits", "borrows", "never", "error"}, case.file
            assert str(workload.get("why") or "").strip(), f"{case.file}: no why"
            if workload["verdict"] == "never":
                assert workload.get("message"), f"{case.file}: a never without Kueue's message"
            if "kueue" in workload:  # Kueue's own answer where gpuplane's checks change it
                assert workload["kueue"].get("verdict") in {"fits", "borrows", "never"}, case.file
            if "messageFrom" in workload:
                assert workload["messageFrom"] in MESSAGE_FROM, (case.file, workload["messageFrom"])
            if "runtime" in workload:
                assert workload["runtime"] == "not-in-file", (case.file, workload["runtime"])
                assert str(workload["object"]).startswith("TrainJob "), case.file
                if (case.folder / case.file).is_file():  # the upstream file, beside the checkout
                    _runtime_name(case.file, workload, case.folder)
            for name, pod_set in (workload.get("podSets") or {}).items():
                assert set(pod_set) <= pod_set_keys, (case.file, name, set(pod_set))
                assert isinstance(pod_set.get("count"), int), (case.file, name)
                for value in (pod_set.get("perPod") or {}).values():
                    quantity(value)
        assert entry.get("workloads") or entry.get("ignored"), f"{case.file}: nothing expected"


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_fit_agrees_with_kueue(case: Case, platform: Path) -> None:
    _shared(case.folder)
    answer = run_fit(platform, case.file, case.entry["namespace"], case.folder)
    # an object that is no workload but that a step of the chain refuses (a Secret written into
    # the file, a NodePort Service, a runtime members may not create) gets an answer of its
    # own; Kueue never sees it, so it counts among the ignored objects here
    every = workloads_of(answer)
    refused = [w for w in every if str(w.get("summary", "")).startswith(NOT_CREATED)]
    got = [w for w in every if w not in refused]
    problems: list[str] = []
    expected_workloads = case.entry.get("workloads") or []
    if len(got) != len(expected_workloads):
        problems.append(
            f"{len(got)} workload(s) {[' '.join(_object_of(w)) for w in got]}, "
            f"expected {[w['object'] for w in expected_workloads]}"
        )
    for want in expected_workloads:
        matches = [w for w in got if _same_object(want["object"], w)]
        if not matches:
            problems.append(f"{want['object']}: not among fit's workloads")
            continue
        problems.extend(_compare(want, matches[0]))
        if want.get("runtime") == "not-in-file":
            problems.extend(_runtime_noted(case, want, matches[0]))
    want_ignored = sorted(case.entry.get("ignored") or [])
    got_ignored = sorted(_ignored_of(answer) + [" ".join(_object_of(w)) for w in refused])
    if got_ignored != want_ignored:
        problems.append(f"ignored {got_ignored}, expected {want_ignored}")
    assert not problems, f"{case.id}:\n  " + "\n  ".join(problems)


def _runtime_noted(case: Case, want: dict[str, Any], got: dict[str, Any]) -> Iterator[str]:
    """fit must say that the TrainJob's runtime is not in the file (and so that it counts only
    the trainer `node` job)."""
    runtime = _runtime_name(case.file, want, case.folder)
    noted = [n for n in _notes(got) if runtime in n and "not in the file" in n.lower()]
    if not noted:
        yield (
            f"{want['object']}: no note says that runtime {runtime} is not in the file "
            f"(notes: {_notes(got)!r})"
        )


def _chain_messages(workload: dict[str, Any]) -> list[str]:
    """What the steps of the admission chain before Kueue refused, in the user's words."""
    return [
        str(refusal.get("message"))
        for step in workload.get("chain") or []
        for refusal in step.get("refusals") or []
    ]


def _decided_by_the_chain(want: dict[str, Any], got: dict[str, Any]) -> bool:
    """An expected `never` whose message is a refusal of the chain before Kueue (the API
    server's own steps, the priority policy): the file's verdict is the chain's. Every other
    expectation is Kueue's (and the checks after it): fit's `kueueVerdict`, its answer for the
    object once the platform's common-label, TTL, image and Pod Security refusals, which no
    upstream file meets, are fixed."""
    if want["verdict"] != "never" or not want.get("message"):
        return False
    needles = want["message"] if isinstance(want["message"], list) else [want["message"]]
    refused = _chain_messages(got)
    return all(any(needle in message for message in refused) for needle in needles)


def _compare(want: dict[str, Any], got: dict[str, Any]) -> Iterator[str]:
    label = want["object"]
    chain = _decided_by_the_chain(want, got)
    verdict = got.get("verdict") if chain else got.get("kueueVerdict")
    if verdict != want["verdict"]:
        which = "verdict" if chain else "kueueVerdict"
        yield f"{label}: {which} {verdict!r}, expected {want['verdict']!r}"
    for key in ("gang", "integration", "clusterQueue"):
        if key in want and got.get(key) != want[key]:
            yield f"{label}: {key} {got.get(key)!r}, expected {want[key]!r}"
    source = want.get("messageFrom", "gpuplane")  # gpuplane's own checks name themselves
    if source != "gpuplane" and not chain and got.get("messageFrom") != source:
        yield f"{label}: messageFrom {got.get('messageFrom')!r}, expected {source!r}"
    if want["verdict"] == "never" and want.get("message") and not chain:
        needles = want["message"] if isinstance(want["message"], list) else [want["message"]]
        text = _messages(got)
        # gpuplane's own checks may put the fact among the reasons, beside Kueue's message
        texts = [text, *_reasons(got)] if _from_gpuplane(want) else [text]
        for needle in needles:
            if not any(needle in t for t in texts):
                where = "message or reasons" if len(texts) > 1 else "message"
                yield f"{label}: {where} {texts!r} lacks {needle!r}"
    want_sets = want.get("podSets") or {}
    if not want_sets:
        return
    got_sets = _pod_sets_of(got)
    if list(got_sets) != list(want_sets):
        yield f"{label}: pod sets {list(got_sets)}, expected {list(want_sets)} (in Kueue's order)"
    for name, want_set in want_sets.items():
        got_set = got_sets.get(name)
        if got_set is None:
            continue
        if got_set.get("count") != want_set["count"]:
            yield f"{label} {name}: count {got_set.get('count')}, expected {want_set['count']}"
        if "flavor" in want_set and got_set.get("flavor") != want_set["flavor"]:
            yield f"{label} {name}: flavor {got_set.get('flavor')!r}, expected {want_set['flavor']!r}"
        if "borrows" in want_set and got_set.get("borrows") != want_set["borrows"]:
            yield f"{label} {name}: borrows {got_set.get('borrows')!r}, expected {want_set['borrows']!r}"
        if "perPod" in want_set:
            try:
                have = _nonzero(dict(got_set.get("perPod") or {}))
            except ValueError as error:
                yield f"{label} {name}: perPod {got_set.get('perPod')!r}: {error}"
                continue
            need = _nonzero(want_set["perPod"])
            if have != need:
                shown = {k: str(v) for k, v in got_set.get("perPod", {}).items()}
                yield f"{label} {name}: perPod {shown}, expected {want_set['perPod']}"


def test_a_file_of_another_namespace_is_refused_as_kubectl_refuses(platform: Path) -> None:
    """kubectl (cli-runtime `RequireNamespace`) refuses `apply -n llm-train` of an object whose
    `metadata.namespace` is another: the unmodified PaddleJob sample names `kubeflow`."""
    file = "kubeflow-training-operator/paddle-simple-gpu.yaml"
    if not (WORKLOADS / file).is_file():
        pytest.skip("../shared is not beside this checkout")
    args = ["-C", str(platform), "fit", str(WORKLOADS / file), "--namespace", "llm-train"]
    result = CliRunner().invoke(main, [*args, "--format", "json"])
    answer = json.loads(result.stdout)
    assert answer["verdict"] == "error"
    reasons = [r for w in answer["workloads"] for r in w["reasons"]]
    assert any('does not match the namespace "llm-train"' in r for r in reasons), reasons
