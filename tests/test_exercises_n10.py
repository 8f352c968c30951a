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
    for answer in ((256, (128, 256, 16)), "TiledMMA", mock.ANY, (mock.ANY,) * 5, ("TiledMMA",) + (mock.ANY,) * 4):
        v = check("10.3", answer)
        assert not v.right and v.startswith("10.3: ")


def test_10_4_the_swizzle_removes_the_conflicts():
    b, m, s = _reference("10.4")
    cfg = G.SmemGemm(bk=16)
    plain = L((cfg.bm, cfg.bk), stride=(cfg.bk, 1))
    before = wb.bank_conflicts(cfg.s2r_A, plain)
    after = wb.bank_conflicts(cfg.s2r_A, wb.make_composed_layout(wb.Swizzle(b, m, s), 0, plain))
    assert before.max_ways == 2 and after.total == after.ideal_total
    assert check("10.4", f"S<{b},{m},{s}>").right and check("10.4", wb.Swizzle(b, m, s)).right
    assert not check("10.4", "S<2,3,3>").right and not check("10.4", (b, m - 1, s)).right


def test_10_5_the_kernel_is_the_notebooks_and_the_bug_is_the_commit():
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
    for spelled in ("e", "(e)", " E "):
        assert check("10.5", spelled).right
    for wrong in ("b", "c", "(d)", 5):
        assert not check("10.5", wrong).right


def test_10_6_counts_the_atoms_of_a_warps_share():
    cfg = next(r for r in G.ladder() if r.name == "pipelined").config
    wm, wn = cfg.warps
    per_warp_tile = (cfg.bm // wm) * (cfg.bn // wn)
    assert _reference("10.6") == per_warp_tile // (16 * 8) * (cfg.bk // 16)


def test_no_answer_is_printed_before_its_question():
    cells = _cells()
    answers = {"10.1": [str(_reference("10.1"))], "10.2": [str(_reference("10.2"))],
               "10.4": ["S<{},{},{}>".format(*_reference("10.4"))]}
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
