"""The checks of the accessibility tests, for any page open in Playwright.

axe-core (``node_modules/axe-core``, from the repository's package.json) with the
WCAG 2.1 A and AA rules, plus what axe does not measure: the size of buttons and
fields, a sideways scroll bar, and whether the page follows the colour scheme.
:func:`problems_of` runs them all in every colour scheme and window size of
tests/support/tour.py.

axe-core is the only part that needs Node.js: without ``node_modules/axe-core``
(``npm ci``) the tests that use it skip, with what to install in the reason, or
fail where ``WEBAUTH_REQUIRE_AXE`` is set (CI).
"""

import os
import shutil
from pathlib import Path

import pytest

from . import tour

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

RUN_AXE = """async (tags) => {
  const result = await axe.run(document, {
    runOnly: { type: "tag", values: tags },
    resultTypes: ["violations"],
  });
  return result.violations.map((v) => ({
    id: v.id,
    help: v.help,
    nodes: v.nodes.map((n) => ({ target: n.target.join(" "), summary: n.failureSummary })),
  }));
}"""

# Every visible button, field and button-styled link whose box is smaller than the minimum.
SMALL_TARGETS = """(minimum) => {
  const selector = "button, input:not([type=hidden]), select, textarea, a.webauth-button";
  const small = [];
  for (const el of document.querySelectorAll(selector)) {
    if (!el.getClientRects().length || getComputedStyle(el).visibility === "hidden") continue;
    const box = el.getBoundingClientRect();
    if (box.height < minimum || box.width < minimum) {
      const name = el.id ? `#${el.id}` : `${el.tagName.toLowerCase()} "${el.textContent.trim()}"`;
      small.push(`${name} is ${Math.round(box.width)}x${Math.round(box.height)}`);
    }
  }
  return small;
}"""

# How many pixels the page is wider than the window (a sideways scroll bar), or 0.
OVERFLOW = "() => Math.max(0, document.documentElement.scrollWidth - innerWidth)"

# The relative luminance (WCAG) of the page's background: the body's, else the root's,
# else the browser's default canvas (white: a page that sets no background of its own
# does not follow the dark scheme).
BACKGROUND_LUMINANCE = """() => {
  const channels = (el) => getComputedStyle(el).backgroundColor.match(/[\\d.]+/g).map(Number);
  const transparent = (rgba) => rgba.length === 4 && rgba[3] === 0;
  let rgba = channels(document.body);
  if (transparent(rgba)) rgba = channels(document.documentElement);
  if (transparent(rgba)) rgba = [255, 255, 255];
  const linear = rgba.slice(0, 3).map((c) => {
    c /= 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2];
}"""


# What has the focus, and whether it shows: an outline of at least 2px, not "none".
FOCUSED = """(selector) => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const style = getComputedStyle(el);
  const label = el.id ? `#${el.id}` : `${el.tagName.toLowerCase()} "${el.textContent.trim()}"`;
  return {
    label,
    matches: el.matches(selector),
    visible: style.outlineStyle !== "none" && parseFloat(style.outlineWidth) >= 2,
  };
}"""


def axe_missing() -> str:
    """Why axe-core is not there, and what to install or run to get it."""
    where = AXE.relative_to(ROOT)
    if shutil.which("npm") is None:
        return (
            f"axe-core ({where}) is not installed, and neither is npm: install Node.js with "
            "npm (Debian: apt-get install npm), then run `npm ci` at the repository root "
            "(./scripts/test runs it when npm is there)"
        )
    return (
        f"axe-core ({where}) is not installed: run `npm ci` at the repository root "
        "(./scripts/test runs it; it needs the npm registry once)"
    )


def axe_script() -> str:
    """The path of axe-core's script.

    Without it the test skips, saying what to install; with ``WEBAUTH_REQUIRE_AXE``
    set (as .ci/run sets it) it fails instead.
    """
    if not AXE.exists():
        reason = axe_missing()
        if os.environ.get("WEBAUTH_REQUIRE_AXE"):
            pytest.fail(f"{reason}; WEBAUTH_REQUIRE_AXE is set", pytrace=False)
        pytest.skip(reason)
    return str(AXE)


def looks(page):
    """Each colour scheme and window size in turn, applied to *page*: yields (scheme, size)."""
    for scheme in tour.SCHEMES:
        page.emulate_media(color_scheme=scheme)
        for size, viewport in tour.SIZES.items():
            page.set_viewport_size(viewport)
            yield scheme, size


def problems_of(page, name):
    """Everything wrong with *page* (axe-core injected) in each scheme and size, as text."""
    problems = []
    for scheme, size in looks(page):
        where = f"{name} ({scheme}, {size})"
        for violation in page.evaluate(RUN_AXE, WCAG_21_AA):
            for node in violation["nodes"]:
                problems.append(
                    f"{where}: {violation['id']} at {node['target']}: {violation['help']}"
                    f"\n    {node['summary']}"
                )
        for small in page.evaluate(SMALL_TARGETS, tour.TARGET_SIZE):
            problems.append(f"{where}: target under {tour.TARGET_SIZE} px: {small}")
        overflow = page.evaluate(OVERFLOW)
        if overflow > 0:
            problems.append(f"{where}: {overflow} px wider than the window")
        luminance = page.evaluate(BACKGROUND_LUMINANCE)
        if (scheme == "dark") != (luminance < 0.2):
            problems.append(f"{where}: background luminance {luminance:.2f}")
    return problems


# FOCUSED, and whether the element had the focus before on this tour of the page.
_FOCUSED_AGAIN = (
    """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const again = el.hasAttribute("data-a11y-tabbed");
  el.setAttribute("data-a11y-tabbed", "");
  return { again, ...("""
    + FOCUSED
    + """)("*") };
}"""
)


def unseen_focus(page, name, limit=100):
    """Tab through *page* from its top: each element whose focus shows no outline, as text."""
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    problems = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        focused = page.evaluate(_FOCUSED_AGAIN)
        if focused is None or focused["again"]:
            return problems  # back at the top: every element had its turn
        if not focused["visible"]:
            problems.append(f"{name}: {focused['label']} has the focus, but no outline")
    return [*problems, f"{name}: Tab never came back to the top in {limit} presses"]
