"""Only the C parts need setup.py (the DLPack bridge and the kernel launcher); all metadata is in pyproject.toml."""
from setuptools import Extension, setup

setup(ext_modules=[
    Extension("workbench.dlpack._native", ["workbench/dlpack/_native.c"], depends=["workbench/dlpack/_dlpack_structs.h"],
              extra_compile_args=["-O2"]),
    Extension("workbench.dsl.runtime._launch", ["workbench/dsl/runtime/_launch.c"], depends=["workbench/dlpack/_dlpack_structs.h"],
              extra_compile_args=["-O2"]),
])
