"""Suite-wide settings: property tests are judged on their properties, not on the wall clock of a
shared 2-core CI machine (hypothesis' default 200 ms deadline would make them flaky there), and on
the same generated cases every run (derandomized): the floors that properties which may refuse a
case must reach (test_algebra_props.floored) are measured on those cases, and a landing never
depends on the luck of a draw."""

from hypothesis import HealthCheck, settings

settings.register_profile("workbench", deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("workbench")


import numpy as np  # noqa: E402
import pytest  # noqa: E402


class Backend:
    """Where a kernel test runs: 'cpu' (the CPU executor on numpy arrays) or 'cuda' (a GPU, cupy arrays)."""

    def __init__(self, name):
        self.name = name
        self.xp = np
        if name == "cuda":
            import cupy
            self.xp = cupy

    def array(self, x):
        """x (a numpy array) where this backend's kernels read it."""
        return x if self.name == "cpu" else self.xp.asarray(x)

    def numpy(self, x):
        return x if self.name == "cpu" else self.xp.asnumpy(x)

    def require_sm90(self):
        """Skip a GPU test of a Hopper-only instruction on another GPU (the CPU executor runs it anywhere)."""
        if self.name == "cuda":
            from workbench.dsl.runtime.cupy import current_arch
            if current_arch() != "sm_90":
                pytest.skip(f"needs an SM90 GPU (H100/H200), not {current_arch()}")

    def __repr__(self):
        return self.name


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def backend(request):
    """Each instruction test runs once on the CPU executor and once on a GPU (skipped without one): the two must
    agree (tests/test_ops.py)."""
    if request.param == "cuda":
        from workbench.dsl import gpu_available
        if not gpu_available():
            pytest.skip("needs cupy and a CUDA GPU")
    return Backend(request.param)
