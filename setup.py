"""Builds tpuscope's C extensions: the XLine column decoder, the XPlane header parser, the
trace-event JSON decoder, the model's column kernels and the timeline's box merge (see their header
comments)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tpuscope.readers.xplane._linedecode",
            sources=["tpuscope/readers/xplane/_linedecode.c"],
            depends=["tpuscope/readers/xplane/_wire.h"],
            extra_compile_args=["-O3"],
        ),
        Extension(
            "tpuscope.readers.xplane._planeheader",
            sources=["tpuscope/readers/xplane/_planeheader.c"],
            depends=["tpuscope/readers/xplane/_wire.h"],
            extra_compile_args=["-O3"],
        ),
        Extension(
            "tpuscope.readers.trace_event._jsontok",
            sources=["tpuscope/readers/trace_event/_jsontok.c"],
            extra_compile_args=["-O3"],
        ),
        Extension(
            "tpuscope.model._kernels",
            sources=["tpuscope/model/_kernels.c"],
            extra_compile_args=["-O3"],
        ),
        Extension(
            "tpuscope.ui.timeline._boxmerge",
            sources=["tpuscope/ui/timeline/_boxmerge.c"],
            extra_compile_args=["-O3"],
        ),
    ]
)
