"""Writers of a loaded trace into other tools' formats (Chrome trace JSON for Perfetto)."""
