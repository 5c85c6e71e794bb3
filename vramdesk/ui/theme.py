"""Colours, fonts and the style sheet of the window. Qt-free values (hex strings) plus one style sheet."""

from __future__ import annotations

from collections.abc import Iterable

#: one stable colour per component category (Tableau 10, readable on white and distinguishable in print)
CATEGORY_COLORS: dict[str, str] = {
    "weights": "#4e79a7",
    "kv_cache": "#f28e2b",
    "state": "#b07aa1",
    "activations": "#59a14f",
    "logits": "#edc948",
    "overhead": "#8c8c8c",
    "pool": "#76b7b2",
    "gradients": "#e15759",
    "optimizer": "#9c755f",
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
        out[name] = base if n == 0 else mix(base, "#ffffff", min(0.7, 0.3 * n))
    return out


def text_on(color: str) -> str:
    """Black or white, whichever reads better on ``color``."""
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return "#1f2933" if (0.299 * r + 0.587 * g + 0.114 * b) > 150 else "#ffffff"


STYLE_SHEET = f"""
QMainWindow, QWidget#central {{ background: #ffffff; }}
QFrame#formPanel {{ background: {PANEL}; border-right: 1px solid {BORDER}; }}
QLabel#appTitle {{ font-size: 15pt; font-weight: bold; color: {TEXT}; }}
QLabel#appSubtitle {{ color: {MUTED}; }}
QLabel#sectionTitle {{ font-weight: bold; color: {TEXT}; }}
QLabel#fieldLabel {{ color: {MUTED}; }}
QLabel#caption {{ color: {MUTED}; font-size: 8pt; }}
QLabel#statValue {{ font-size: 12pt; font-weight: bold; color: {TEXT}; }}
QFrame#stat {{ border: 1px solid {BORDER}; border-radius: 6px; background: #ffffff; }}
QFrame#chartPanel {{ border: 1px solid {BORDER}; border-radius: 6px; background: #ffffff; }}
QLabel#warnings {{ color: #8a5300; background: #fff8e6; border: 1px solid #f3d99b; border-radius: 4px;
                   padding: 4px 6px; }}
QToolButton#toggle {{ border: 1px solid {BORDER}; padding: 2px 10px; background: #ffffff; color: {TEXT}; }}
QToolButton#toggle:checked {{ background: #4e79a7; color: #ffffff; border-color: #4e79a7; }}
QTableView {{ gridline-color: #eceff3; border: 1px solid {BORDER}; border-radius: 4px; }}
QHeaderView::section {{ background: {PANEL}; border: none; border-bottom: 1px solid {BORDER};
                        padding: 3px 6px; font-weight: bold; color: {TEXT}; }}
"""
