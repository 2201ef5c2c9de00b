"""The documentation site (issue 53): built in strict mode, it holds every command and option of
the CLI (from click's own command tree) and every name of every package's ``__all__``; its
pages render in a headless Chromium from ``file://``, with their navigation, and search works
there.

Needs the ``docs`` extra (``pip install ".[docs]"``); without it these tests skip, saying why.
``.ci/run`` installs it and sets ``HPCDISPATCH_REQUIRE_DOCS=1``, which turns the skip into a
failure. The site is built once for the module (about 15 s).
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

import hpcdispatch
from hpcdispatch.cli.main import cli

pytestmark = pytest.mark.slow  # (a whole documentation site is built, then opened in a browser)

ROOT = Path(__file__).resolve().parents[1]
DOCS_MODULES = (
    "mkdocs",
    "material",
    "mkdocstrings",
    "mkdocstrings_handlers.python",
    "mkdocs_click",
)


def _why_not() -> str | None:
    missing = []
    for name in DOCS_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # the parent package of a dotted name is missing
            found = False
        if not found:
            missing.append(name)
    if missing:
        return (
            f"the docs extra is not installed ({', '.join(missing)} not importable); "
            'install it with: python3 -m pip install ".[docs]"'
        )
    return None


def _require_docs() -> None:
    why = _why_not()
    if why is None:
        return
    if os.environ.get("HPCDISPATCH_REQUIRE_DOCS") == "1":
        pytest.fail(f"HPCDISPATCH_REQUIRE_DOCS=1 but the docs site cannot be built: {why}")
    pytest.skip(f"docs site: {why}")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _require_docs()
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT / "src"), env.get("PYTHONPATH", "")) if p
    )
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def _text(fragment: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", fragment))


def _sections(page: str) -> dict[str, str]:
    """Heading text -> the text below it, up to the next heading."""
    parts = re.split(r"<h[1-6][^>]*>(.*?)</h[1-6]>", page, flags=re.S)
    return {
        _text(parts[i]).replace("¶", "").strip(): _text(parts[i + 1])
        for i in range(1, len(parts) - 1, 2)
    }


def _commands(
    command: click.Command, path: tuple[str, ...]
) -> list[tuple[tuple[str, ...], click.Command]]:
    found = [(path, command)]
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            if not sub.hidden:
                found += _commands(sub, (*path, name))
    return found


def test_every_cli_command_and_option_is_in_the_reference(site: Path) -> None:
    sections = _sections((site / "reference" / "cli.html").read_text(encoding="utf-8"))
    commands = _commands(cli, ("hpcdispatch",))
    assert len(commands) > 15  # the tree was walked, not just the root
    missing = []
    for path, command in commands:
        title = " ".join(path)
        if title not in sections:
            missing.append(f"command {title!r}")
            continue
        body = sections[title]
        ctx = click.Context(command, info_name=path[-1])
        for param in command.get_params(ctx):
            if getattr(param, "hidden", False):
                continue
            names = (
                [*param.opts, *param.secondary_opts]
                if isinstance(param, click.Option)
                else [param.make_metavar(ctx)]
            )
            for name in names:
                if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", body):
                    missing.append(f"{title} {name}")
    assert not missing, missing


def _packages_with_all() -> dict[str, list[str]]:
    """Every package of hpcdispatch that has __all__ (found by importing, independently of
    the hook that makes the pages)."""
    found = {"hpcdispatch": list(hpcdispatch.__all__)}
    for info in pkgutil.walk_packages(hpcdispatch.__path__, "hpcdispatch."):
        if info.ispkg:
            module = importlib.import_module(info.name)
            if hasattr(module, "__all__"):
                found[info.name] = list(module.__all__)
    return found


def test_every_name_of_every_all_is_in_the_api_reference(site: Path) -> None:
    packages = _packages_with_all()
    assert {"hpcdispatch", "hpcdispatch.workload", "hpcdispatch.sweep"} <= packages.keys()
    missing = []
    for package, names in packages.items():
        page = site / "reference" / "api" / f"{package}.html"
        if not page.is_file():
            missing.append(f"page of {package}")
            continue
        text = page.read_text(encoding="utf-8")
        ids = set(re.findall(r'id="([^"]+)"', text))
        missing += [f"{package}.{n}" for n in names if f"{package}.{n}" not in ids]
        # the docstrings' reST roles are rendered as code, not shown as ":class:"
        assert not re.search(r":(class|func|mod|meth|attr|data):", _text(text)), package
    assert not missing, missing


def test_the_site_opens_from_disk(site: Path) -> None:
    """use_directory_urls is off: links point at .html files, not at folders a file://
    browser cannot open; search's index is a script (the offline plugin)."""
    index = (site / "index.html").read_text(encoding="utf-8")
    assert 'href="getting-started.html"' in index
    assert 'href="reference/api/index.html"' in index
    assert (site / "search" / "search_index.js").is_file()


