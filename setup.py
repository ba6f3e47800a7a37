"""Builds tpuscope's one C extension, the XLine column decoder (see its header comment)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tpuscope.xplane._linedecode",
            sources=["tpuscope/xplane/_linedecode.c"],
            extra_compile_args=["-O3"],
        )
    ]
)
