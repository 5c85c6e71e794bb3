"""The desktop window (PySide6 + pyqtgraph). The only package that imports Qt; it never imports the CLI."""

from ._qtfix import protect_singletons

protect_singletons()
