"""The main window's undo history: one :class:`FormEdit` per step (an edit of the form, an applied suggestion,
an open), and which focused widget types into a text field whose own undo comes first (:func:`text_field`).

Qt's :class:`QUndoStack` holds the steps; their content (:class:`WorkState`, what changed) is Qt-free in
:mod:`vramdesk.ui.work_history`.
"""

from __future__ import annotations

import weakref
from typing import Protocol

from PySide6.QtCore import QObject
from PySide6.QtGui import QUndoCommand
from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QLineEdit

from .work_history import WorkState


class Restores(Protocol):
    """The window a step puts its state back into."""

    def restore_work_state(self, state: WorkState) -> None: ...


def text_field(widget: QObject) -> QLineEdit | None:
    """The line edit a focused widget types into: itself, a spin box's or an editable combo box's."""
    if isinstance(widget, QLineEdit):
        return widget
    if isinstance(widget, QAbstractSpinBox):
        return widget.lineEdit()
    if isinstance(widget, QComboBox) and widget.isEditable():
        return widget.lineEdit()
    return None


class FormEdit(QUndoCommand):
    """One step of the window's undo history: the whole work state before and after an edit, an applied
    suggestion or an open. Consecutive edits of the same single field (typing 8192 digit by digit) merge."""

    MERGE_ID = 1

    def __init__(self, window: Restores, before: WorkState, after: WorkState, text: str, key: str | None) -> None:
        super().__init__(text)
        # a weak reference: a step that merges into the one before is deleted by QUndoStack.push() on the C++ side,
        # and PySide6 never frees its Python object, which would keep a closed window (and its charts) alive
        self._window = weakref.ref(window)
        self.before, self.after, self.key = before, after, key
        self._pushed = False

    @property
    def window(self) -> Restores | None:
        """The window this step restores, while it is open."""
        return self._window()

    def id(self) -> int:
        return self.MERGE_ID if self.key is not None else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, FormEdit) or other.key != self.key or self.key is None:
            return False
        self.after = other.after
        return True

    def redo(self) -> None:
        if not self._pushed:  # QUndoStack.push() calls redo(): the edit is already on the form
            self._pushed = True
            return
        if (window := self.window) is not None:
            window.restore_work_state(self.after)

    def undo(self) -> None:
        if (window := self.window) is not None:
            window.restore_work_state(self.before)
