"""`python dashboard.py PATH... [--port N] [--host H] [--allow-remote] [--store FILE]
[--export FILE.html]`: the command line of the dashboard."""

from __future__ import annotations

import argparse
import sys


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="dashboard.py", description=(
        "A local, read-only web app over BoundLab run dirs and sweep dirs (searched recursively)."))
    ap.add_argument("paths", nargs="+", help="run dirs, sweep dirs, or folders holding them")
    ap.add_argument("--port", type=int, default=8050)
    ap.add_argument("--host", default="127.0.0.1", help="bind address (loopback unless --allow-remote)")
    ap.add_argument("--allow-remote", action="store_true",
                    help="allow a non-loopback --host: anyone who reaches it sees the runs and samples")
    ap.add_argument("--store", default=None,
                    help="the probe store (default: each run's store.path, which reads BOUNDLAB_STORE)")
    ap.add_argument("--export", default=None, metavar="FILE.html",
                    help="write one self-contained HTML file (views 1-4 and 6) and exit")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse(sys.argv[1:] if argv is None else argv)
    from boundlab.dashboard.index import Index
    from boundlab.dashboard.server import check_host, serve

    try:
        check_host(a.host, a.allow_remote)
        index = Index(a.paths, store=a.store)
        if a.export:
            from boundlab.dashboard.export import export

            out = export(index, a.export)
            print(f"[boundlab] wrote {out} ({out.stat().st_size / 1e6:.1f} MB, {len(index.runs)} run(s))")
            return 0
        serve(index, a.host, a.port, a.allow_remote)
    except (FileNotFoundError, ValueError, RuntimeError) as e:
        print(f"dashboard.py: {e}", file=sys.stderr)
        return 2
    return 0
