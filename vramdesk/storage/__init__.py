"""Where things are saved: scenario files with schema versions, written atomically."""