# -- in a browser -------------------------------------------------------------------------

NAV = """JSON.stringify({
  h1: (document.querySelector('article h1') || {}).textContent || '',
  nav: Array.from(document.querySelectorAll('nav.md-nav--primary a.md-nav__link'))
            .map(a => a.textContent.trim()).filter(t => t),
  active: Array.from(document.querySelectorAll('nav.md-nav--primary .md-nav__link--active'))
            .map(a => a.textContent.trim()),
  header: !!document.querySelector('header.md-header'),
  search: !!document.querySelector('input.md-search__input'),
  width: document.querySelector('article').getBoundingClientRect().width,
})"""

SEARCH = """(async () => {
  const input = document.querySelector('input.md-search__input');
  input.focus();
  input.value = 'backfilling';
  input.dispatchEvent(new Event('focus'));
  input.dispatchEvent(new KeyboardEvent('keyup', {key: 'g'}));
  input.dispatchEvent(new Event('input', {bubbles: true}));
  for (let i = 0; i < 100; i++) {
    const items = document.querySelectorAll('.md-search-result__item');
    if (items.length) {
      return JSON.stringify({items: items.length,
        first: items[0].querySelector('a').getAttribute('href')});
    }
    await new Promise(r => setTimeout(r, 100));
  }
  return JSON.stringify({items: 0,
    meta: (document.querySelector('.md-search-result__meta') || {}).textContent || ''});
})()"""


@pytest.fixture(scope="module")
def browser():
    from browser import Browser, find_chromium

    binary = find_chromium()
    if binary is None:
        pytest.skip(
            "chromium is not installed, so the docs site cannot be checked in a browser; "
            ".ci/run installs Debian's chromium when it runs as root"
        )
    b = Browser(binary)
    try:
        yield b
    finally:
        b.close()


@pytest.mark.parametrize(
    "page, h1, active",
    [
        ("index.html", "hpcdispatch", "Home"),
        ("guide/simulate-compare.html", "Simulate and compare", "Simulate and compare"),
        ("reference/api/hpcdispatch.workload.html", "hpcdispatch.workload", "hpcdispatch.workload"),
    ],
)
def test_pages_render_with_their_navigation(site: Path, browser, page, h1, active) -> None:
    result = browser.open((site / page).as_uri(), extra=NAV)
    assert result.errors == [], result.errors
    state = result.state["extra"]
    assert state["h1"].replace("¶", "").strip() == h1
    assert state["header"] and state["search"]
    # the whole navigation is there on every page, with the page itself marked active
    for entry in ("Getting started", "Simulate and compare", "Command line", "Python API"):
        assert entry in state["nav"], (entry, state["nav"])
    assert active in state["active"], state["active"]
    assert state["width"] > 300  # the article is laid out, not collapsed by missing CSS
    assert all(i["complete"] and i["width"] > 0 for i in result.state["images"])


def test_search_works_from_disk(site: Path, browser) -> None:
    result = browser.open((site / "index.html").as_uri(), extra=SEARCH)
    assert result.errors == [], result.errors
    found = result.state["extra"]
    assert found["items"] > 0, found
