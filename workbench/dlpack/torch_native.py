"""The torch reader: torch tensors read in C++ instead of through torch's DLPack exchange API.

The C paths that take torch tensors (the kernel launcher for a tensor passed straight in, and
``wb.from_dlpack``) read a torch tensor through torch's exchange API
(``dltensor_from_py_object_no_sync``) and then ask torch's getters for the three hazards that API
does not check (``requires_grad``, the negative bit, the conjugate bit of a complex tensor).  The
reader (``_torch_native.cpp``) does both from the tensor's ``at::Tensor`` in a few loads, as TVM-FFI's
torch addon does: it is C++ compiled against the installed torch's headers, so it is built once per
torch install (about 15 s), never at import or launch::

    python -m workbench build-torch-native      # `make lab` / `make test` run it

It lives in a per-torch cache folder (``$XDG_CACHE_HOME/layout-workbench/torch-native/<torch
version>-<git commit>-<Python ABI>/``, else ``~/.cache/...``) and is loaded the first time a torch
tensor type is met, only if the torch it was built for (recorded in the library and in its path) is
exactly the running one.  Without it (not built, another torch, ``WB_TORCH_NATIVE=0``) torch tensors
take the exchange API: slower, same results, same refusals.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

__all__ = ["ENV", "build", "cache_dir", "library_path", "activate", "enable", "disable", "enabled", "status"]

ENV = "WB_TORCH_NATIVE"   # "0": never load the reader (torch tensors take the exchange API)
SOURCE = Path(__file__).with_name("_torch_native.cpp")
LIBRARY = "libwb_torch_native.so"

_state = {"tried": False, "lib": None, "why": "not tried yet: no torch tensor met"}


def _running_tag() -> str:
    """What the running process needs the reader built for: '<torch version> <git commit> <Python SOABI>'."""
    import torch
    return f"{torch.__version__} {torch.version.git_version} {sysconfig.get_config_var('SOABI')}"


def cache_dir(tag: str | None = None) -> Path:
    """The folder of the reader built for ``tag`` (default: the running torch and Python)."""
    version, git, soabi = (tag or _running_tag()).split(" ")
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "layout-workbench" / "torch-native" / f"{version}-{git[:12]}-{soabi}"


def library_path(tag: str | None = None) -> Path:
    return cache_dir(tag) / LIBRARY


def _compile_command(out: Path) -> list[str]:
    import torch
    tdir = Path(torch.__file__).resolve().parent
    lib = tdir / "lib"
    return [*shlex.split(os.environ.get("CXX") or "g++"), "-O2", "-fPIC", "-shared", "-std=c++17",
            "-fvisibility=hidden", "-Wno-c++20-extensions",
            f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
            f'-DWB_TORCH_VERSION="{_running_tag()}"',
            f"-I{tdir / 'include'}", f"-I{tdir / 'include' / 'torch' / 'csrc' / 'api' / 'include'}",
            f"-I{sysconfig.get_paths()['include']}", str(SOURCE), "-o", str(out),
            # TensorImpl::requires_grad lives in libc10, which torch loads RTLD_LOCAL: link it by path
            f"-L{lib}", "-lc10", f"-Wl,-rpath,{lib}"]


def build(force: bool = False) -> Path:
    """Compile the reader for the running torch into :func:`cache_dir` (written atomically) and return
    its path; an existing one that names the running torch is kept unless ``force``.  Raises
    RuntimeError saying why when it cannot be built (no compiler, no torch headers, a ROCm torch)."""
    import torch
    if torch.version.hip:
        raise RuntimeError(f"Expected a CUDA or CPU build of torch, but got ROCm torch {torch.__version__}: "
                           "the reader maps torch's CUDA devices to DLPack's kDLCUDA.")
    if not (Path(torch.__file__).resolve().parent / "include" / "torch" / "csrc" / "autograd" / "python_variable.h").is_file():
        raise RuntimeError(f"Expected torch's C++ headers under {Path(torch.__file__).parent / 'include'}, "
                           "but this torch install has none.")
    if not SOURCE.is_file():
        raise RuntimeError(f"Expected the reader's source at {SOURCE}, but it is absent from this install.")
    final = library_path()
    if final.is_file() and not force and _built_for(final) == _running_tag():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=final.parent)
    os.close(fd)
    try:
        cmd = _compile_command(Path(tmp))
        try:
            r = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            raise RuntimeError(f"Expected a C++ compiler ({cmd[0]}; set CXX to choose one), but running it failed: {e}") from e
        if r.returncode != 0:
            raise RuntimeError(f"Compiling {SOURCE.name} failed ({shlex.join(cmd)}):\n{r.stderr[-4000:]}")
        got = _built_for(Path(tmp))
        if got != _running_tag():
            raise RuntimeError(f"Expected the built reader to name {_running_tag()!r}, but it names {got!r}.")
        os.replace(tmp, final)  # atomic: a concurrent loader sees the old file or the whole new one
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return final


def _built_for(path: Path) -> str | None:
    """The tag recorded in the library at ``path`` (loading it: torch must be imported first)."""
    try:
        lib = ctypes.CDLL(str(path))
        fn = lib.wb_torch_built_for
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_char_p
    fn.argtypes = []
    return fn().decode()


def _load(honour_env: bool = True) -> tuple[object | None, str]:
    """(the loaded library, '') or (None, why not)."""
    if honour_env and os.environ.get(ENV, "1") == "0":
        return None, f"{ENV}=0"
    want = _running_tag()
    path = library_path(want)
    if not path.is_file():
        return None, f"not built for torch {want} ({path} is absent): run python -m workbench build-torch-native"
    got = _built_for(path)
    if got != want:  # the reader reads torch's private object layout: only the exact torch it was built for
        return None, f"{path} was built for {got!r}, but the running torch is {want!r}: rebuild it"
    return ctypes.CDLL(str(path)), ""


def _install(lib) -> None:
    from . import _native
    if lib is None:
        _native.set_torch_reader(0, None)
    else:
        import torch
        _native.set_torch_reader(ctypes.cast(lib.wb_torch_read, ctypes.c_void_p).value, torch._C.TensorBase)


def activate() -> bool:
    """Load and install the reader once, where a torch tensor type is first met (the importer calls this);
    True when it is in use.  Silent: :func:`status` says why not."""
    if not _state["tried"]:
        _state["tried"] = True
        _state["lib"], _state["why"] = _load()
        _install(_state["lib"])
    return enabled()


def enable() -> None:
    """Use the reader (loading it if needed, whatever WB_TORCH_NATIVE says); RuntimeError saying why when it
    cannot be used."""
    if _state["lib"] is None:
        _state["tried"] = True
        _state["lib"], _state["why"] = _load(honour_env=False)
    if _state["lib"] is None:
        raise RuntimeError(f"The torch reader cannot be used: {_state['why']}.")
    _install(_state["lib"])


def disable() -> None:
    """Read torch tensors through torch's exchange API (the path without the reader), until :func:`enable`."""
    _state["tried"] = True
    _install(None)


def enabled() -> bool:
    from . import _native
    return _native.torch_reader() is not None


def status() -> str:
    """One line: whether the reader is in use, and why not."""
    if enabled():
        return f"in use: {library_path()}"
    if _state["lib"] is not None:
        return "loaded but switched off (torch_native.disable())"
    return f"not in use: {_state['why']}"


def main(force: bool = False) -> int:
    """python -m workbench build-torch-native: build, then load it as a launch would; 1 (saying why) when
    it cannot be used."""
    try:
        path = build(force=force)
    except (RuntimeError, ImportError) as e:
        print(f"build-torch-native: {e}\nTorch tensors will go through torch's DLPack exchange API (slower, "
              "same results).", file=sys.stderr)
        return 1
    lib, why = _load()
    if lib is None:
        print(f"build-torch-native: built {path}, but it cannot be used: {why}", file=sys.stderr)
        return 1
    print(f"torch reader for {_running_tag()}: {path}")
    return 0
