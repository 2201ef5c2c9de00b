"""Slurm's own spellings of times, memory sizes, GRES and TRES, parsed once for every reader.

- **Times** (:func:`parse_slurm_time`, :func:`format_slurm_time`): the grammar of
  ``sbatch --time`` and of ``sacct``'s ``Timelimit``/``Elapsed``: ``MM``, ``MM:SS``,
  ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``; a bare number is **minutes**;
  ``UNLIMITED``, ``INFINITE`` and ``-1`` (any case) mean no limit (``None``), and so does ``0``
  for a time limit (sbatch: "a time limit of zero requests that no time limit be imposed").
  As in Slurm, a field is not range checked (``90:00`` is 90 minutes, ``1:90:00`` is 2 h 30 min).
  One difference, on purpose: Slurm stores a limit in whole minutes (``--time=0:30`` becomes
  1 minute); the parser keeps the seconds given, so that a limit written by
  :func:`format_slurm_time` reads back to the same second.
- **Memory** (:func:`parse_slurm_memory`): ``--mem``/``--mem-per-cpu`` values, an integer with
  an optional unit suffix ``K``, ``M`` (default), ``G``, ``T`` (powers of 1024, as Slurm), in
  MB (MiB), rounded up to a whole MB.
- **GRES** (:func:`parse_gres`): ``gpu``, ``gpu:2``, ``gpu:a100:2``, several joined by commas
  (``gpu:a100:2,mic:1``), an optional ``gres:`` / ``gres/`` prefix (as squeue and sacct print
  them); the count may carry a ``K``/``M``/``G`` multiplier as in Slurm. A GRES is matched to a
  resource of the system by :func:`gres_resource`: a typed GRES ``gpu:a100`` needs a resource
  named ``gpu:a100`` (a system declares GPU types that way, the way gres.conf writes
  ``Name=gpu Type=a100``); an untyped ``gpu`` takes the resource ``gpu``, or the only typed
  ``gpu:*`` resource when there is exactly one.
- **TRES** (:func:`parse_tres`): ``sacct``'s ``ReqTRES``/``AllocTRES``
  (``billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=16G,node=2``) -> ``{name: amount}``
  with memory in MB.
"""

from __future__ import annotations

import math
import re

#: largest value any parsed number may have (as the readers: 2^50, about 10^15)
_MAX_VALUE = 2**50

_UNLIMITED = {"unlimited", "infinite", "-1"}
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
_MEM = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgtp]?)(?:i?b)?$", re.IGNORECASE)
_MEM_FACTOR = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024**2, "p": 1024**3}
_COUNT = re.compile(r"^(\d+)([kmg]?)$", re.IGNORECASE)
_COUNT_FACTOR = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_slurm_time(text: str, zero_is_unlimited: bool = True) -> int | None:
    """Seconds in Slurm's time grammar (see the module docstring); ``None`` = no limit.

    ``zero_is_unlimited``: ``0`` means "no limit" (a time limit) or zero seconds (an elapsed
    time, ``zero_is_unlimited=False``). Raises ``ValueError`` naming the text otherwise.
    """
    s = str(text).strip()
    if s.lower() in _UNLIMITED:
        return None
    m = _TIME.match(s)
    if m is None:
        raise ValueError(
            f"'{text}' is not a Slurm time (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS "
            "or UNLIMITED)"
        )
    days, a, b, c = m.groups()
    if days is not None:  # D-HH[:MM[:SS]]
        seconds = int(days) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
    elif c is not None:  # HH:MM:SS
        seconds = int(a) * 3600 + int(b) * 60 + int(c)
    elif b is not None:  # MM:SS
        seconds = int(a) * 60 + int(b)
    else:  # MM
        seconds = int(a) * 60
    if seconds > _MAX_VALUE:
        raise ValueError(f"'{text}' is too long (at most 2^50 seconds)")
    if seconds == 0 and zero_is_unlimited:
        return None
    return seconds


def format_slurm_time(seconds: int | None) -> str:
    """``seconds`` as Slurm prints a time: ``HH:MM:SS``, ``D-HH:MM:SS`` from one day on, and
    ``UNLIMITED`` for ``None``. :func:`parse_slurm_time` reads it back to the same value."""
    if seconds is None:
        return "UNLIMITED"
    seconds = int(seconds)
    if seconds < 0:
        raise ValueError(f"a time cannot be negative, got {seconds}")
    days, rest = divmod(seconds, 86400)
    hh, rest = divmod(rest, 3600)
    mm, ss = divmod(rest, 60)
    clock = f"{hh:02d}:{mm:02d}:{ss:02d}"
    return f"{days}-{clock}" if days else clock


