// Code and output blocks that scroll sideways must be reachable from the keyboard
// (WCAG 2.1.1; axe-core: scrollable-region-focusable). Whether a block scrolls depends on the
// width of the screen, so this is checked on load and again whenever the window is resized.
(function () {
  "use strict";
  var SELECTOR =
    "article pre, article .table-wrapper, article .text_html, article .katex-display";

  function update() {
    document.querySelectorAll(SELECTOR).forEach(function (el) {
      var scrolls = el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight;
      if (scrolls && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.dataset.gpukitFocusable = "";
      } else if (!scrolls && "gpukitFocusable" in el.dataset) {
        el.removeAttribute("tabindex");
        delete el.dataset.gpukitFocusable;
      }
    });
  }

  var pending = 0;
  function later() {
    clearTimeout(pending);
    pending = setTimeout(update, 100);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", update);
  } else {
    update();
  }
  window.addEventListener("load", update); // images and fonts have their sizes now
  window.addEventListener("resize", later);
})();
