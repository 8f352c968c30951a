"""Only the C part of the DLPack bridge needs setup.py; all metadata is in pyproject.toml."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("workbench.dlpack._native", ["workbench/dlpack/_native.c"], extra_compile_args=["-O2"])])
