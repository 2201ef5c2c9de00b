"""Output directories written as a whole: a temporary directory beside the target, then one
rename, so that a reader (or an interrupted run: Ctrl-C, kill, a full disk) sees either the
old directory or the new one, never a mix.

- :func:`check_output_dir`: before any work, whether a directory can be written there and
  holds no earlier result (``force`` replaces one) -- one clear error naming the path;
- :func:`atomic_dir`: ``with atomic_dir(target) as tmp:`` write into ``tmp``; on success the
  target is replaced by it in one step (Linux ``renameat2(RENAME_EXCHANGE)`` swaps a
  non-empty directory atomically; elsewhere two renames), on failure ``tmp`` is removed;
- files and directories get the permissions the user's umask gives (``tempfile`` makes them
  0600 / 0700: colleagues on a shared file system could not read the results);
- a temporary directory left by a killed process is named ``.hpcdispatch-writing-HOST-PID-*``
  and :func:`remove_stale_writing_dirs` removes those of dead processes on this host.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hpcdispatch.errors import ConfigError

WRITING_PREFIX = ".hpcdispatch-writing-"
_RENAME_EXCHANGE = 2  # linux/fs.h


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def make_readable(path: Path) -> None:
    """Give ``path`` the permissions a plain ``open`` / ``mkdir`` would under the umask."""
    base = 0o777 if path.is_dir() else 0o666
    os.chmod(path, base & ~current_umask())


def check_output_dir(path: str | Path, force: bool = False) -> Path:
    """``path`` as an output directory: it can be created (or replaced) and, unless ``force``,
    does not already hold files. Raises :class:`ConfigError` with one line naming the path."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out}: exists and is not a directory")
    existing = out if out.exists() else next((p for p in out.parents if p.exists()), Path("."))
    if not existing.is_dir():
        raise ConfigError(f"{out}: cannot be created, {existing} is a file, not a directory")
    parent_existing = out.parent if out.parent.exists() else existing
    if not os.access(parent_existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{out}: cannot write into {parent_existing} (permission denied)")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ConfigError(
            f"{out} already holds files (an earlier run?); choose another directory, or --force to "
            "replace it"
        )
    return out


@contextmanager
def atomic_dir(target: str | Path, force: bool = False) -> Iterator[Path]:
    """Write a directory as a whole: yields a temporary directory beside ``target``; when the
    block ends without an exception it replaces ``target`` (which may exist only empty unless
    ``force``), else it is removed."""
    out = check_output_dir(target, force)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(
        tempfile.mkdtemp(
            prefix=f"{WRITING_PREFIX}{socket.gethostname()}-{os.getpid()}-", dir=out.parent
        )
    )
    try:
        yield tmp
        make_readable(tmp)
        _replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _replace_dir(new: Path, target: Path) -> None:
    """``new`` becomes ``target`` in one step when possible; the old ``target`` is removed."""
    try:
        os.rename(new, target)  # target absent or an empty directory: atomic
        return
    except OSError:
        if not target.is_dir():
            raise
    if _exchange(new, target):  # new now holds the old directory
        shutil.rmtree(new, ignore_errors=True)
        return
    aside = target.with_name(
        f"{WRITING_PREFIX}{socket.gethostname()}-{os.getpid()}-old-{target.name}"
    )
    os.rename(target, aside)
    os.rename(new, target)
    shutil.rmtree(aside, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2`` with ``RENAME_EXCHANGE``); False when
    the system cannot."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        renameat2 = ctypes.CDLL(name, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    done = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return done == 0


def remove_stale_writing_dirs(parent: str | Path) -> list[Path]:
    """Remove the temporary directories of processes of this host that died while writing."""
    removed: list[Path] = []
    here = socket.gethostname()
    directory = Path(parent)
    if not directory.is_dir():
        return removed
    mine = f"{WRITING_PREFIX}{here}-"
    for p in directory.iterdir():
        if not p.name.startswith(mine):
            continue
        pid_text = p.name[len(mine) :].split("-")[0]
        if not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
            continue  # still writing
        except ProcessLookupError:
            pass
        except PermissionError:
            continue  # another user's live process
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed
