"""Who the window says it is to the desktop: its icon, its desktop-file id and its title.

* The icon is built from the PNG sizes in ``resources/icons`` (copies of ``packaging/icons``, which the installers
  use), so a source run, an installed wheel and the frozen bundle show the same one in the title bar, the task
  switcher and the dock. PNGs need no image plugin (an SVG would need Qt's SVG icon engine in the bundle).
* The desktop-file name is the ``.desktop`` entry's id: on Wayland it is the window's app id, and GNOME / KDE match
  the window to its menu entry (its name, icon and pinned launcher) by it; on X11 Qt puts it in
  ``_GTK_APPLICATION_ID`` / ``_KDE_NET_WM_DESKTOP_FILE``.
* The title is ``<plan name>[*] — vramdesk``, the app name once: Qt appends the application's display name only to
  a title that does not already end with it, and macOS shows the title as it is.
"""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QGuiApplication, QIcon

from vramdesk.services.catalog import resources_dir

APP_NAME = "vramdesk"
#: the reverse-DNS id of the desktop entry (packaging/linux/io.github.vramdesk.VramDesk.desktop), the macOS bundle
#: identifier and the AppStream id
APP_ID = "io.github.vramdesk.VramDesk"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
TITLE_SEPARATOR = " — "


def app_icon() -> QIcon:
    """The app's icon with every PNG size found (an empty icon when the resources have none)."""
    icon = QIcon()
    try:
        folder = resources_dir() / "icons"
    except FileNotFoundError:
        return icon
    for size in ICON_SIZES:
        path = folder / f"vramdesk-{size}.png"
        if path.is_file():
            icon.addFile(str(path), QSize(size, size))
    return icon


def set_identity(app: QGuiApplication) -> None:
    """Name, desktop-file id and icon of a new application (before its first window is shown)."""
    app.setApplicationName(APP_NAME)
    app.setApplicationDisplayName(APP_NAME)
    app.setOrganizationName(APP_NAME)
    show_identity()


def show_identity() -> None:
    """The desktop-file id and the icon, once per application (an application made elsewhere, pytest-qt's, keeps
    its names: its settings and standard paths depend on them)."""
    if QGuiApplication.desktopFileName() == APP_ID:
        return  # set already: a second setWindowIcon() would tell every widget alive about the change
    QGuiApplication.setDesktopFileName(APP_ID)
    icon = app_icon()
    if not icon.isNull():
        QGuiApplication.setWindowIcon(icon)


def window_title(name: str) -> str:
    """``name[*] — vramdesk`` (Qt shows ``[*]`` as ``*`` while the window is modified, else drops it); a ``[*]`` in
    the name itself is doubled, which Qt shows as it was typed."""
    return f"{name.replace('[*]', '[*][*]')}[*]{TITLE_SEPARATOR}{APP_NAME}"
