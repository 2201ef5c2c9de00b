"""The house: no import circle in ``src/hpcdispatch`` and at most two imports that run back
up a layer, where the layers are the ones ``docs/ARCHITECTURE.md`` lists (so the map cannot
drift from the code).

Every ``import`` statement of every module counts, wherever it stands (module level, inside a
function, under ``TYPE_CHECKING``): ``from hpcdispatch.pkg import name`` is an arrow to the
submodule ``pkg.name`` when there is one, else to ``pkg/__init__.py``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "hpcdispatch"
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "ARCHITECTURE.md"
MAX_UPWARD = 2


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = ("hpcdispatch",) + path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every import of a project module in ``path``."""
    out = []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1]
                    + ([base] if base else [])
                )
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("hpcdispatch") and target != name:
                out.append((target, node.lineno))
    return out


def layers() -> dict[str, int]:
    """``module prefix -> layer`` from ARCHITECTURE.md's layer table."""
    text = ARCHITECTURE.read_text()
    block = re.search(r"<!-- layers -->\n```\n(.*?)```", text, re.S)
    assert block, "docs/ARCHITECTURE.md lost its layer table (<!-- layers --> before a ``` block)"
    out = {}
    for line in block.group(1).splitlines():
        m = re.match(r"\s*(\d+)\s+(.*)$", line)
        if m:
            for entry in m.group(2).split("#")[0].split():
                out[
                    "hpcdispatch"
                    if entry == "hpcdispatch"
                    else f"hpcdispatch.{entry.strip('/').replace('/', '.')}"
                ] = int(m.group(1))
    return out


def layer_of(module: str, table: dict[str, int]) -> int:
    candidates = [p for p in table if module == p or module.startswith(p + ".")]
    assert candidates, f"{module} is in no layer of docs/ARCHITECTURE.md"
    return table[max(candidates, key=len)]


def graph() -> dict[str, list[tuple[str, int]]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_every_module_has_a_layer():
    table = layers()
    for name in modules():
        layer_of(name, table)


def test_no_import_circle():
    g = {a: sorted({b for b, _ in edges}) for a, edges in graph().items()}
    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(a: str) -> None:
        state[a] = 1
        stack.append(a)
        for b in g.get(a, []):
            if state.get(b) == 1:
                circles.append(stack[stack.index(b) :] + [b])
            elif b not in state:
                visit(b)
        stack.pop()
        state[a] = 2

    for a in sorted(g):
        if a not in state:
            visit(a)
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)


def test_at_most_two_imports_run_back_up_a_layer():
    table = layers()
    upward = [
        f"{a} (layer {layer_of(a, table)}, line {line}) -> {b} (layer {layer_of(b, table)})"
        for a, edges in graph().items()
        for b, line in edges
        if layer_of(b, table) > layer_of(a, table)
    ]
    assert len(upward) <= MAX_UPWARD, "imports that run back up a layer:\n" + "\n".join(upward)


def test_the_simulator_and_the_readers_stay_below_the_policies():
    g = graph()
    for name, edges in g.items():
        targets = {b for b, _ in edges}
        if name.startswith(("hpcdispatch.sim", "hpcdispatch.protocol")):
            assert not any(
                t.startswith(
                    (
                        "hpcdispatch.dispatchers",
                        "hpcdispatch.cp",
                        "hpcdispatch.compiled",
                        "hpcdispatch.predictors",
                    )
                )
                for t in targets
            ), (name, targets)
        if name.startswith("hpcdispatch.workload"):
            assert not any(
                t.startswith(("hpcdispatch.sim", "hpcdispatch.protocol")) for t in targets
            ), (name, targets)


def test_a_dispatcher_needs_one_import_line():
    import hpcdispatch.protocol as protocol

    for name in (
        "Dispatcher",
        "DispatchView",
        "Decision",
        "Start",
        "Allocation",
        "Scratch",
        "Tags",
        "register",
    ):
        assert hasattr(protocol, name), name
