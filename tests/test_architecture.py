"""The house stays the way docs/architecture.md draws it: imports point down the pipeline only.

Each module of `renderer/` and `workflows/` belongs to one stage, and a stage may import only the
stages listed for it in ALLOWED. The graph is read from the source (every `import`, at any depth
of the file, so a function-local import cannot hide an arrow), and checked for circles. The
checker runs on the real tree, and on small made-up trees that break each rule, so a test that
could never fail would show here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("renderer", "workflows")

FACE = ("renderer.cli", "renderer.__main__")
"""The only modules that print or pick an exit code: these, and every module under them (the
`renderer.cli` package, one module per command)."""

ALLOWED: Mapping[str, frozenset[str]] = {
    "package": frozenset(),
    "findings": frozenset({"findings"}),
    "model": frozenset({"findings", "model"}),
    "output": frozenset({"findings", "output"}),
    "inputs": frozenset({"findings", "model", "inputs"}),
    "policy": frozenset({"findings", "model", "policy"}),
    "suites": frozenset({"findings", "model", "output", "suites"}),
    "layers": frozenset({"findings", "model", "output", "layers", "suites"}),
    "pipeline": frozenset({"findings", "model", "output", "inputs", "policy", "layers"}),
    "admission": frozenset({"findings", "model", "output", "inputs", "layers", "admission"}),
    "commands": frozenset(
        {"findings", "model", "output", "inputs", "policy", "layers", "pipeline", "commands"}
        | {"admission"}
    ),
    "face": frozenset(
        {"findings", "model", "output", "inputs", "policy", "layers", "pipeline", "commands"}
        | {"admission", "face"}
    ),
    "probes": frozenset({"probes"}),
}
"""What each stage may import. The model never imports inputs, layers or the face; policy and
layers never import each other; the probes never import the engine (they run in the suite's
image, where only `workflows.probes` is installed)."""

STAGE_PACKAGES = {
    "renderer.findings": "findings",
    "renderer.model": "model",
    "renderer.output": "output",
    "renderer.inputs": "inputs",
    "renderer.policy": "policy",
    "renderer.layers": "layers",
    "renderer.commands": "commands",
    "renderer.admission": "admission",
    "workflows.suites": "suites",
    "workflows.probes": "probes",
}

MAX_LOOSE_MODULES = 10
"""Modules directly in `renderer/` (the face, the pipeline and the package files)."""

MAX_PARAMETERS = 7
"""A function that needs more takes a context object (options, caches) instead."""

MAX_LOGIC_LINES = 80
"""Non-blank, non-comment lines of a function's body, its docstring and the rows of its literal
tables left out: a function longer than this does more than one thing."""

DATA_LEAVES = (
    ast.Constant,
    ast.Name,
    ast.Attribute,
    ast.keyword,
    ast.Starred,
    ast.Subscript,
    ast.Slice,
    ast.JoinedStr,
    ast.FormattedValue,
    ast.expr_context,
    ast.operator,
    ast.unaryop,
)
DISPLAYS = (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Call, ast.BinOp, ast.UnaryOp)

PRINTING = frozenset({"print", "echo", "secho", "exit", "Console"})
"""Calls (by name or attribute) that print or exit; outside the face only the probes (their own
command line, in the suite's container) may make them."""


def modules(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, for every `.py` file under the packages."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


@cache
def syntax_trees(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, ast.Module]:
    """Every module's syntax tree, parsed once per tree for all the checks below."""
    return {
        module: ast.parse(path.read_text(encoding="utf-8"), str(path))
        for module, path in modules(root, packages).items()
    }


def stage_of(module: str) -> str:
    if any(module == face or module.startswith(face + ".") for face in FACE):
        return "face"
    if module == "renderer.pipeline":
        return "pipeline"
    for prefix, stage in STAGE_PACKAGES.items():
        if module == prefix or module.startswith(prefix + "."):
            return stage
    if module in PACKAGES:
        return "package"
    raise AssertionError(f"{module} belongs to no stage: add it to a stage's folder")


def _imported(module: str, path: Path, tree: ast.Module, known: Mapping[str, Path]) -> set[str]:
    """The known modules one file imports (the longest known prefix of each dotted name)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.extend(f"{base}.{alias.name}" for alias in node.names)
    found = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    known = modules(root, packages)
    trees = syntax_trees(root, packages)
    return {module: _imported(module, path, trees[module], known) for module, path in known.items()}


def upward_imports(graph: Mapping[str, set[str]]) -> list[str]:
    """`a -> b` for every import a stage may not make."""
    arrows = []
    for a, targets in graph.items():
        for b in targets:
            if stage_of(b) == "package":
                continue  # `renderer/__init__.py` and `workflows/__init__.py` hold a docstring
            if stage_of(b) not in ALLOWED[stage_of(a)] | {stage_of(a)}:
                arrows.append(f"{a} ({stage_of(a)}) -> {b} ({stage_of(b)})")
    return sorted(arrows)


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The import circles (strongly connected components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def printing_calls(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """`module:line name` for every print or exit outside the face and the probes."""
    found = []
    for module, tree in syntax_trees(root, packages).items():
        if stage_of(module) in ("face", "probes"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in PRINTING:
                    found.append(f"{module}:{node.lineno} {name}")
    return found


def private_imports(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """`module: name` for every `_private` name one module imports from another of ours."""
    found = []
    for module, tree in syntax_trees(root, packages).items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (
                node.level
                or node.module in packages
                or (node.module or "").startswith(tuple(f"{p}." for p in packages))
            ):
                found.extend(
                    f"{module}: {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                )
    return sorted(found)


IO_LIBRARIES = frozenset(
    {
        "ruamel",
        "yaml",
        "json",
        "jinja2",
        "click",
        "rich",
        "pathlib",
        "os",
        "io",
        "shutil",
        "subprocess",
    }
)
"""What reads, writes or formats files: the model, policy and findings use none of it."""


def io_imports(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """`module: library` for every file or YAML library the model, policy or findings import."""
    found = []
    for module, tree in syntax_trees(root, packages).items():
        if stage_of(module) not in ("findings", "model", "policy"):
            continue
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            found.extend(f"{module}: {n}" for n in names if n.partition(".")[0] in IO_LIBRARIES)
    return sorted(found)


def is_table(node: ast.AST) -> bool:
    """A literal table: displays and constructor calls of constants and names, with nothing in
    it that decides (no comprehension, lambda, condition or comparison)."""
    if isinstance(node, ast.Call) and not isinstance(node.func, (ast.Name, ast.Attribute)):
        return False
    if not isinstance(node, (*DATA_LEAVES, *DISPLAYS)):
        return False
    return all(is_table(child) for child in ast.iter_child_nodes(node))


def logic_lines(function: ast.FunctionDef | ast.AsyncFunctionDef, source: Sequence[str]) -> int:
    """The function's lines of logic (MAX_LOGIC_LINES); a nested function's count in it too."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if not body:
        return 0
    rows: set[int] = set()  # a table's lines after its first
    for statement in body:
        for node in ast.walk(statement):
            end = getattr(node, "end_lineno", None)
            if isinstance(node, DISPLAYS) and end and end > node.lineno and is_table(node):
                rows.update(range(node.lineno + 1, end + 1))
    last = body[-1].end_lineno or body[-1].lineno
    return sum(
        1
        for number in range(body[0].lineno, last + 1)
        if number not in rows
        and source[number - 1].strip()
        and not source[number - 1].lstrip().startswith("#")
    )


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Its parameters, `*args` and `**kwargs` one each, `self` and `cls` not counted."""
    args = function.args
    names = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    count = len(names) + (args.vararg is not None) + (args.kwarg is not None)
    return count - (1 if names and names[0].arg in ("self", "cls") else 0)


def over_budget(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """`module:line function: what` for every function over MAX_PARAMETERS or MAX_LOGIC_LINES."""
    found = []
    files = modules(root, packages)
    for module, tree in syntax_trees(root, packages).items():
        source = files[module].read_text(encoding="utf-8").splitlines()
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            where = f"{module}:{node.lineno} {node.name}"
            if (lines := logic_lines(node, source)) > MAX_LOGIC_LINES:
                found.append(f"{where}: {lines} lines of logic")
            if (count := parameters(node)) > MAX_PARAMETERS:
                found.append(f"{where}: {count} parameters")
    return sorted(found)


def reachable(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


# --- the real tree ------------------------------------------------------------------------------


def test_no_import_circle() -> None:
    assert circles(import_graph(REPO)) == []


def test_imports_point_down_the_pipeline() -> None:
    assert upward_imports(import_graph(REPO)) == []


def test_every_module_has_a_stage() -> None:
    for module in modules(REPO):
        assert stage_of(module) in ALLOWED


def test_few_modules_loose_at_the_top() -> None:
    loose = sorted(p.name for p in (REPO / "renderer").glob("*.py"))
    assert len(loose) <= MAX_LOOSE_MODULES, loose


def test_every_function_within_its_budget() -> None:
    """At most MAX_PARAMETERS parameters and MAX_LOGIC_LINES lines of logic (CONTRIBUTING.md)."""
    assert over_budget(REPO) == []


def test_only_the_face_prints() -> None:
    assert printing_calls(REPO) == []


def test_package_files_define_no_rules_or_state() -> None:
    """A package's `__init__` documents it and, for a layer, strings its modules together; the
    registry never imports rule modules, so importing a package has no hidden effects."""
    for module, path in modules(REPO).items():
        if path.name != "__init__.py":
            continue
        assert "document_rule(" not in path.read_text(encoding="utf-8"), module
        assert ast.get_docstring(syntax_trees(REPO)[module]), f"{module} says nothing about itself"


def test_no_module_imports_another_modules_private_names() -> None:
    """A helper two modules share is public, with a name that says what it does."""
    assert private_imports(REPO) == []


def test_the_model_and_policy_see_no_yaml_and_no_files() -> None:
    """They compute from the typed platform only; reading and writing is the inputs' and the
    output's job, so a rule can be tested on a Platform built in memory."""
    assert io_imports(REPO) == []


def test_the_cli_imports_every_module_that_documents_rules() -> None:
    """The registry imports none of them, so `explain --list` and SARIF know a rule only if the
    CLI's imports reach its module."""
    documenting = {
        module
        for module, path in modules(REPO).items()
        if "document_rule(" in path.read_text(encoding="utf-8")
        and module != "renderer.findings.rules"
    }
    assert documenting, "no module documents a rule: the search is broken"
    assert documenting - reachable(import_graph(REPO), "renderer.cli") == set()


# --- the checker itself, on made-up trees ---------------------------------------------------------


def _tree(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


BASE = {
    "renderer/__init__.py": '"""x"""\n',
    "renderer/model/__init__.py": '"""x"""\n',
    "renderer/model/platform.py": "from renderer.findings.diagnostics import Location\n",
    "renderer/findings/__init__.py": '"""x"""\n',
    "renderer/findings/diagnostics.py": "Location = 1\n",
    "renderer/layers/__init__.py": '"""x"""\n',
    "renderer/layers/tenancy.py": "from renderer.model.platform import Location\n",
    "renderer/policy/__init__.py": '"""x"""\n',
    "renderer/policy/check.py": "from renderer.model import platform\n",
    "workflows/__init__.py": "",
    "workflows/probes/__init__.py": "from .envelope import x\n",
    "workflows/probes/envelope.py": "x = 1\n",
}


def test_checker_passes_a_tree_that_keeps_the_rules(tmp_path: Path) -> None:
    graph = import_graph(_tree(tmp_path, BASE))
    assert graph["renderer.layers.tenancy"] == {"renderer.model.platform"}
    assert graph["workflows.probes"] == {"workflows.probes.envelope"}  # relative import read
    assert upward_imports(graph) == []
    assert circles(graph) == []


@pytest.mark.parametrize(
    ("module", "text", "arrow"),
    [
        (
            "renderer/model/platform.py",
            "def f():\n    from renderer.layers import tenancy\n",
            "renderer.model.platform (model) -> renderer.layers.tenancy (layers)",
        ),
        (
            "renderer/policy/check.py",
            "from renderer.layers.tenancy import Location\n",
            "renderer.policy.check (policy) -> renderer.layers.tenancy (layers)",
        ),
        (
            "renderer/layers/tenancy.py",
            "import renderer.policy.check\n",
            "renderer.layers.tenancy (layers) -> renderer.policy.check (policy)",
        ),
        (
            "workflows/probes/envelope.py",
            "from renderer.model.platform import Location\n",
            "workflows.probes.envelope (probes) -> renderer.model.platform (model)",
        ),
    ],
)
def test_checker_catches_an_upward_import(
    tmp_path: Path, module: str, text: str, arrow: str
) -> None:
    graph = import_graph(_tree(tmp_path, {**BASE, module: text}))
    assert arrow in upward_imports(graph)


def test_checker_catches_a_circle(tmp_path: Path) -> None:
    files = {
        **BASE,
        "renderer/layers/gpu.py": "from renderer.layers import tenancy\n",
        "renderer/layers/tenancy.py": "from renderer.layers.gpu import x\n",
    }
    graph = import_graph(_tree(tmp_path, files))
    assert circles(graph) == [["renderer.layers.gpu", "renderer.layers.tenancy"]]
    assert upward_imports(graph) == []  # a circle inside one stage is still caught above


def test_checker_catches_printing(tmp_path: Path) -> None:
    files = {**BASE, "renderer/layers/tenancy.py": "import sys\nprint('x')\nsys.exit(1)\n"}
    assert printing_calls(_tree(tmp_path, files)) == [
        "renderer.layers.tenancy:2 print",
        "renderer.layers.tenancy:3 exit",
    ]


def test_checker_catches_a_private_import(tmp_path: Path) -> None:
    files = {**BASE, "renderer/layers/tenancy.py": "from renderer.model.platform import _x\n"}
    assert private_imports(_tree(tmp_path, files)) == ["renderer.layers.tenancy: _x"]


def test_checker_catches_io_in_the_model(tmp_path: Path) -> None:
    files = {**BASE, "renderer/model/platform.py": "from ruamel.yaml import YAML\nimport os.path\n"}
    assert io_imports(_tree(tmp_path, files)) == [
        "renderer.model.platform: os.path",
        "renderer.model.platform: ruamel.yaml",
    ]


def test_a_module_outside_every_stage_is_named() -> None:
    with pytest.raises(AssertionError, match=r"renderer\.stray belongs to no stage"):
        stage_of("renderer.stray")


def test_checker_catches_a_function_over_budget(tmp_path: Path) -> None:
    logic = "".join(f"    x{i} = {i} + y\n" for i in range(MAX_LOGIC_LINES))
    rows = "".join(f"        ({i}, 'row', Row(a={i})),\n" for i in range(200))
    decided = "".join(f"        ({i}, Row(a=1 if y else {i})),\n" for i in range(200))
    wide = ", ".join(f"p{i}" for i in range(MAX_PARAMETERS))
    text = (
        f'def fits(y):\n    """Doc."""\n    # a note\n\n{logic}\n'
        f"def over(y):\n{logic}    return y\n\n"
        f"def table():\n    return [\n{rows}    ]\n\n"
        f"def decides(y):\n    return [\n{decided}    ]\n\n"
        f"def seven(self, {wide}):\n    pass\n\n"
        f"def eight({wide}, *more):\n    pass\n"
    )
    root = _tree(tmp_path, {**BASE, "renderer/model/long.py": text})
    found = {line.split(" ", 1)[1] for line in over_budget(root)}
    assert found == {
        f"over: {MAX_LOGIC_LINES + 1} lines of logic",
        "decides: 202 lines of logic",
        f"eight: {MAX_PARAMETERS + 1} parameters",
    }
