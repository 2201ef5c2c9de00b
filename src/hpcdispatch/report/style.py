"""One colour and one line style per dispatcher, the same in every figure of a report.

:func:`dispatcher_styles` maps the ordered run labels (the order of ``--dispatchers``, or of
a sweep's runs) to matplotlib's ``tab10`` colours in their order and to a line style; every
plot of the compare, sweep and run reports takes its colours from it, and the compare page
prints the mapping as a colour key (hex colour per dispatcher). Colours repeat after ten
dispatchers; the line style then differs (solid for the first ten, dashed for the next ten,
...), so no two of the first forty dispatchers share both.

Pure Python: no matplotlib import here (the tab10 hex codes are matplotlib's own, and a
test checks them against ``matplotlib.cm.tab10``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# matplotlib's "tab10" (= the default property cycle "C0".."C9"), in order
TAB10 = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
LINE_STYLES = ("-", "--", "-.", ":")
LINE_STYLE_NAMES = {"-": "solid", "--": "dashed", "-.": "dash-dot", ":": "dotted"}


@dataclass(frozen=True)
class SeriesStyle:
    """How one dispatcher is drawn: ``color`` (``#rrggbb``) and matplotlib ``linestyle``."""

    color: str
    linestyle: str

    @property
    def linestyle_name(self) -> str:
        return LINE_STYLE_NAMES[self.linestyle]


def dispatcher_styles(labels: Iterable[str]) -> dict[str, SeriesStyle]:
    """``label -> SeriesStyle`` for the labels in their order (duplicates keep their first
    place): the k-th label gets ``TAB10[k % 10]`` and ``LINE_STYLES[k // 10 % 4]``."""
    ordered = list(dict.fromkeys(labels))
    return {
        label: SeriesStyle(TAB10[k % len(TAB10)], LINE_STYLES[(k // len(TAB10)) % len(LINE_STYLES)])
        for k, label in enumerate(ordered)
    }


__all__ = ["LINE_STYLES", "TAB10", "SeriesStyle", "dispatcher_styles"]