def parse_slurm_memory(text: str) -> int:
    """MB (MiB) in Slurm's memory spelling (``4096``, ``500M``, ``16G``, ``1T``, ``512K``),
    rounded up to a whole MB; a bare number is MB. Raises ``ValueError`` naming the text."""
    s = str(text).strip()
    m = _MEM.match(s)
    if m is None:
        raise ValueError(
            f"'{text}' is not a Slurm memory size (a number with an optional K, M, G or T suffix)"
        )
    value = float(m.group(1)) * _MEM_FACTOR[m.group(2).lower()]
    if not math.isfinite(value) or value > _MAX_VALUE:
        raise ValueError(f"'{text}' is too large (at most 2^50 MB)")
    return int(math.ceil(value - 1e-9))


def _parse_count(text: str, what: str) -> int:
    m = _COUNT.match(text.strip())
    if m is None:
        raise ValueError(f"'{what}': count '{text}' is not an integer")
    value = int(m.group(1)) * _COUNT_FACTOR[m.group(2).lower()]
    if value > _MAX_VALUE:
        raise ValueError(f"'{what}': count {text} is too large (at most 2^50)")
    return value


def parse_gres(text: str) -> list[tuple[str, str | None, int]]:
    """``[(name, type or None, count)]`` of a GRES specification (``gpu:a100:2,mic:1``);
    a name without a count means one. Raises ``ValueError`` naming the bad part."""
    out: list[tuple[str, str | None, int]] = []
    for part in filter(None, (p.strip() for p in str(text).split(","))):
        if part.lower().startswith(("gres:", "gres/")):
            part = part[5:]
        bits = part.split(":")
        if not bits[0] or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", bits[0]):
            raise ValueError(f"'{part}' is not a GRES (name[:type][:count], e.g. gpu:a100:2)")
        name = bits[0]
        if len(bits) == 1:
            out.append((name, None, 1))
        elif len(bits) == 2:  # name:count or name:type
            if _COUNT.match(bits[1]):
                out.append((name, None, _parse_count(bits[1], part)))
            elif bits[1]:
                out.append((name, bits[1], 1))
            else:
                raise ValueError(f"'{part}' is not a GRES (name[:type][:count], e.g. gpu:a100:2)")
        elif len(bits) == 3 and bits[1]:
            out.append((name, bits[1], _parse_count(bits[2], part)))
        else:
            raise ValueError(f"'{part}' is not a GRES (name[:type][:count], e.g. gpu:a100:2)")
    return out


def gres_resource(name: str, gres_type: str | None, resources: tuple[str, ...]) -> str:
    """The system resource a GRES uses (see the module docstring); ``LookupError`` with the
    reason when the system has none (``KeyError`` would quote its message)."""
    if gres_type is not None:
        typed = f"{name}:{gres_type}"
        if typed in resources:
            return typed
        kinds = [r for r in resources if r == name or r.startswith(name + ":")]
        raise LookupError(
            f"GRES type '{typed}' is not on this system (its {name} resources: {kinds or 'none'})"
        )
    if name in resources:
        return name
    typed_ones = [r for r in resources if r.startswith(name + ":")]
    if len(typed_ones) == 1:
        return typed_ones[0]
    if typed_ones:
        raise LookupError(
            f"GRES '{name}' without a type is ambiguous on this system ({typed_ones}); name the type"
        )
    raise LookupError(f"GRES '{name}' is not on this system (resources: {list(resources)})")


def parse_tres(text: str) -> dict[str, int]:
    """``{name: amount}`` of a TRES list (``cpu=8,mem=16G,node=2,gres/gpu:a100=2``); memory in
    MB, ``gres/`` kept in the name. Raises ``ValueError`` naming the bad item."""
    out: dict[str, int] = {}
    for item in filter(None, (p.strip() for p in str(text).split(","))):
        if "=" not in item:
            raise ValueError(f"TRES item '{item}' is not name=value")
        name, value = (x.strip() for x in item.split("=", 1))
        if name in ("mem", "vmem") or name.startswith("fs/") or name in ("pages",):
            out[name] = parse_slurm_memory(value)
        elif name == "energy" or name.startswith(("license/", "bb/", "ic/")):
            continue  # not a resource the simulator holds
        else:
            out[name] = _parse_count(value, item)
    return out
