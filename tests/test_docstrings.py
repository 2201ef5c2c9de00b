"""Module docstrings stay lean: what a module is for and how to use it, in at most 25 lines
(about 20 is the aim); design history goes to docs/ (each page's "From the module
docstrings" section) or the commit message."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "hpcdispatch"
MAX_LINES = 25


def docstring_lines(path: Path) -> int:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
    return 0 if doc is None else len(doc.splitlines())


def test_no_module_docstring_runs_over_25_lines():
    too_long = {
        str(p.relative_to(SRC)): n
        for p in sorted(SRC.rglob("*.py"))
        if (n := docstring_lines(p)) > MAX_LINES
    }
    assert too_long == {}, f"module docstrings over {MAX_LINES} lines: {too_long}"


def test_the_count_is_the_docstrings_own_lines(tmp_path):
    ok = tmp_path / "ok.py"
    ok.write_text('"""' + "\n".join(["line"] * MAX_LINES) + '"""\nx = 1\n')
    long = tmp_path / "long.py"
    long.write_text('"""' + "\n".join(["line"] * (MAX_LINES + 1)) + '"""\n')
    none = tmp_path / "none.py"
    none.write_text("x = '''not a docstring'''\n")
    assert docstring_lines(ok) == MAX_LINES
    assert docstring_lines(long) == MAX_LINES + 1
    assert docstring_lines(none) == 0
    assert len(list(SRC.rglob("*.py"))) > 100  # the test looks where the modules are
