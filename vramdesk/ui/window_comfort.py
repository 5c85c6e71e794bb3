"""The main window's comfort actions: the Explain dialog of a breakdown row, focusing the search, the chart's mode,
the Settings dialog (unit, headroom, language, Hub) and the language menu.

:class:`WindowComfort` is a part of :class:`vramdesk.ui.main_window.MainWindow` (a mixin, like
:class:`vramdesk.ui.window_actions.WindowActions`): the attributes and methods it declares under ``TYPE_CHECKING``
are the window's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt

from .i18n import language
from .presenter import set_unit
from .qt_i18n import save_language

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow

    from .browser import ModelBrowser
    from .charts import BreakdownChart
    from .forms import WorkloadForm
    from .presenter import EstimateView
    from .results_pane import ResultsPane
    from .widgets import ComponentTableModel

    _Window = QMainWindow
else:
    _Window = object


class WindowComfort(_Window):
    """Explain, search focus, chart mode, settings and language (see the module's doc)."""

    if TYPE_CHECKING:
        table_model: ComponentTableModel
        view: EstimateView | None
        results: ResultsPane
        browser: ModelBrowser
        breakdown: BreakdownChart
        form: WorkloadForm
        library_window: Any
        explain_dialog: Any
        headroom_fraction: float | None

        def retranslate(self) -> None: ...
        def estimate_now(self) -> Any: ...

    def explain_component(self, row: int | None = None) -> Any:
        """Open the Explain dialog for breakdown row ``row`` (None: the selected row, else the largest
        component). Returns the dialog, or None when there is no estimate to explain."""
        from .dialogs import ExplainDialog

        rows = self.table_model.rows
        if self.view is None or not rows:
            return None
        if row is None:
            row = self.results.selected_row()
            if row is None:
                row = max(range(len(rows)), key=lambda i: rows[i].bytes)
        if not 0 <= row < len(rows):
            return None
        if self.explain_dialog is not None:
            self.explain_dialog.close()
        dialog = ExplainDialog(rows[row], self.view.estimate.constants, self.view.peak_phase, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.finished.connect(lambda _result, d=dialog: self._forget_explain(d))
        self.explain_dialog = dialog
        dialog.show()
        return dialog

    def _forget_explain(self, dialog: Any) -> None:
        if self.explain_dialog is dialog:
            self.explain_dialog = None

    def focus_search(self) -> None:
        self.browser.search_box.setFocus()
        self.browser.search_box.selectAll()

    def _toggle_chart_mode(self) -> None:
        self.breakdown.set_mode("bar" if self.breakdown.mode == "pie" else "pie")

    def open_settings(self) -> None:
        from .dialogs import SettingsDialog

        dialog = SettingsDialog(self)
        before = language()
        if dialog.exec():
            if language() != before:
                self.retranslate()
            self.browser.search_now()  # the endpoint or offline mode may have changed
            self.load_display_settings()
            self.form.refresh_units()
            self.estimate_now()
            if self.library_window is not None:
                self.library_window.update_comparison()  # the unit may have changed

    def load_display_settings(self) -> None:
        """The memory unit and the verdict's headroom from the saved settings (Settings dialog)."""
        from .dialogs import saved_headroom_percent, saved_unit

        set_unit(saved_unit())
        percent = saved_headroom_percent()
        self.headroom_fraction = None if percent is None else percent / 100

    def _set_language(self, code: str) -> None:
        before = language()
        save_language(code)
        if language() != before:
            self.retranslate()


__all__ = ["WindowComfort"]
