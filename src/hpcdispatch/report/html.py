"""A :class:`~hpcdispatch.report.document.Document` as one self-contained HTML page: inline CSS,
figures embedded as base64 PNG, no script and no external resource, so ``report.html`` opens
offline and can be sent as one file."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from hpcdispatch.report.document import (
    Bullets,
    ColourKey,
    Document,
    Element,
    Figure,
    Items,
    Table,
    Text,
)

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; margin-top: 1.8em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.85em; }
div.wide { overflow-x: auto; } div.wide table { font-size: 0.78em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
div.wide th, div.wide td { padding: 0.2em 0.4em; } div.wide td.text { white-space: nowrap; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
ul.meta { list-style: none; padding: 0; } ul.meta li { margin: 0.15em 0; }
.note { color: #8a4b00; } .csv { font-size: 0.8em; color: #555; }
span.swatch { display: inline-block; width: 2.2em; height: 0.8em; vertical-align: middle; margin-right: 0.4em; }
"""

e = html.escape
WIDE_TABLE_COLUMNS = 10


def _element(el: Element) -> str:
    if isinstance(el, Text):
        return f'<p class="note">{e(el.text)}</p>' if el.note else f"<p>{e(el.text)}</p>"
    if isinstance(el, Items):
        return (
            '<ul class="meta">'
            + "".join(f"<li><b>{e(k)}</b>: {e(v)}</li>" for k, v in el.pairs)
            + "</ul>"
        )
    if isinstance(el, Bullets):
        return "<ul>" + "".join(f"<li>{e(x)}</li>" for x in el.lines) + "</ul>"
    if isinstance(el, Table):

        def cell(tag: str, value: str, i: int) -> str:
            cls = ' class="text"' if i < el.text_columns else ""
            return f"<{tag}{cls}>{e(str(value))}</{tag}>"

        head = "<tr>" + "".join(cell("th", h, i) for i, h in enumerate(el.header)) + "</tr>"
        body = "".join(
            "<tr>" + "".join(cell("td", v, i) for i, v in enumerate(r)) + "</tr>" for r in el.rows
        )
        csv = f'<p class="csv">CSV: {e(el.csv)}</p>' if el.csv else ""
        table = f"<table><thead>{head}</thead><tbody>{body}</tbody></table>"
        if (
            len(el.header) > WIDE_TABLE_COLUMNS
        ):  # smaller type, and a scroll bar rather than past the page
            table = f'<div class="wide">{table}</div>'
        return table + csv
    if isinstance(el, ColourKey):
        rows = "".join(
            f'<tr data-dispatcher="{e(label)}" data-colour="{e(colour)}"><td class="text">{e(label)}</td>'
            f'<td class="text"><span class="swatch" style="background:{e(colour)}"></span>{e(colour)}</td>'
            f'<td class="text">{e(line)}</td></tr>'
            for label, colour, line in el.entries
        )
        return (
            '<table class="colours"><thead><tr><th class="text">dispatcher</th><th class="text">colour</th>'
            f'<th class="text">line</th></tr></thead><tbody>{rows}</tbody></table>'
        )
    assert isinstance(el, Figure)
    data = base64.b64encode(Path(el.path).read_bytes()).decode("ascii")
    legend = f' data-legend="{e(json.dumps(el.legend))}"' if el.legend else ""
    if el.panels is not None:
        legend += f' data-panels="{e(json.dumps(el.panels))}"'
    return (
        f'<figure{legend}><img src="data:image/png;base64,{data}" alt="{e(el.caption)}">'
        f"<figcaption>{e(el.caption)}</figcaption></figure>"
    )


def render_html(doc: Document) -> str:
    parts = [_element(x) for x in doc.intro]
    for s in doc.sections:
        parts.append(f"<h2>{e(s.title)}</h2>")
        parts += [_element(x) for x in s.elements]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{e(doc.title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
        f"<h1>{e(doc.title)}</h1>\n" + "\n".join(parts) + "\n</body>\n</html>\n"
    )


def write_html(doc: Document, path: Path) -> Path:
    from hpcdispatch.results.store import write_text

    write_text(path, render_html(doc))
    return path
