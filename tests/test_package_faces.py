"""Every package's face: ``__all__`` lists its API, every name in it exists and is documented.

The rule for "documented": a class, function or module has its own docstring (a dataclass's
generated ``Name(field, ...)`` signature does not count); any other object (a constant, a
registry, a type alias) is named in the package's docstring, as ``NAME``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import hpcdispatch

SRC = Path(hpcdispatch.__file__).parent
PACKAGES = sorted(
    ".".join(("hpcdispatch", *p.parent.relative_to(SRC).parts))
    for p in SRC.rglob("__init__.py")
    if "engine" not in p.parent.relative_to(SRC).parts  # compiled/engine: numba's cache
)


def test_every_package_is_covered() -> None:
    # the packages the issue names, so that a renamed folder cannot drop out silently
    expected = {
        "hpcdispatch",
        *(
            f"hpcdispatch.{p}"
            for p in (
                "system workload allocators protocol sim compiled planning predictors cp "
                "cp.models dispatchers metrics results validation slurm sweep report cli"
            ).split()
        ),
    }
    assert expected <= set(PACKAGES)


def _undocumented(package: str, name: str, obj: object) -> str | None:
    if inspect.ismodule(obj) or inspect.isclass(obj) or inspect.isroutine(obj):
        doc = (obj.__doc__ or "").strip()
        if inspect.isclass(obj) and doc.startswith(f"{obj.__name__}("):
            doc = ""  # the signature a dataclass writes for itself
        return None if doc else f"{name}: no docstring"
    package_doc = importlib.import_module(package).__doc__ or ""
    if re.search(
        rf"``{re.escape(name)}``|:(?:data|class|func|obj):`~?[\w.]*\b{name}`", package_doc
    ):
        return None
    return f"{name}: a {type(obj).__name__}, not named in the package docstring"


@pytest.mark.parametrize("package", PACKAGES)
def test_face(package: str) -> None:
    module = importlib.import_module(package)
    assert (module.__doc__ or "").strip(), f"{package}: no docstring"
    names = getattr(module, "__all__", None)
    assert isinstance(names, list) and names, f"{package}: no __all__"
    duplicates = sorted({n for n in names if names.count(n) > 1})
    assert not duplicates, f"{package}: __all__ lists {duplicates} twice"
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{package}: __all__ names {missing}, which it does not define"
    problems = [p for n in names if (p := _undocumented(package, n, getattr(module, n)))]
    assert not problems, f"{package}: " + "; ".join(problems)


def test_the_rule_can_fail() -> None:
    # the documentation rule rejects what it should: a bare dataclass, a lambda, a constant
    # the docstring does not name
    from dataclasses import dataclass

    @dataclass
    class Bare:
        x: int

    assert _undocumented("hpcdispatch", "Bare", Bare) == "Bare: no docstring"
    assert _undocumented("hpcdispatch", "f", lambda: 0) == "f: no docstring"
    assert _undocumented("hpcdispatch", "NOT_NAMED", 3) is not None


def _package_of(module: str) -> str:
    """The innermost package (of PACKAGES) that holds ``module``."""
    return max((p for p in PACKAGES if module == p or module.startswith(p + ".")), key=len)


def test_other_packages_import_only_the_face() -> None:
    # a name one package imports from another's module is in that package's __all__, or is a
    # module, or is a function named as its module (in a face it would hide the module:
    # hpcdispatch.slurm.replay.replay, hpcdispatch.cli.main.main); a package and its
    # subpackages may use each other's internals; the top-level modules (errors, _util,
    # engine ...) are no package's inside
    offences = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("").parts
        if "engine" in rel[:-1]:
            continue
        me = ".".join(("hpcdispatch", *rel)).removesuffix(".__init__")
        mine = _package_of(me) if len(rel) > 1 else me
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(
                "hpcdispatch."
            ):
                continue
            owner = _package_of(node.module)
            if owner == "hpcdispatch" or owner == mine or owner.startswith(mine + "."):
                continue
            if mine.startswith(owner + "."):
                continue
            face = set(getattr(importlib.import_module(owner), "__all__", ()))
            for alias in node.names:
                name = alias.name
                if name == node.module.rsplit(".", 1)[1]:
                    continue
                if name not in face and not _is_module(f"{node.module}.{name}"):
                    offences.append(f"{me} imports {name} from {node.module}")
    assert not offences, "; ".join(offences)


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True
