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


@pytest.fixture(scope="session")
def _torch_reader_built():
    """The torch reader for the running torch (workbench/dlpack/torch_native.py): `make test` builds it before
    pytest; where it is absent it is built here, once a session (about 15 s)."""
    from workbench.dlpack import torch_native
    return torch_native.build()


@pytest.fixture
def torch_reader(_torch_reader_built):
    """workbench.dlpack.torch_native with the reader in use (tests switch it with enable()/disable() to compare the two
    paths); whatever was in use before is restored after the test."""
    from workbench.dlpack import torch_native
    was = torch_native.enabled()
    torch_native.enable()
    yield torch_native
    (torch_native.enable if was else torch_native.disable)()
