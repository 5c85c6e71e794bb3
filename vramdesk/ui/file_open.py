"""Scenario files the desktop hands to the running window: macOS's file-open events (a double-click in Finder, a
file dropped on the Dock icon, "Open With") and, on Linux and Windows, a second start's hand-off
(:mod:`vramdesk.ui.single_instance`).

The file opens in the window as File → Open would open it, and the work it replaces is never lost: with unsaved
changes the window first asks whether to save them to the library, open the file anyway (Edit → Undo brings the
changes back) or keep them and not open the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QFileOpenEvent
from PySide6.QtWidgets import QMessageBox

from .i18n import tr

if TYPE_CHECKING:
    from .main_window import MainWindow


class ExternalFiles(QObject):
    """Opens the files given to the running app in ``window``. As an event filter on the QApplication (macOS, where
    the system sends QFileOpenEvent) it takes the file-open events; :meth:`open` is also what the single-instance
    server calls."""

    #: a file that is now open in the window (after the question, when there was one)
    opened = Signal(str)

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.FileOpen or not isinstance(event, QFileOpenEvent):
            return False
        name = event.file() or event.url().toLocalFile()
        if name:
            # after the event is delivered: the question's dialog must not run inside the system's callback
            QTimer.singleShot(0, lambda: self.open(Path(name)))
        return True

    def open(self, path: Path) -> bool:
        """Bring the window forward and open ``path`` there; False when the user kept the current work."""
        window = self.window
        if window.isMinimized():
            window.showNormal()
        window.raise_()
        window.activateWindow()
        path = Path(path)
        if window.scenario_path is not None and window.scenario_path == path and not window.modified:
            return True  # already open as it is on disk (macOS also sends the file the app was started with)
        if window.modified:
            choice = self.ask_save_first(path)
            if choice == "cancel":
                return False
            if choice == "save" and window.save_to_library() is None:
                return False  # the save was cancelled or failed: the work stays, the file does not open
        if not window.open_scenario(path):
            return False
        self.opened.emit(str(path))
        return True

    def ask_save_first(self, path: Path) -> str:
        """The window has unsaved changes: "save" them to the library first, "discard" (open anyway) or "cancel"."""
        box = QMessageBox(self.window)
        box.setIcon(QMessageBox.Icon.Question)
        box.setWindowTitle(tr("Open “{name}”").format(name=path.name))
        box.setText(tr("The current configuration has unsaved changes."))
        box.setInformativeText(tr("Save them to the library before opening “{name}”?").format(name=path.name))
        save = box.addButton(QMessageBox.StandardButton.Save)
        discard = box.addButton(tr("Open without saving"), QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(save)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.exec()
        clicked = box.clickedButton()
        if clicked is save:
            return "save"
        if clicked is discard:
            return "discard"
        return "cancel"
