"""The desktop window's fixtures (File > Export Report is tested on a real window)."""

from tests.ui.conftest import settings, window  # noqa: F401 - fixtures, found by name
