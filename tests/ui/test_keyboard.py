"""The keyboard as a user drives it (keys go through the window, so shortcuts and mnemonics apply): Tab walks every
field and never stays in a table, a row label's mnemonic focuses its field, and typing there never changes the
model."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractItemView, QApplication, QWidget
from uiwindow import make_window

from vramdesk.core.defaults import DEFAULT_SCENARIO


def _press(w: QWidget, key: Qt.Key, modifier: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier) -> None:
    handle = w.windowHandle()
    assert handle is not None
    QTest.keyClick(handle, key, modifier)
    QApplication.processEvents()


def test_tab_walks_the_window_and_leaves_the_tables(qtbot) -> None:
    w = make_window(qtbot)
    w.activateWindow()
    w.browser.search_box.setFocus()
    QApplication.processEvents()
    walked: list[QWidget] = []
    for _ in range(120):
        focus = QApplication.focusWidget()
        assert focus is not None
        if walked and focus is walked[0]:
            break  # round the window once
        walked.append(focus)
        _press(w, Qt.Key.Key_Tab)
    else:
        raise AssertionError(f"Tab never came back to the search box: stuck at {walked[-1]!r}")
    tables = [x for x in walked if isinstance(x, QAbstractItemView)]
    names = {x.accessibleName() for x in tables}
    assert {"Search results", "Components at the peak"} <= names
    assert len(tables) == len(names)  # each table once: Tab moves on instead of walking its cells
    for field in ("batch", "input_len", "output_len", "gpu_count"):
        assert w.widget(field) in walked, field
    # every field the form shows and that takes focus is on the way, and so is every button of the window
    shown = [
        (name, f.widget.focusProxy() or f.widget)
        for name, f in w.form.fields.items()
        if f.widget.isVisibleTo(w) and f.widget.isEnabled()
    ]
    takes_tab = [(n, x) for n, x in shown if x.focusPolicy() & Qt.FocusPolicy.TabFocus]
    assert len(takes_tab) >= 10, [n for n, _ in takes_tab]
    missed = [n for n, x in takes_tab if x not in walked and not any(x.isAncestorOf(y) for y in walked)]
    assert not missed, f"Tab never reaches {missed}"


def test_a_mnemonic_focuses_its_field_and_typing_never_changes_the_model(qtbot) -> None:
    w = make_window(qtbot)
    w.activateWindow()
    w.browser.search_box.setFocus()  # where a first start leaves the focus
    QApplication.processEvents()
    _press(w, Qt.Key.Key_I, Qt.KeyboardModifier.AltModifier)  # "&Input tokens"
    assert QApplication.focusWidget() is w.widget("input_len")
    for key in (Qt.Key.Key_8, Qt.Key.Key_1, Qt.Key.Key_9, Qt.Key.Key_2, Qt.Key.Key_Return):
        _press(w, key)
    qtbot.waitUntil(lambda: not w.pending, timeout=5000)
    assert w.widget("input_len").value() == 8192
    assert w.form.values().model == DEFAULT_SCENARIO.model.id
