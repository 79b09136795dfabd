"""The dashboard's web app: Starlette routes over an `Index`, served by uvicorn.

Read-only: GET only. The page and its scripts come from this package (`static/`) and plotly.min.js
from the `plotly` wheel; nothing from a CDN. Ids in URLs are integers looked up in the index (see
boundlab.dashboard.index); any other path is a 404 from the router, never a file lookup.
"""

from __future__ import annotations

import hashlib
import ipaddress
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from boundlab.dashboard import data
from boundlab.dashboard.index import Index

STATIC = {"app.js": "text/javascript", "sketch.js": "text/javascript", "app.css": "text/css"}
# Headers on every answer: no framing, no sniffing, scripts only from this server (the page has no
# inline script, so a `<script>` that slipped into the DOM could not run even without textContent).
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data: blob:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def static_text(name: str) -> str:
    return resources.files("boundlab.dashboard").joinpath("static", name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def plotly_js_path() -> Path:
    """plotly.min.js as the `plotly` wheel ships it (the dashboard extra installs it)."""
    try:
        import plotly  # noqa: F401 - only to find its bundled file
    except ImportError:
        raise RuntimeError("the dashboard needs plotly (for its bundled plotly.min.js): "
                           "pip install -e '.[dashboard]'") from None
    p = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not p.is_file():
        raise RuntimeError(f"plotly is installed but {p} is missing; reinstall plotly")
    return p


@lru_cache(maxsize=1)
def plotly_version() -> str:
    """A tag of the plotly.min.js served (its path, size and mtime): the page asks for
    `static/plotly.min.js?v=TAG`, which may be cached for good, since a new plotly gives a new URL."""
    st = plotly_js_path().stat()
    return hashlib.sha1(f"{plotly_js_path()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:12]


# The page names plotly.min.js here (app.js loads it after its first requests); the server puts the
# versioned URL in.
PLOTLY_META = '<meta name="boundlab-plotly" content="static/plotly.min.js">'
PLOTLY_PRELOAD = '<link rel="preload" href="static/plotly.min.js" as="script">'


def check_host(host: str, allow_remote: bool) -> None:
    """Loopback only, unless `--allow-remote` asks for another address."""
    try:
        loop = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loop = False
    if not loop and not allow_remote:
        raise ValueError(f"--host {host} is not a loopback address: the dashboard shows model text and "
                         f"file names to anyone who can reach it; pass --allow-remote to bind it anyway")


# The names a browser on this machine uses to reach a loopback server (ports are ignored). Any other
# `Host` is refused with 400 before a route runs: a web page that points its own domain name at
# 127.0.0.1 (DNS rebinding) would otherwise read the runs and samples as same-origin.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def make_app(index: Index, allow_remote: bool = False):
    try:
        from starlette.applications import Starlette
        from starlette.middleware import Middleware
        from starlette.middleware.trustedhost import TrustedHostMiddleware
        from starlette.responses import FileResponse, JSONResponse, Response
        from starlette.routing import Route
    except ImportError:
        raise RuntimeError("the dashboard needs starlette and uvicorn: bash install.sh dashboard "
                           "(or pip install -e '.[dashboard]')") from None

    def hdr(resp: Response) -> Response:
        resp.headers.update(SECURITY_HEADERS)
        return resp

    def api(fn: Callable[..., Any]):
        def endpoint(request):
            index.refresh()
            try:
                ints = {k: int(v) for k, v in request.path_params.items()}
                q = {k: int(v) for k, v in request.query_params.items() if k in ("probe", "page")}
            except ValueError:
                return hdr(JSONResponse({"error": "ids are integers"}, status_code=404))
            try:
                with index._lock:  # one SQLite connection per store, shared by the worker threads
                    out = fn(**ints, **q)
            except KeyError as e:
                return hdr(JSONResponse({"error": str(e.args[0] if e.args else e)}, status_code=404))
            if out is None:
                return hdr(JSONResponse({"error": "not available"}, status_code=404))
            return hdr(JSONResponse(out))
        return endpoint

    def page(request):
        html = static_text("index.html")
        for tag in (PLOTLY_META, PLOTLY_PRELOAD):
            html = html.replace(tag, tag.replace("plotly.min.js", f"plotly.min.js?v={plotly_version()}"))
        return hdr(Response(html, media_type="text/html; charset=utf-8"))

    def asset(request):
        name = request.path_params["name"]
        if name not in STATIC:  # a fixed list: the name is never joined into a path
            return hdr(Response("not found", status_code=404))
        return hdr(Response(static_text(name), media_type=STATIC[name]))

    def plotly_js(request):
        resp = hdr(FileResponse(plotly_js_path(), media_type="text/javascript"))
        # The versioned URL never changes content: a reload takes it from the HTTP cache, with the
        # code V8 cached for it, instead of 4.8 MB parsed again. Any other URL is revalidated.
        fixed = request.query_params.get("v") == plotly_version()
        resp.headers["Cache-Control"] = "public, max-age=31536000, immutable" if fixed else "no-cache"
        return resp

    def version(request):
        return hdr(JSONResponse({"version": index.refresh(), "live": True}))

    routes = [
        Route("/", page),
        Route("/static/plotly.min.js", plotly_js),
        Route("/static/{name}", asset),
        Route("/api/version", version),
        Route("/api/runs", api(lambda: data.runs_list(index))),
        Route("/api/sweep", api(lambda: data.sweep(index))),
        Route("/api/run/{rid}/overview", api(lambda rid: data.overview(index.run(rid)))),
        Route("/api/run/{rid}/band/{i}", api(lambda rid, i: data.curve_band(index, index.run(rid), i))),
        Route("/api/run/{rid}/problems", api(lambda rid: data.problem_map(index, index.run(rid)))),
        Route("/api/run/{rid}/problem/{p}",
              api(lambda rid, p, probe=0, page=0: data.samples_page(index, index.run(rid), p, probe, page))),
    ]
    # `--allow-remote` serves whatever name the remote user reaches this host by, which cannot be
    # known here; without it only the loopback names pass.
    hosts = ["*"] if allow_remote else list(LOOPBACK_HOSTS)
    return Starlette(routes=routes,
                     middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=hosts, www_redirect=False)])


def serve(index: Index, host: str = "127.0.0.1", port: int = 8050, allow_remote: bool = False) -> None:
    check_host(host, allow_remote)
    plotly_js_path()  # fail now, not on the first page load
    import threading

    import uvicorn

    threading.Thread(target=index.prewarm, name="dashboard-prewarm", daemon=True).start()

    print(f"[boundlab] dashboard on http://{host}:{port}/ over {len(index.runs)} run dir(s)", flush=True)
    try:
        uvicorn.run(make_app(index, allow_remote), host=host, port=port, log_level="warning")
    finally:
        index.close()
