"""`dashboard.py PATH... --export FILE.html`: one self-contained HTML file with views 1-4 and 6 (the
samples view needs the store, so it is left out). plotly.min.js, the page's script and every
payload are inlined; the file needs no server and no network.
"""

from __future__ import annotations

import json
from pathlib import Path

from boundlab.dashboard import data
from boundlab.dashboard.index import Index
from boundlab.dashboard.server import PLOTLY_META, PLOTLY_PRELOAD, plotly_js_path, static_text


# Inside <script>, HTML's tokenizer still reads "</script" (ends the element), "<!--" followed by
# "<script" (the double-escaped state, where the real "</script>" no longer ends it) and, in older
# parsers, U+2028/U+2029 as line ends in a JS string. Writing every "<", ">" and "&" (and the two
# separators) as a JSON \u escape leaves the same string to JSON.parse and to JavaScript, and none of
# those sequences in the page: no run name, problem text or completion can change its structure.
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def json_for_script(obj) -> str:
    text = json.dumps(obj, allow_nan=False)
    return text.translate(str.maketrans(_SCRIPT_ESCAPES))


def payload(index: Index) -> dict:
    runs = {}
    for r in index.runs:
        runs[str(r.id)] = {
            "overview": data.overview(r),
            "problems": data.problem_map(index, r),
            "bands": {str(i): data.curve_band(index, r, i) for i in range(len(r.rows))},
        }
    return {"runs_list": data.runs_list(index), "runs": runs, "sweep": data.sweep(index)}


def export(index: Index, out: str | Path) -> Path:
    out = Path(out).expanduser()
    plotly = plotly_js_path().read_text(encoding="utf-8")
    if "</script" in plotly.lower():
        raise RuntimeError("plotly.min.js holds '</script': it cannot be inlined as it is")
    html = static_text("index.html")
    head, sep, tail = html.partition("<!--SCRIPTS-->")
    if not sep:
        raise RuntimeError("static/index.html lost its <!--SCRIPTS--> marker")
    # Drop the served <script src=...> lines: everything is inlined below.
    tail = "\n".join(x for x in tail.splitlines() if "<script src=" not in x)
    css = static_text("app.css")
    head = head.replace('<link rel="stylesheet" href="static/app.css">', f"<style>{css}</style>")
    # plotly is inlined below: no URL of it stays (a file:// page would ask for it and fail).
    head = head.replace(PLOTLY_PRELOAD + "\n", "").replace(PLOTLY_META + "\n", "")
    if "plotly.min.js" in head:
        raise RuntimeError("static/index.html names plotly.min.js in a way the export does not know")
    scripts = (f"<script>{plotly}</script>\n"
               f"<script>window.BOUNDLAB_STATIC = {json_for_script(payload(index))};</script>\n"
               f"<script>{static_text('app.js')}</script>\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(head + scripts + tail, encoding="utf-8")
    return out
