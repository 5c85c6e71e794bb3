"""Render packaging/icons/vramdesk.svg to the PNG sizes the installers use, and the Windows .ico.

    python packaging/make_icons.py

The PNGs and the .ico are committed, so building a package never needs this; run it after editing the SVG.
Rendering uses Qt's SVG renderer (PySide6-Essentials has QtSvg); the .ico is written by Qt too.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

ICONS = Path(__file__).resolve().parent / "icons"
SVG = ICONS / "vramdesk.svg"
#: the PNG sizes live with the app's resources: the window shows them and the installers install the same files
RESOURCE_ICONS = ICONS.parent.parent / "resources" / "icons"
#: hicolor sizes for Linux; 16..256 also go into the Windows .ico, 512 (and 1024 from the SVG) into the macOS .icns
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)


def render(size: int) -> bytes:
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise SystemExit(f"{SVG}: not a valid SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buf, "PNG")
    buf.close()
    return bytes(data.data())


def write_ico(pngs: dict[int, bytes], out: Path) -> None:
    """A Vista-style .ico: one PNG-compressed image per size (Windows reads these since Vista)."""
    header = struct.pack("<HHH", 0, 1, len(pngs))
    entries = b""
    offset = 6 + 16 * len(pngs)
    body = b""
    for size, png in sorted(pngs.items()):
        dim = 0 if size >= 256 else size  # 0 means 256 in the ICONDIRENTRY
        entries += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(png), offset)
        offset += len(png)
        body += png
    out.write_bytes(header + entries + body)


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])
    pngs = {size: render(size) for size in SIZES}
    for size, png in pngs.items():
        (RESOURCE_ICONS / f"vramdesk-{size}.png").write_bytes(png)
    write_ico({s: pngs[s] for s in ICO_SIZES}, ICONS / "vramdesk.ico")
    (ICONS / "vramdesk-1024.png").write_bytes(render(1024))  # for the macOS .icns (built on macOS)
    del app
    print(f"wrote {len(SIZES)} PNGs to {RESOURCE_ICONS}, vramdesk-1024.png and vramdesk.ico to {ICONS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
