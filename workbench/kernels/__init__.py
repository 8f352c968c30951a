"""Kernels the library ships, written in the DSL against the public API (``import workbench as wb``): the examples,
the GEMM ladder (rungs 1-5) and the Hopper GEMM (rungs 6-7)."""
