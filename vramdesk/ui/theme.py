"""Colours, fonts and the style sheet of the window. Qt-free values (hex strings) plus one style sheet."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

#: one stable colour per component category: the Okabe-Ito palette (safe for the common colour-vision
#: deficiencies) plus Paul Tol's wine for the ninth category
CATEGORY_COLORS: dict[str, str] = {
    "weights": "#0072b2",
    "kv_cache": "#e69f00",
    "state": "#cc79a7",
    "activations": "#009e73",
    "logits": "#f0e442",
    "overhead": "#999999",
    "pool": "#56b4e9",
    "gradients": "#d55e00",
    "optimizer": "#882255",
}
UNKNOWN_COLOR = "#bab0ac"

CATEGORY_LABELS: dict[str, str] = {
    "weights": "weights",
    "kv_cache": "KV cache",
    "state": "recurrent state",
    "activations": "activations",
    "logits": "logits",
    "overhead": "overhead",
    "pool": "KV pool",
    "gradients": "gradients",
    "optimizer": "optimizer",
}

VERDICT_COLORS: dict[str | None, str] = {
    "fits": "#2e7d32",
    "tight": "#b26a00",
    "does not fit": "#c62828",
    None: "#455a64",
}
ERROR_COLOR = "#c62828"
TEXT = "#1f2933"
MUTED = "#5f6b7a"
BORDER = "#d9dee5"
PANEL = "#f6f8fa"
GPU_LINE = "#c62828"
DEVICE_LINE = "#37474f"


def mix(color: str, other: str, t: float) -> str:
    """``color`` moved a fraction ``t`` of the way towards ``other`` (both ``#rrggbb``)."""
    a = [int(color[i : i + 2], 16) for i in (1, 3, 5)]
    b = [int(other[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(a, b, strict=True))


def category_color(category: str) -> str:
    return CATEGORY_COLORS.get(category, UNKNOWN_COLOR)


def component_colors(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A colour per component name: its category's colour, lighter shades for a second, third, ... of a kind.

    The first component of each category gets the category colour itself, so a category keeps its colour
    from one estimate to the next.
    """
    seen: dict[str, int] = {}
    out: dict[str, str] = {}
    for name, category in items:
        if name in out:
            continue
        n = seen.get(category, 0)
        seen[category] = n + 1
        base = category_color(category)
        # a light category colour (the logits' yellow) barely changes towards white: shade it darker instead
        toward = "#ffffff" if text_on(base) == "#ffffff" else "#000000"
        out[name] = base if n == 0 else mix(base, toward, min(0.7, 0.3 * n))
    return out


def text_on(color: str) -> str:
    """Black or white, whichever reads better on ``color``."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return "#1f2933" if (0.299 * r + 0.587 * g + 0.114 * b) > 150 else "#ffffff"


@dataclass(frozen=True)
class Palette:
    name: str
    background: str
    panel: str
    text: str
    muted: str
    border: str
    grid: str
    warn_text: str
    warn_bg: str
    warn_border: str


LIGHT = Palette("light", "#ffffff", PANEL, TEXT, MUTED, BORDER, "#eceff3", "#8a5300", "#fff8e6", "#f3d99b")
DARK = Palette(
    "dark", "#1e2227", "#262b31", "#e6e9ed", "#a3adb8", "#3a4049", "#30353c", "#ffcc80", "#3a3020", "#6b5a2e"
)

_current: dict[str, Palette] = {"p": LIGHT}


def current() -> Palette:
    return _current["p"]


def use_palette(p: Palette) -> None:
    _current["p"] = p


#: what exported charts and reports are drawn in, whatever the window's theme: dark text on white paper
PRINT = LIGHT


@contextmanager
def printing(keep_screen: bool = False) -> Iterator[Palette]:
    """Charts built inside are drawn in :data:`PRINT` (``keep_screen``: in the window's palette); the window's
    palette is back afterwards. Widgets read the palette when they are built, so build the export's inside."""
    before = current()
    use_palette(before if keep_screen else PRINT)
    try:
        yield current()
    finally:
        use_palette(before)


def style_sheet(p: Palette) -> str:
    return f"""
QMainWindow, QWidget#central, QWidget#results {{ background: {p.background}; }}
QFrame#browserPanel, QScrollArea#formScroll, QWidget#formBody {{ background: {p.panel}; }}
QFrame#browserPanel {{ border-right: 1px solid {p.border}; }}
QScrollArea#formScroll {{ border: none; border-right: 1px solid {p.border}; }}
QLabel#sectionTitle {{ font-weight: bold; color: {p.text}; }}
QLabel#caption {{ color: {p.muted}; font-size: 8pt; }}
QLabel#details {{ color: {p.text}; background: {p.background}; border: 1px solid {p.border}; border-radius: 4px;
                  padding: 6px; }}
QLabel#validation {{ color: #c62828; font-weight: bold; }}
QLabel#statValue {{ font-size: 12pt; font-weight: bold; color: {p.text}; }}
QFrame#stat {{ border: 1px solid {p.border}; border-radius: 6px; background: {p.background}; }}
QFrame#chartPanel {{ border: 1px solid {p.border}; border-radius: 6px; background: {p.background}; }}
QLabel#warnings {{ color: {p.warn_text}; background: {p.warn_bg}; border: 1px solid {p.warn_border};
                   border-radius: 4px; padding: 4px 6px; }}
QGroupBox {{ font-weight: bold; color: {p.text}; border: 1px solid {p.border}; border-radius: 5px;
             margin-top: 8px; padding-top: 6px; }}
QGroupBox::title {{ subcontrol-origin: margin; left: 8px; padding: 0 3px; }}
QToolButton#toggle {{ border: 1px solid {p.border}; padding: 2px 10px; background: {p.background}; color: {p.text}; }}
QToolButton#toggle:checked {{ background: #0072b2; color: #ffffff; border-color: #0072b2; }}
QTableView {{ gridline-color: {p.grid}; border: 1px solid {p.border}; border-radius: 4px; }}
QHeaderView::section {{ background: {p.panel}; border: none; border-bottom: 1px solid {p.border};
                        padding: 3px 6px; font-weight: bold; color: {p.text}; }}
"""


STYLE_SHEET = style_sheet(LIGHT)
