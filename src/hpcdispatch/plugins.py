"""User modules that register dispatchers: ``--plugin FILE.py`` of ``simulate`` and
``compare``, and a sweep's ``plugins`` (loaded where cells are parsed and where they run).

A plugin is a ``.py`` file (loaded by path, so a worker needs no ``PYTHONPATH``; on a cluster
the path must be visible to the workers) or an importable module name. Loading is
idempotent per process.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
import traceback
from pathlib import Path

from hpcdispatch.errors import ConfigError

_LOADED: set[str] = set()


def resolve_plugin(text: str, base: Path) -> str:
    """A ``.py`` path becomes absolute (relative to ``base``); a module name stays as it is."""
    if text.endswith(".py"):
        p = Path(text).expanduser()
        return str(p if p.is_absolute() else (base / p).resolve())
    return text


def load_plugins(plugins: tuple[str, ...]) -> None:
    for plugin in plugins:
        if plugin in _LOADED:
            continue
        try:
            if plugin.endswith(".py"):
                path = Path(plugin)
                if not path.is_file():
                    raise ConfigError(f"plugin file '{plugin}' does not exist")
                name = "hpcdispatch_plugin_" + hashlib.sha256(plugin.encode()).hexdigest()[:12]
                spec = importlib.util.spec_from_file_location(name, path)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    sys.modules.pop(name, None)
                    raise
            else:
                importlib.import_module(plugin)
        except ConfigError:
            raise
        except Exception as exc:  # a broken plugin is a user error: name it and its failing line
            last = traceback.extract_tb(exc.__traceback__)[-1]
            raise ConfigError(
                f"plugin '{plugin}' failed to load: {type(exc).__name__}: {exc} "
                f"({last.filename}, line {last.lineno})"
            ) from None
        _LOADED.add(plugin)
