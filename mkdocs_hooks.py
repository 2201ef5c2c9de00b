"""mkdocs hooks for the documentation site (mkdocs.yml, ``hooks:``).

One reference page per package of ``hpcdispatch`` that declares ``__all__``: the page is
``::: hpcdispatch.<package>``, which mkdocstrings renders with the names that ``__all__``
lists (griffe takes ``__all__`` as the public face), so a name added to ``__all__`` appears
in the reference without editing the docs. The packages are found by reading their
``__init__.py`` (no import), and the pages are added to the nav under "Python API".
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

SRC = Path(__file__).resolve().parent / "src" / "hpcdispatch"
API_DIR = "reference/api"


def packages_with_all() -> list[str]:
    """The dotted names (``hpcdispatch`` first) of the packages whose __init__ sets __all__."""
    found = []
    for init in sorted(SRC.rglob("__init__.py")):
        rel = init.parent.relative_to(SRC.parent)
        if "compiled" in rel.parts[1:2] and len(rel.parts) > 2:
            continue
        tree = ast.parse(init.read_text(encoding="utf-8"))
        for node in tree.body:
            targets = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign | ast.AugAssign):
                targets = [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                found.append(".".join(rel.parts))
                break
    return sorted(found, key=lambda name: (name != "hpcdispatch", name))


def listed_submodules(package: str) -> list[str]:
    """The names in ``package.__all__`` that are submodules of it (``cp.models`` lists its
    models ``hcp``, ``pcp19`` ...): mkdocstrings leaves submodules out of a package's page
    (``show_submodules: false``), so each gets a section of its own."""
    folder = SRC.parent.joinpath(*package.split("."))
    tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            names = [n for n in value if isinstance(n, str)]
    return [
        n for n in names if (folder / f"{n}.py").is_file() or (folder / n / "__init__.py").is_file()
    ]


def _page_path(package: str) -> str:
    return f"{API_DIR}/{package}.md"


def on_config(config: Any) -> Any:
    """Put one nav entry per package under Reference > Python API."""
    for section in config["nav"]:
        if isinstance(section, dict) and "Reference" in section:
            for entry in section["Reference"]:
                if isinstance(entry, dict) and "Python API" in entry:
                    index = entry["Python API"]
                    entry["Python API"] = [{"Overview": index}] + [
                        {p: _page_path(p)} for p in packages_with_all()
                    ]
    return config


def on_files(files: Files, config: Any) -> Files:
    """Generate the package pages and the overview that lists them."""
    packages = packages_with_all()
    for package in packages:
        text = (
            f"# `{package}`\n\n"
            f"The names `{package}.__all__` lists, from their docstrings.\n\n"
            f"::: {package}\n"
        )
        for name in listed_submodules(package):
            text += (
                f"\n::: {package}.{name}\n"
                "    options:\n"
                "      show_root_heading: true\n"
                "      show_root_full_path: false\n"
            )
        files.append(File.generated(config, _page_path(package), content=text))
    rows = "\n".join(f"| [`{p}`]({p}.md) |" for p in packages)
    overview = (
        "# Python API\n\n"
        "One page per package: the names in its `__all__` (its public face), each with its\n"
        "docstring and signature. Generated from the code at build time (`mkdocs_hooks.py`).\n\n"
        "| package |\n|---|\n" + rows + "\n"
    )
    files.append(File.generated(config, f"{API_DIR}/index.md", content=overview))
    return files


_ROLE = re.compile(r":(?:class|func|mod|meth|attr|data|exc|obj|ref):(<code>)~?")


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    """The docstrings' reST roles (``:class:`Job```) as plain code: Markdown renders the
    backticks as ``<code>``, and the role's name in front of it is dropped."""
    return _ROLE.sub(r"\1", html)
