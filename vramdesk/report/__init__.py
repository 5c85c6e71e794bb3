"""Qt-free exports of estimates (JSON, and later CSV / Markdown / HTML)."""
