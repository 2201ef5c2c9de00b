"""Every package's face: ``__all__`` lists its API, every name in it exists and is documented.

The rule for "documented": a class, function or module has its own docstring (a dataclass's
generated ``Name(field, ...)`` signature does not count); any other object (a constant, a
registry, a type alias) is named in the package's docstring, as ``NAME``.
"""

from __future__ import annotations

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
