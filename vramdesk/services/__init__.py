"""Qt-free I/O adapters: the bundled catalog, local files, (later) the Hub and NVML."""
