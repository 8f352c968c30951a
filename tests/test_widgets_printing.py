"""print_layout and the TikZ export against CuTe C++ itself (the CUTLASS headers, compiled with g++ on the CPU)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import workbench as wb
from workbench.layout.printing import MAX_PRINTED_CELLS, format_layout, print_layout

CASES = ["(4,2):(1,4)", "(4,(2,3)):(1,(4,8))", "(16,8):(8,1)", "(3,4):(0,1)"]
LATEX = ["(4,2):(1,4)", "(2,(2,2)):(4,(1,2))"]

PROGRAM = """\
#include <cute/tensor.hpp>
#include <cute/util/print_latex.hpp>
using namespace cute;
int main() {
  print_layout(make_layout(make_shape(4, 2), make_stride(1, 4)));
  print_layout(make_layout(make_shape(4, make_shape(2, 3)), make_stride(1, make_shape(4, 8))));
  print_layout(make_layout(make_shape(16, 8), make_stride(8, 1)));
  print_layout(make_layout(make_shape(3, 4), make_stride(0, 1)));
  printf("@@\\n");
  print_latex(make_layout(make_shape(4, 2), make_stride(1, 4)));
  printf("@@\\n");
  print_latex(make_layout(make_shape(2, make_shape(2, 2)), make_stride(4, make_shape(1, 2))));
}
"""


def _include_dirs():
    try:
        import cutlass_library
        import nvidia.cu13
    except ImportError:
        return None
    cute = Path(cutlass_library.__file__).parent / "source" / "include"
    cccl = Path(list(nvidia.cu13.__path__)[0]) / "include" / "cccl"
    cuda = Path("/usr/local/cuda/include")
    if not (cute / "cute").is_dir() or not cccl.is_dir() or not cuda.is_dir():
        return None
    return [cute, cuda, cccl]


@pytest.fixture(scope="module")
def cute_output(tmp_path_factory):
    dirs = _include_dirs()
    if shutil.which("g++") is None or dirs is None:
        pytest.skip("needs g++, the CUTLASS headers (nvidia-cutlass), CCCL (nvidia-cuda-cccl) and /usr/local/cuda/include")
    d = tmp_path_factory.mktemp("cute")
    (d / "p.cpp").write_text(PROGRAM)
    subprocess.run(["g++", "-std=c++17", "-w", *[f"-I{p}" for p in dirs], "-o", str(d / "p"), str(d / "p.cpp")],
                   check=True, capture_output=True, timeout=300)
    return subprocess.run([str(d / "p")], check=True, capture_output=True, text=True).stdout.split("@@\n")


def test_print_layout_is_cutes_character_for_character(cute_output):
    assert cute_output[0] == "".join(format_layout(wb.parse_layout(s)) for s in CASES)


def test_layout_tikz_is_cutes_print_latex(cute_output):
    from widgets import LayoutView

    for text, expected in zip(LATEX, cute_output[1:]):
        assert LayoutView(wb.parse_layout(text)).to_tikz() == expected


def test_print_layout_prints_folds_and_refuses(capsys):
    print_layout(wb.parse_layout("8:2"))               # rank 1: one column, CuTe's 1:0 appended
    out = capsys.readouterr().out
    assert out.startswith("8:2\n       0 \n    +----+\n 0  |  0 |\n") and out.count("|") == 16
    rank3 = format_layout(wb.parse_layout("(2,2,3):(1,6,2)"))   # modes 1.. become the columns
    assert rank3.splitlines()[3] == " 0  |  0 |  6 |  2 |  8 |  4 | 10 |"
    sw = wb.composition(wb.Swizzle(1, 0, 1), wb.make_layout((2, 2), stride=(2, 1)))
    assert format_layout(sw).splitlines()[3] == " 0  | 0 | 1 |"
    assert format_layout(sw).splitlines()[5] == " 1  | 3 | 2 |"    # the swizzle is applied
    with pytest.raises(ValueError, match=f"at most {MAX_PRINTED_CELLS} cells"):
        format_layout(wb.make_layout((1024, 1024)))
    with pytest.raises(TypeError, match="wb.Layout"):
        format_layout("(4,2):(1,4)")


def test_tv_tikz_follows_print_latex_tv():
    from widgets import TVLayoutView

    tex = TVLayoutView(wb.Layout(((8, 4), 2), ((1, 16), 8)), (8, 8)).to_tikz()
    assert tex.startswith("% Layout TV: ((8,4),2):((1,16),8)\n\\documentclass[convert]{standalone}")
    # thread 9 value 0 lands on index 17 = (1, 2); CuTe's TV colours repeat every 8 threads (9 -> 1)
    assert "\\node[fill={rgb,255:red,175;green,255;blue,175}] at (1,2) {\\shortstack{T9 \\\\ V0}};\n" in tex
    assert tex.count("\\shortstack") == 64 and tex.endswith("\\end{tikzpicture}\n\\end{document}\n")
