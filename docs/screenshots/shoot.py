"""The screenshots in docs/screenshots/: the browser with fit badges, the comparison of three plans, a report page.

    Xvfb :56 -screen 0 1600x1000x24 &
    export DISPLAY=:56 QT_QPA_PLATFORM=xcb VRAMDESK_NO_DETECT=1
    VRAMDESK_LANG=en python docs/screenshots/shoot.py "" docs/screenshots
    VRAMDESK_LANG=zh_CN python docs/screenshots/shoot.py .zh_CN docs/screenshots

(with HOME / XDG_* pointed at a scratch folder, so the app's settings stay out of yours). The report page is the
first page of the PDF report rendered with pypdfium2, which vramdesk does not depend on: without it that picture is
skipped.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from vramdesk.core.scenario import Scenario
from vramdesk.services.nvml import DetectionResult
from vramdesk.storage.library import ScenarioLibrary
from vramdesk.ui import qtapp
from vramdesk.ui.compare import LibraryWindow
from vramdesk.ui.main_window import MainWindow

suffix = sys.argv[1] if len(sys.argv) > 1 else ""
docs = Path(sys.argv[2])
qtapp.ensure_app()


def settle(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        QApplication.processEvents()
        time.sleep(0.01)


def plan(name: str, model: str, gpu: str, **work: object) -> Scenario:
    return Scenario.model_validate(
        {
            "name": name,
            "model": {"id": model},
            "weights": work.pop("weights", "auto"),
            "workload": {"kind": "inference", **work},
            "hardware": {"gpu": gpu},
        }
    )


# 1. the browser with fit badges: Qwen3-8B, 8k prompt on an RTX 4090, the list sorted by fit
start = plan("", "Qwen/Qwen3-8B", "RTX 4090", input_len=8192)
w = MainWindow(
    start, detect=lambda: DetectionResult(reason="no NVIDIA driver found (libnvidia-ml.so.1)"), hub_search=None
)
w.resize(1480, 900)
w.show()
settle(1.0)
w.browser.search_box.setText("qwen")
settle(4.0)
w.browser.table.sortByColumn(1, Qt.SortOrder.AscendingOrder)
settle(3.0)
w.grab().save(str(docs / f"browser-fit{suffix}.png"))

# 2. the comparison of three plans
with tempfile.TemporaryDirectory() as tmp:
    lib = ScenarioLibrary(Path(tmp) / "lib")
    ids = [
        lib.save(plan("Llama-3.1-8B, 32k prompt", "meta-llama/Llama-3.1-8B-Instruct", "RTX 4090", input_len=32768)).id,
        lib.save(
            plan(
                "Llama-3.1-8B FP8 KV, 32k",
                "meta-llama/Llama-3.1-8B-Instruct",
                "RTX 4090",
                input_len=32768,
                kv_dtype="fp8",
            )
        ).id,
        lib.save(
            plan(
                "Llama-3.1-8B Q4_K_M on llama.cpp, 32k",
                "meta-llama/Llama-3.1-8B-Instruct",
                "RTX 4090",
                input_len=32768,
                engine="llamacpp",
                weights="q4_k_m",
            )
        ).id,
    ]
    lw = LibraryWindow(lib)
    lw.resize(1400, 820)
    lw.show()
    lw.set_checked(ids)
    lw.update_comparison()
    settle(1.5)
    lw.grab().save(str(docs / f"comparison{suffix}.png"))
    lw.close()

# 3. a report page: the PDF report of the window's plan, page 1 rendered
try:
    import pypdfium2 as pdfium
except ImportError:
    pdfium = None
    print("no pypdfium2: the report page is skipped")
if pdfium is not None:
    with tempfile.TemporaryDirectory() as tmp:
        pdf = Path(tmp) / "report.pdf"
        w.export_current("pdf", pdf)
        doc = pdfium.PdfDocument(str(pdf))
        bm = doc[0].render(scale=1.4, may_draw_forms=False)
        img = QImage(bytes(bm.buffer), bm.width, bm.height, bm.stride, QImage.Format.Format_BGR888)
        img.copy().save(str(docs / f"report-page{suffix}.png"))
        doc.close()
w.close()
print("wrote", sorted(p.name for p in docs.glob("*.png")))
