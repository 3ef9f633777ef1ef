"""Dark mode: furo's toggle switches the theme, and figures and plots stay readable in it.

A figure or plot stays readable when the theme cannot change what is behind its text: text
drawn on the figure's own opaque background (or shapes) reads the same in both themes, and
any text drawn straight on the page must stand out from the dark page too (WCAG AA, 4.5:1).
Text in an SVG is found and measured in the SVG itself; a raster image must have an opaque
background.
"""

from __future__ import annotations

import re

import pytest
from browsing import ALL_PAGES, LANGUAGES, SITE, contrast, relative_luminance, set_theme

MIN_CONTRAST = 4.5  # WCAG AA for normal text
WITH_IMAGES = [
    name
    for name in ALL_PAGES
    if re.search(r"<article.*<img ", (SITE / f"{name}.html").read_text("utf-8"), re.DOTALL)
]

# The colour behind an element: its own background or the first opaque one of an ancestor.
BACKGROUND_JS = """
el => {
  for (let e = el; e; e = e.parentElement) {
    const m = getComputedStyle(e).backgroundColor.match(/[\\d.]+/g).map(Number);
    if (m.length === 3 || m[3] === 1) return m.slice(0, 3);
  }
  return [255, 255, 255];
}
"""

# Every visible piece of text of an SVG document: its colour, and the colour of the first
# opaque shape painted under its middle (null: nothing, the page shows through); or that it
# lies outside the drawing (cut off: a label that the figure's size leaves out).
SVG_TEXT_JS = """
() => {
  const rgb = c => { const m = c.match(/[\\d.]+/g); return m ? m.slice(0, 3).map(Number) : null; };
  const opaque = e => {
    const s = getComputedStyle(e);
    return s.fill !== 'none' && !s.fill.startsWith('url(') &&
      Number(s.fillOpacity) * Number(s.opacity) >= 0.9 && !/rgba\\(.*, 0\\)$/.test(s.fill);
  };
  const out = [];
  for (const t of document.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || t.closest('defs, marker, symbol')) continue;
    const s = getComputedStyle(t);
    if (s.fill === 'none') continue;
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    const box = document.documentElement.getBoundingClientRect();
    if (x < box.left || x > box.right || y < box.top || y > box.bottom) {
      out.push({ text: t.textContent.trim().slice(0, 40), cut: true });
      continue;
    }
    const under = document.elementsFromPoint(x, y)
      .filter(e => e !== t && !t.contains(e) && !e.contains(t) && e instanceof SVGGeometryElement);
    const behind = under.find(opaque);
    out.push({ text: t.textContent.trim().slice(0, 40), fill: rgb(s.fill),
               behind: behind ? rgb(getComputedStyle(behind).fill) : null });
  }
  return out;
}
"""

# A raster image: how much of its border is opaque.
RASTER_BORDER_JS = """
img => {
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d'); g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  let opaque = 0, all = 0;
  for (let x = 0; x < c.width; x++) for (const y of [0, c.height - 1]) {
    all++; if (d[4 * (y * c.width + x) + 3] === 255) opaque++;
  }
  for (let y = 0; y < c.height; y++) for (const x of [0, c.width - 1]) {
    all++; if (d[4 * (y * c.width + x) + 3] === 255) opaque++;
  }
  return opaque / all;
}
"""


@pytest.mark.parametrize("lang", LANGUAGES)
def test_theme_toggle_switches_to_dark_and_back(desktop, site, lang: str) -> None:
    desktop.goto(site.url(f"{lang}/use-gpu"), wait_until="load")
    set_theme(desktop, "light")
    assert page_background_luminance(desktop) > 0.9
    set_theme(desktop, "dark")
    assert page_background_luminance(desktop) < 0.05
    for selector in ("article section > p", "p.provenance", "article h1"):
        color = rgb(desktop.locator(selector).first.evaluate("e => getComputedStyle(e).color"))
        behind = tuple(desktop.locator(selector).first.evaluate(BACKGROUND_JS))
        assert contrast(color, behind) >= MIN_CONTRAST, f"{selector} on the dark background"
    # The choice holds on the next page.
    desktop.goto(site.url(f"{lang}/index"), wait_until="load")
    assert desktop.evaluate("document.body.dataset.theme") == "dark"
    assert page_background_luminance(desktop) < 0.05


@pytest.mark.parametrize("name", WITH_IMAGES)
def test_figures_and_plots_are_readable_in_dark_mode(desktop, site, name: str) -> None:
    desktop.goto(site.url(name), wait_until="load")
    set_theme(desktop, "dark")
    # Other machines' recorded figures (gpukit_site.ext.recorded), collapsed: opened to be seen.
    desktop.evaluate("document.querySelectorAll('details.recorded').forEach(d => d.open = true)")
    images = desktop.locator("article img")
    assert images.count() > 0
    unreadable = []
    for i in range(images.count()):
        image = images.nth(i)
        image.scroll_into_view_if_needed()
        src = image.evaluate("img => img.currentSrc")
        page_behind = tuple(image.evaluate(BACKGROUND_JS))
        if src.split("?")[0].endswith(".svg"):
            svg = desktop.context.new_page()
            svg.set_viewport_size({"width": 2000, "height": 2000})
            svg.goto(src)
            texts = svg.evaluate(SVG_TEXT_JS)
            svg.close()
            assert texts, f"{src} has no text: is it a drawing with real text?"
            for text in texts:
                if text.get("cut"):
                    unreadable.append(f"{src}: {text['text']!r} lies outside the drawing")
                elif text["behind"]:
                    continue  # on the figure's own background: the same in both themes
                elif (ratio := contrast(tuple(text["fill"]), page_behind)) < MIN_CONTRAST:
                    unreadable.append(
                        f"{src}: {text['text']!r} is drawn on the page, contrast {ratio:.1f}"
                    )
        else:
            image.evaluate("img => img.decode()")
            if image.evaluate(RASTER_BORDER_JS) < 0.95:
                unreadable.append(f"{src}: no opaque background")
    assert not unreadable, "\n".join(unreadable)


def rgb(css: str) -> tuple[float, ...]:
    return tuple(float(c) for c in re.findall(r"[\d.]+", css)[:3])


def page_background_luminance(page) -> float:
    return relative_luminance(tuple(page.locator("article").evaluate(BACKGROUND_JS)))
