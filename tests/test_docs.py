"""The README's Python example runs and prints what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_starts_with_exactly_two_setup_commands():
    text = README.read_text()
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block is not None and text.index(block.group(0)) < 40
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    assert "compare" in commands[0] and "pytest" in commands[1]
    ci = (README.parent / ".ci" / "run").read_text().splitlines()
    # CI runs the second command's two halves, with the lint/format/type gates between them
    install, _, test = commands[1].partition(" && ")
    assert install in ci and test in ci and ci.index(install) < ci.index(test)
    gates = ci[ci.index(install) + 1 : ci.index(test)]
    assert any("ruff check" in g for g in gates) and any("ruff format --check" in g for g in gates)
    assert any("mypy" in g for g in gates)


def test_readme_python_example_output():
    text = README.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    expected = [line[2:] for line in code.splitlines() if line.startswith("# ")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue().splitlines() == expected
