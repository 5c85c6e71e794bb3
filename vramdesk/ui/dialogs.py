"""The settings dialog (language, memory unit, verdict headroom, Hub endpoint, offline mode, the HF token) and
the "Explain" dialog of one breakdown component.

Endpoint, offline mode and language are saved with QSettings and applied to this process's environment
(``HF_ENDPOINT``, ``HF_HUB_OFFLINE``: the Hub client reads them when it runs). The token is only put in
this process's ``HF_TOKEN`` for the session: it is never saved, never written to scenario files or logs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from . import theme
from .core_text import localize, localize_name
from .i18n import LANGUAGES, language, tr
from .presenter import Slice, unit_bytes, unit_name
from .qt_i18n import save_language

ENDPOINT_KEY = "hub/endpoint"
OFFLINE_KEY = "hub/offline"
UNIT_KEY = "ui/unit"
HEADROOM_KEY = "ui/headroom_percent"
#: memory units offered (the key is what is saved)
UNIT_CHOICES = {"GiB": "GiB (2^30 bytes, as nvidia-smi and PyTorch count)", "GB": "GB (10^9 bytes)"}
HEADROOM_MAX_PERCENT = 50.0


def saved_unit() -> str:
    value = QSettings().value(UNIT_KEY)
    return value if isinstance(value, str) and value in UNIT_CHOICES else "GiB"


def saved_headroom_percent() -> float | None:
    """The verdict headroom in percent of the GPU's memory, or None for the core's default."""
    value = QSettings().value(HEADROOM_KEY)
    if value is None or value == "":
        return None
    try:
        percent = float(str(value))
    except ValueError:
        return None
    return percent if 0 <= percent <= HEADROOM_MAX_PERCENT else None


def apply_saved_settings() -> None:
    """At start: the saved endpoint and offline mode, unless the environment already sets them."""
    s = QSettings()
    endpoint = s.value(ENDPOINT_KEY)
    if isinstance(endpoint, str) and endpoint and "HF_ENDPOINT" not in os.environ:
        os.environ["HF_ENDPOINT"] = endpoint
    offline = s.value(OFFLINE_KEY)
    if str(offline).lower() in ("true", "1") and "HF_HUB_OFFLINE" not in os.environ:
        os.environ["HF_HUB_OFFLINE"] = "1"


class SettingsDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(tr("Settings"))
        self.language_combo = QComboBox()
        for code, name in LANGUAGES.items():
            self.language_combo.addItem(name, code)
        self.language_combo.setCurrentIndex(max(0, self.language_combo.findData(language())))
        self.language_combo.setToolTip(tr("The language of the window (it changes at once)"))
        self.unit_combo = QComboBox()
        for key, label in UNIT_CHOICES.items():
            self.unit_combo.addItem(tr(label), key)
        self.unit_combo.setCurrentIndex(max(0, self.unit_combo.findData(saved_unit())))
        self.unit_combo.setToolTip(tr("The unit of every memory figure in the window"))
        self.headroom_spin = QDoubleSpinBox()
        self.headroom_spin.setRange(-0.5, HEADROOM_MAX_PERCENT)
        self.headroom_spin.setSingleStep(0.5)
        self.headroom_spin.setDecimals(1)
        self.headroom_spin.setSuffix(" %")
        self.headroom_spin.setSpecialValueText(tr("default (5 %, at least 256 MiB)"))
        percent = saved_headroom_percent()
        self.headroom_spin.setValue(-0.5 if percent is None else percent)
        self.headroom_spin.setToolTip(
            tr("Share of the GPU's memory the verdict keeps free for the display, other processes and spikes")
        )
        self.endpoint_edit = QLineEdit(os.environ.get("HF_ENDPOINT", ""))
        self.endpoint_edit.setPlaceholderText("https://huggingface.co")
        self.endpoint_edit.setToolTip(tr("A Hub mirror or a private Hub (HF_ENDPOINT); empty = huggingface.co"))
        self.offline_check = QCheckBox(tr("offline: never ask the Hub (catalog and local files only)"))
        self.offline_check.setChecked(
            os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "TRUE", "YES", "ON")
        )
        self.token_edit = QLineEdit()
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.token_edit.setPlaceholderText(tr("hf_… (empty = the token of `hf auth login`)"))
        self.token_edit.setAccessibleName(tr("Hugging Face token"))
        note = QLabel(
            tr("The token is used for this session only: never saved, never written to scenario files or logs.")
        )
        note.setObjectName("caption")
        note.setWordWrap(True)
        form = QFormLayout()
        form.addRow(tr("&Language"), self.language_combo)
        form.addRow(tr("Memory unit"), self.unit_combo)
        form.addRow(tr("Verdict headroom"), self.headroom_spin)
        form.addRow(tr("Hub endpoint"), self.endpoint_edit)
        form.addRow(self.offline_check)
        form.addRow(tr("HF token"), self.token_edit)
        form.addRow(note)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(buttons)
        self.accepted.connect(self.apply)

    def apply(self) -> None:
        s = QSettings()
        save_language(str(self.language_combo.currentData()))
        s.setValue(UNIT_KEY, str(self.unit_combo.currentData()))
        headroom = self.headroom_spin.value()
        if headroom < 0:
            s.remove(HEADROOM_KEY)
        else:
            s.setValue(HEADROOM_KEY, headroom)
        endpoint = self.endpoint_edit.text().strip().rstrip("/")
        s.setValue(ENDPOINT_KEY, endpoint)
        if endpoint:
            os.environ["HF_ENDPOINT"] = endpoint
        else:
            os.environ.pop("HF_ENDPOINT", None)
        offline = self.offline_check.isChecked()
        s.setValue(OFFLINE_KEY, offline)
        if offline:
            os.environ["HF_HUB_OFFLINE"] = "1"
        else:
            os.environ.pop("HF_HUB_OFFLINE", None)
        token = self.token_edit.text().strip()
        if token:
            os.environ["HF_TOKEN"] = token
        self.token_edit.clear()


def explain_text(row: Slice, constants: Mapping[str, str], peak_phase: str = "") -> str:
    """Plain text for the Explain dialog: the component, its full explanation and the estimate's constants."""
    size = f"{row.bytes / unit_bytes():.2f} {unit_name()} ({row.bytes:,} {tr('bytes')}, {row.share * 100:.1f}%)"
    category = tr(theme.CATEGORY_LABELS.get(row.category, row.category))
    lines = [f"{localize_name(row.name)}: {size}", f"{tr('Category')}: {category}"]
    if peak_phase:
        lines.append(f"{tr('Peak phase')}: {localize_name(peak_phase)}")
    explain = localize(row.explain)
    lines += ["", tr("Where the number comes from") + ":", explain, "", tr("Constants and sources") + ":"]
    lines += [f"• {localize_name(name)}: {localize(source)}" for name, source in constants.items()] or [tr("(none)")]
    return "\n".join(lines)


class ExplainDialog(QDialog):
    """One breakdown component in full: its explanation and the constants (with sources) of the estimate.

    The text is read-only but selectable; Copy puts all of it on the clipboard."""

    def __init__(
        self, row: Slice, constants: Mapping[str, str], peak_phase: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"{tr('Explain')}: {localize_name(row.name)}")
        self.setObjectName("explainDialog")
        self.text = explain_text(row, constants, peak_phase)
        self.view = QPlainTextEdit(self)
        self.view.setReadOnly(True)
        self.view.setPlainText(self.text)
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.view.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.view.setAccessibleName(tr("Where the number comes from"))
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.view.setFont(font)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.copy_button = QPushButton(tr("Copy"), self)
        self.copy_button.setToolTip(tr("Copy the explanation and the sources to the clipboard"))
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.clicked.connect(self.copy)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.view)
        layout.addWidget(buttons)
        self.resize(720, 460)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text)
