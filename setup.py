"""Builds tpuscope's C extensions: the XLine column decoder, the XPlane header parser and the timeline's
box merge (see their header comments)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tpuscope.xplane._linedecode",
            sources=["tpuscope/xplane/_linedecode.c"],
            depends=["tpuscope/xplane/_wire.h"],
            extra_compile_args=["-O3"],
        ),
        Extension(
            "tpuscope.xplane._planeheader",
            sources=["tpuscope/xplane/_planeheader.c"],
            depends=["tpuscope/xplane/_wire.h"],
            extra_compile_args=["-O3"],
        ),
        Extension(
            "tpuscope.ui.timeline._boxmerge",
            sources=["tpuscope/ui/timeline/_boxmerge.c"],
            extra_compile_args=["-O3"],
        ),
    ]
)
