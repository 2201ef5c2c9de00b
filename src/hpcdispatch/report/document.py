"""The content of a report, independent of its format: sections of text, tables and figures.

The same :class:`Document` becomes ``report.md`` (:meth:`Document.to_markdown`, figures as
relative links) and ``report.html`` (report/html.py, figures embedded).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hpcdispatch.report.tables import markdown_rows


@dataclass
class Text:
    text: str
    note: bool = False


@dataclass
class Items:
    pairs: list[tuple[str, str]]


@dataclass
class Bullets:
    lines: list[str]


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    text_columns: int = 1
    csv: str | None = None  # the file holding the full table


@dataclass
class Figure:
    path: Path
    caption: str
    legend: dict[str, str] | None = (
        None  # dispatcher -> colour drawn (PlotInfo.legend), put on the page
    )
    panels: dict[str, int] | None = None  # panel title -> bars drawn with a value (put on the page)


@dataclass
class ColourKey:
    """The colour and line style of every dispatcher, the same in every figure of the page."""

    entries: list[tuple[str, str, str]]  # (dispatcher, colour "#rrggbb", line style name)


Element = Text | Items | Bullets | Table | Figure | ColourKey


@dataclass
class Section:
    title: str
    elements: list[Element] = field(default_factory=list)


@dataclass
class Document:
    title: str
    intro: list[Element] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)

    def section(self, title: str) -> Section:
        s = Section(title)
        self.sections.append(s)
        return s

    def figures(self) -> list[Figure]:
        return [e for s in self.sections for e in s.elements if isinstance(e, Figure)] + [
            e for e in self.intro if isinstance(e, Figure)
        ]

    def to_markdown(self, base: Path) -> str:
        lines = [f"# {self.title}", ""]
        for e in self.intro:
            lines += _md(e, base)
        for s in self.sections:
            lines += [f"## {s.title}", ""]
            for e in s.elements:
                lines += _md(e, base)
        return "\n".join(lines)


def _md(e: Element, base: Path) -> list[str]:
    if isinstance(e, Text):
        return [f"*{e.text}*" if e.note else e.text, ""]
    if isinstance(e, Items):
        return [f"- {k}: {v}" for k, v in e.pairs] + [""]
    if isinstance(e, Bullets):
        return [f"- {x}" for x in e.lines] + [""]
    if isinstance(e, ColourKey):
        return [
            markdown_rows(
                ["dispatcher", "colour", "line"], [[f"`{a}`", b, c] for a, b, c in e.entries]
            ),
            "",
        ]
    if isinstance(e, Table):
        out = [markdown_rows(e.header, e.rows), ""]
        if e.csv:
            out += [f"(CSV: `{e.csv}`)", ""]
        return out
    rel = Path(e.path).relative_to(base) if Path(e.path).is_relative_to(base) else Path(e.path)
    return [f"![{e.caption}]({rel.as_posix()})", "", f"*{e.caption}*", ""]
