"""One module per hardware operation: its builtin(s), IR node(s) with their operand checks and architecture, its
CUDA/PTX text, its exact CPU semantics and its place in the CPU scheduler.  Importing this package registers them
all (the frontend finds builtins by identity, the backends ask the nodes).

Adding an instruction: a new module here (a subclass of ``ir.Instruction`` with ``cuda``/``python``, and the
``@builtin`` that emits it), one line below, its public names in ``workbench/dsl/__init__.py``, and its test in
``tests/test_ops.py`` (parametrized over the CPU executor and CUDA).
"""

from . import (  # noqa: F401  (each import registers its builtins and nodes)
    atomic,
    cluster,
    cp_async,
    fence,
    ldmatrix,
    mbarrier,
    mma_sync,
    setmaxnreg,
    sync,
    tcgen05_alloc,
    tcgen05_commit,
    tcgen05_cp,
    tcgen05_fence,
    tcgen05_ld_st,
    tcgen05_mma,
    tma,
    vector_copy,
    wgmma,
)
