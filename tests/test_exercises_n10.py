"""Notebook 10's exercises: the references are right for the reason the lesson gives (checked against the objects
and the CPU executor), equivalent answers pass, near misses and restated questions fail, the kernel of 10.5 is
the notebook's, and no answer is printed in the notebook before its question."""

import ast
import inspect
import json
import pathlib
from unittest import mock

import numpy as np

import workbench as wb
from widgets.exercises import _load_all, _reference, check, n10
from workbench.kernels import gemm_ladder as G

_load_all()
NB = pathlib.Path(__file__).resolve().parents[1] / "notebooks" / "10_tensor_core_gemm.ipynb"
ATOM = wb.mma_atom(G.SM80_F16)
L = wb.make_layout


def _cells():
    return json.loads(NB.read_text())["cells"]


def test_10_1_the_fragment_shape_is_what_a_kernel_gets():
    want = _reference("10.1")
    r5 = next(r for r in G.ladder() if r.name == "pipelined")
    cfg = r5.config
    # V: the atom's 8 values of A; M: bm over the tiled MMA's M tile; K: bk over the atom's K
    assert want == ((2, 2, 2), cfg.bm // r5.mma.tile_shape_mnk[0], cfg.bk // ATOM.shape_mnk[2])
    assert check("10.1", [[2, 2, 2], want[1], want[2]]).right            # a list spells a tuple
    assert not check("10.1", ((2, 2, 2), want[1], want[2] + 1)).right
    assert not check("10.1", (8, want[1], want[2])).right                 # V flattened: not the shape


def test_10_2_the_inverse_maps_back_to_the_coordinate():
    t, v = _reference("10.2")
    mma = next(r for r in G.ladder() if r.name == "pipelined").mma
    m, n, _ = mma.tile_shape_mnk
    assert wb.idx2crd(mma.tv_layout_C_tiled((t, v)), (m, n)) == (20, 45)
    assert not check("10.2", (t, v - 1)).right and not check("10.2", (t - 32, v)).right


def test_10_3_a_design_is_judged_by_what_it_builds():
    assert check("10.3", wb.make_tiled_mma(ATOM, L((2, 4, 1)), (128, 256, 16))).right
    # the same design with the permutation written as layouts
    assert check("10.3", wb.make_tiled_mma(ATOM, L((2, 4, 1)), (L(128), L(256), L(16)))).right
    assert not check("10.3", wb.make_tiled_mma(ATOM, L((2, 4, 1)))).right                 # no permutation
    assert not check("10.3", wb.make_tiled_mma(ATOM, L((4, 2, 1)), (128, 256, 16))).right  # 4 along M
    assert not check("10.3", wb.make_tiled_mma(ATOM, L((2, 4, 1)), (128, 256, 32))).right
    other = wb.mma_atom("SM80_16x8x16_F32BF16BF16F32_TN")
    assert not check("10.3", wb.make_tiled_mma(other, L((2, 4, 1)), (128, 256, 16))).right
    # restating the question is not a design; foreign objects get a verdict, never a pass
    want = _reference("10.3")
    assert check("10.3", want).right                                 # the reference is the real TiledMMA
    for answer in ((256, (128, 256, 16)), "TiledMMA", mock.ANY, (mock.ANY,) * 5, ("TiledMMA",) + (mock.ANY,) * 4,
                   ("TiledMMA", want.atom.name, tuple(want.atom_layout_mnk.shape), want.size,
                    tuple(want.tile_shape_mnk))):
        v = check("10.3", answer)
        assert not v.right and v.startswith("10.3: ")


def test_10_4_the_ways_and_the_swizzle_that_removes_them():
    ways, (b, m, s) = _reference("10.4")
    cfg = G.SmemGemm(bk=16)
    plain = L((cfg.bm, cfg.bk), stride=(cfg.bk, 1))
    before = wb.bank_conflicts(cfg.s2r_A, plain)
    after = wb.bank_conflicts(cfg.s2r_A, wb.make_composed_layout(wb.Swizzle(b, m, s), 0, plain))
    assert ways == before.max_ways == 2 and after.total == after.ideal_total
    assert check("10.4", (ways, f"S<{b},{m},{s}>")).right and check("10.4", [ways, wb.Swizzle(b, m, s)]).right
    assert not check("10.4", (ways, "S<2,3,3>")).right and not check("10.4", (ways + 1, (b, m, s))).right
    assert not check("10.4", f"S<{b},{m},{s}>").right          # the count is asked too, and checked


def _edited(src, old, new, tmp_path):
    """The notebook's ring_rowsum with one line edited, as a learner's kernel (in a file: @wb.kernel reads source)."""
    assert old in src
    path = tmp_path / f"learner_{abs(hash((old, new)))}.py"
    path.write_text(src.replace(old, new))
    ns = {"wb": wb, "STAGES": n10.STAGES, "ROWS": n10.ROWS}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    return ns["ring_rowsum"]


def test_10_5_the_kernel_is_the_notebooks_and_the_fix_is_run(tmp_path):
    src = inspect.getsource(n10.ring_rowsum.__wrapped__)
    code = ["".join(c["source"]) for c in _cells() if c["cell_type"] == "code"]
    shown = [c for c in code if "def ring_rowsum" in c]
    assert len(shown) == 1
    fn = next(n for n in ast.parse(shown[0]).body if isinstance(n, ast.FunctionDef) and n.name == "ring_rowsum")
    lines = shown[0].splitlines()[fn.decorator_list[0].lineno - 1:fn.end_lineno]
    assert "\n".join(lines) == src.rstrip("\n")
    # the symptom the notebook shows: right for 1 tile, wrong once a tile is never followed by a commit
    for ntiles, right in ((1, True), (2, False), (5, False)):
        x, want = n10.ring_input(ntiles)
        out = np.zeros(32, np.float32)
        n10.ring_rowsum[1, 32](wb.from_dlpack(x, assumed_align=16), out)
        assert bool(np.array_equal(out, want)) is right, ntiles
    assert not check("10.5", n10.ring_rowsum).right
    commit = "            wb.cp_async_commit_group()                           # (e)"
    fixed = _edited(src, commit, "        wb.cp_async_commit_group()                               # (e)", tmp_path)
    assert check("10.5", fixed).right
    # right sums but no overlap: waiting for every copy is not the fix asked for
    waits_all = _edited(src.replace(commit, "        wb.cp_async_commit_group()"),
                        "wb.cp_async_wait_group(STAGES - 2)", "wb.cp_async_wait_group(0)", tmp_path)
    v = check("10.5", waits_all)
    assert not v.right and "wait_group 0" in v
    for wrong in ("e", "(e)", 5, ("ring_rowsum", n10.RIGHT), mock.ANY):     # a letter or a restated reference
        v = check("10.5", wrong)
        assert not v.right and v.startswith("10.5: "), wrong


def test_10_6_counts_the_atoms_of_a_warps_share():
    cfg = next(r for r in G.ladder() if r.name == "pipelined").config
    wm, wn = cfg.warps
    per_warp_tile = (cfg.bm // wm) * (cfg.bn // wn)
    assert _reference("10.6") == per_warp_tile // (16 * 8) * (cfg.bk // 16)
    for wrong in (_reference("10.6") - 1, _reference("10.6") + 1):       # never which way: no bisection
        v = check("10.6", wrong)
        assert not v.right and "large" not in v and "small" not in v


def test_10_7_the_design_is_judged_by_the_configuration_built():
    from workbench.kernels.arithmetic import gemm_arithmetic
    want = _reference("10.7")
    stages = want.stages
    assert gemm_arithmetic(G.SmemGemm(bm=128, bn=256, bk=32, warps=(2, 4), stages=stages), 64, 64, 64).smem_bytes \
        <= G.SMEM_LIMIT < (128 + 256) * 32 * 2 * (stages + 1)
    assert check("10.7", G.SmemGemm(bm=128, bn=256, bk=32, warps=(2, 4), stages=stages)).right
    for wrong in (G.SmemGemm(bm=128, bn=256, bk=32, warps=(2, 4), stages=stages - 1),
                  G.SmemGemm(bm=128, bn=128, bk=32, warps=(2, 4), stages=stages), stages,
                  ("SmemGemm", 128, 256, 32, (2, 4), stages)):
        v = check("10.7", wrong)
        assert not v.right and "large" not in v and "small" not in v


def test_no_answer_is_printed_before_its_question():
    cells = _cells()
    answers = {"10.1": [str(_reference("10.1"))], "10.2": [str(_reference("10.2"))],
               "10.4": ["S<{},{},{}>".format(*_reference("10.4")[1])]}
    for key, texts in answers.items():
        at = next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and f'check("{key}"' in "".join(c["source"]))
        before = json.dumps([c.get("outputs", []) for c in cells[:at]])
        for t in texts:
            assert t not in before, (key, t)


def test_10_5s_kernel_is_real_gpu_code():
    # NVRTC (no GPU needed): the find-the-bug kernel compiles to the cp.async ring it shows
    from workbench.dsl.runtime.cupy import compile_ptx

    x, _ = n10.ring_input(3)
    ptx = compile_ptx(wb.show_code(n10.ring_rowsum, wb.from_dlpack(x, assumed_align=16), np.zeros(32, np.float32)),
                      "sm_80")
    for instr in ("cp.async.cg.shared.global", f"cp.async.wait_group {n10.STAGES - 2}", "cp.async.commit_group",
                  "bar.sync"):
        assert instr in ptx, instr
