"""One colour and one line style per dispatcher, the same in every figure of a report.

:func:`dispatcher_styles` maps the ordered run labels (the order of ``--dispatchers``, or of
a sweep's runs) to matplotlib's ``tab10`` colours in their order and to a line style; every
plot of the compare, sweep and run reports takes its colours from it, and the compare page
prints the mapping as a colour key (hex colour per dispatcher). Colours repeat after ten
dispatchers; the line style then differs (solid for the first ten, dashed for the next ten,
...), so no two of the first forty dispatchers share both.

The deadline paper's strategies keep the paper's colours in every figure (Fig. 14's caption):
Hilbert blue, Manhattan purple, the contiguous leak red, the non-contiguous leak green, and
count-only grey. A label belongs to a strategy when it is its name or starts with it (then
``-``, ``:`` or ``(``: ``leak-nc-overbook``, ``manhattan:growth=bend``); the first label of a
strategy gets its colour, further ones (its readings) lighter and darker shades of it and
their own line styles. Other labels take tab10's colours in order, skipping those five.

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


#: the deadline paper's colours (strategy -> its shades: the strategy's own first), in the
#: order a label is matched ("leak-nc" before "leak")
PAPER_COLOURS = {
    "leak-nc": ("#2ca02c", "#98df8a", "#006d2c", "#74c476"),  # green
    "leak": ("#d62728", "#ff9896", "#99000d", "#fb6a4a"),  # red
    "hilbert": ("#1f77b4", "#9ecae1", "#08306b", "#6baed6"),  # blue
    "manhattan": ("#7b3294", "#c2a5cf", "#40004b", "#9e6eb8"),  # purple
    "count-only": ("#7f7f7f", "#c7c7c7", "#404040", "#a0a0a0"),  # grey
}


def paper_strategy(label: str) -> str | None:
    """The deadline strategy a run label names (see the module), or None."""
    for name in PAPER_COLOURS:
        if label == name or (label.startswith(name) and label[len(name)] in "-:("):
            return name
    return None


def dispatcher_styles(labels: Iterable[str]) -> dict[str, SeriesStyle]:
    """``label -> SeriesStyle`` for the labels in their order (duplicates keep their first
    place): a deadline strategy's labels its paper colour and shades (see the module); the
    k-th other label ``TAB10[k % 10]`` (without the paper's five colours) and
    ``LINE_STYLES[k // 10 % 4]``."""
    ordered = list(dict.fromkeys(labels))
    taken = {shades[0] for shades in PAPER_COLOURS.values()}
    others = [c for c in TAB10 if c not in taken]
    out: dict[str, SeriesStyle] = {}
    seen: dict[str, int] = {}
    k = 0
    for label in ordered:
        strategy = paper_strategy(label)
        if strategy is not None:
            i = seen[strategy] = seen.get(strategy, -1) + 1
            shades = PAPER_COLOURS[strategy]
            out[label] = SeriesStyle(
                shades[i % len(shades)], LINE_STYLES[(i // len(shades) + i) % len(LINE_STYLES)]
            )
            continue
        pool = others if any(paper_strategy(x) for x in ordered) else list(TAB10)
        out[label] = SeriesStyle(
            pool[k % len(pool)], LINE_STYLES[(k // len(pool)) % len(LINE_STYLES)]
        )
        k += 1
    return out


__all__ = [
    "LINE_STYLES",
    "PAPER_COLOURS",
    "TAB10",
    "SeriesStyle",
    "dispatcher_styles",
    "paper_strategy",
]
