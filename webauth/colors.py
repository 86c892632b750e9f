"""Colour arithmetic of WCAG 2.1: parsing a CSS colour, relative luminance, contrast.

Used by the system check that measures a project's theme (``webauth.W013``);
the accessibility tests measure rendered pages with axe-core instead.
"""

from __future__ import annotations

import re

__all__ = ["contrast_ratio", "css_rgb"]

_HEX = re.compile(r"^#([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$")
_RGB = re.compile(
    r"^rgba?\(\s*(\d{1,3})[\s,]+(\d{1,3})[\s,]+(\d{1,3})\s*(?:[,/]\s*([\d.]+%?)\s*)?\)$"
)


def css_rgb(css: str) -> tuple[int, int, int] | None:
    """An opaque ``#hex`` or ``rgb()`` colour as (r, g, b); ``None`` for anything else.

    Names, ``hsl()``, variables and translucent colours are not judged: what
    they look like depends on more than the string.
    """
    text = css.strip().lower()
    if match := _HEX.match(text):
        digits = match.group(1)
        if len(digits) in (3, 4):
            digits = "".join(c * 2 for c in digits)
        if len(digits) == 8 and digits[6:] != "ff":
            return None
        return int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16)
    if match := _RGB.match(text):
        alpha = match.group(4)
        if alpha not in (None, "1", "1.0", "100%"):
            return None
        channels = tuple(int(c) for c in match.groups()[:3])
        if max(channels) > 255:
            return None
        return channels  # type: ignore[return-value]
    return None


def _luminance(rgb: tuple[int, int, int]) -> float:
    # WCAG 2.1's relative luminance.
    def linear(channel: int) -> float:
        c = channel / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(first: tuple[int, int, int], second: tuple[int, int, int]) -> float:
    """WCAG 2.1's contrast ratio of two opaque colours, from 1 to 21."""
    light, dark = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)
