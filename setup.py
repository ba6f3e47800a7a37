"""Builds tpuscope's C extensions: the XLine column decoder and the timeline's box merge (see their
header comments)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tpuscope.xplane._linedecode",
            sources=["tpuscope/xplane/_linedecode.c"],
            extra_compile_args=["-O3"],
        ),
        Extension(
            "tpuscope.ui.timeline._boxmerge",
            sources=["tpuscope/ui/timeline/_boxmerge.c"],
            extra_compile_args=["-O3"],
        ),
    ]
)
