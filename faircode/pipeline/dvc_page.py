"""The page ``dvc plots show`` writes: offline, with no empty box, from the lock's Vega bundle.

DVC's default page loads Vega, Vega-Lite and Vega-Embed from a CDN, so without a network every
chart is blank, without a word.  ``.dvc/config`` names this page instead (``plots.html_template
= plots/offline.html``, relative to ``.dvc/``): the three libraries are inlined, built by the
locked ``vl-convert-python`` (:func:`vl_convert.javascript_bundle` of :data:`VEGA_LITE`, the
Vega-Lite 5 line of DVC's templates; ``requirements.lock`` pins its version, so the page is a
function of the lock), and the page needs nothing from outside.

An audit without results (no data) has an empty strategy file and a header-only curve file:
DVC still writes a chart for each, with no data, an empty box.  The page's ``vegaEmbed`` skips
a chart whose data are empty and lists those charts, by title, in one line at the top, so every
box on the page has something in it and nothing is silently missing.

``python -m faircode.pipeline.dvc_page`` rewrites ``.dvc/plots/offline.html`` (after a lock
change); ``tests/test_dvc_views.py`` checks the committed page is what the locked package builds.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["PAGE", "VEGA_LITE", "page", "write_page"]

VEGA_LITE = "5.20"
"""The Vega-Lite version of the bundle (DVC's templates are Vega-Lite 5 specifications)."""

PAGE = Path(".dvc") / "plots" / "offline.html"
"""Where the page lives, relative to the project root (``.dvc/config`` names it)."""

_SKIP = """
(function () {
  var embed = window.vegaEmbed, skipped = [];
  function values(spec) {
    var data = spec && (spec.data || (spec.spec && spec.spec.data));
    return data && Array.isArray(data.values) ? data.values : null;
  }
  function title(spec, id) {  // the spec's title, else the plot's name from its div id
    var t = spec && spec.title;
    return (t && (t.text || t)) || id.replace(/^results_metrics_/, "")
      .replace(/-strategies_json$/, " strategies").replace(/_threshold_curve$/, " threshold curve");
  }
  window.vegaEmbed = function (el, spec, opts) {
    var rows = values(spec);
    if (!spec || !Object.keys(spec).length || (rows !== null && rows.length === 0)) {
      var box = document.querySelector(el);
      skipped.push(title(spec, el.replace(/^#/, "")));
      if (box) { box.parentNode.removeChild(box); }
      var note = document.getElementById("no-data");
      note.textContent = "No data (no chart drawn): " + skipped.join("; ") + ".";
      note.style.display = "block";
      return Promise.resolve(null);
    }
    return embed(el, spec, Object.assign({renderer: "svg"}, opts || {}));
  };
})();
"""


def page(bundle: str) -> str:
    """The HTML template around ``bundle`` (Vega + Vega-Lite + Vega-Embed, exposed on window)."""
    if "</script" in bundle.lower():
        raise ValueError("bundle: expected JavaScript without a closing script tag")
    return ("<!DOCTYPE html>\n<html>\n<head>\n<meta charset=\"utf-8\">\n{refresh_tag}\n"
            "<title>DVC Plot (faircode, offline)</title>\n"
            "<style>table{border-spacing:15px}#no-data{display:none;font:13px sans-serif;"
            "color:#444;margin:8px 0}</style>\n"
            f"<script>{bundle}</script>\n<script>{_SKIP}</script>\n</head>\n<body>\n"
            "<p id=\"no-data\"></p>\n{plot_divs}\n</body>\n</html>\n")


def write_page(root: Path) -> Path:
    """Build the page from the installed ``vl-convert-python`` into ``root/.dvc/plots/``."""
    import vl_convert

    out = root / PAGE
    bundle = vl_convert.javascript_bundle(vl_version=VEGA_LITE)  # type: ignore[call-arg]
    out.write_text(page(bundle), encoding="utf-8")
    return out


if __name__ == "__main__":  # pragma: no cover
    print(f"wrote {write_page(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd())}")
