"""Parts of the window other parts of the project provide, besides the tabs (`registry.VIEWS`).

Until a module exists its menu entry is left out. Only the absence of exactly
that module is tolerated: an import error inside it is a bug and is raised.
"""

from __future__ import annotations

import importlib

OPTIONAL_MODULES = {
    "capture": ("tpuscope.ui.capture_dialog", "CaptureDialog"),
    "compare": ("tpuscope.ui.compare_view", "CompareView"),
}


def optional_class(key: str) -> type | None:
    """The class for `key` in OPTIONAL_MODULES, or None while its module does not exist."""
    module_name, class_name = OPTIONAL_MODULES[key]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name == module_name:
            return None
        raise
    return getattr(module, class_name)
