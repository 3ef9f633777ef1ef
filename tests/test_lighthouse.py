"""The site as Lighthouse is served it: compressed where the host compresses, byte for byte."""

from __future__ import annotations

import gzip
import urllib.request
from pathlib import Path

import pytest

from gpukit_site import lighthouse


@pytest.fixture
def served(tmp_path: Path):
    (tmp_path / "en").mkdir()
    page = "<p>" + "A page of text compresses well. " * 200 + "</p>"
    (tmp_path / "en" / "index.html").write_text(page, encoding="utf-8")
    (tmp_path / "font.woff2").write_bytes(bytes(range(256)) * 8)
    server = lighthouse.serve(tmp_path)
    yield f"http://127.0.0.1:{server.server_port}", tmp_path
    server.shutdown()


def fetch(url: str, encoding: str | None) -> tuple[str | None, bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": encoding} if encoding else {})
    with urllib.request.urlopen(request) as response:
        return response.headers.get("Content-Encoding"), response.read()


def test_text_is_gzipped_for_a_browser_that_accepts_it(served) -> None:
    base, site = served
    original = (site / "en" / "index.html").read_bytes()
    encoding, body = fetch(f"{base}/en/index.html", "gzip, deflate, br")
    assert encoding == "gzip"
    assert len(body) < len(original) / 5
    assert gzip.decompress(body) == original


def test_text_is_plain_for_a_client_that_does_not_accept_gzip(served) -> None:
    base, site = served
    assert fetch(f"{base}/en/index.html", None) == (None, (site / "en" / "index.html").read_bytes())


def test_fonts_and_folders_are_served_as_they_are(served) -> None:
    base, site = served
    assert fetch(f"{base}/font.woff2", "gzip") == (None, (site / "font.woff2").read_bytes())
    encoding, body = fetch(f"{base}/en/", "gzip")  # a folder: its index.html, as http.server does
    assert encoding == "gzip"
    assert gzip.decompress(body) == (site / "en" / "index.html").read_bytes()
