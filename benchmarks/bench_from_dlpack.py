"""Issue 2's benchmark: wb.from_dlpack / make_ptr against CuTe DSL, written to benchmarks/results/.

    .venv/bin/python benchmarks/bench_from_dlpack.py [--quick]

Also reachable as ``python -m workbench bench conversion``.
"""

import json
import pathlib
import sys

from workbench.bench import conversion

if __name__ == "__main__":
    result = conversion.run(quick="--quick" in sys.argv)
    out = pathlib.Path(__file__).parent / "results" / "conversion-cpu.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("workbench", "cute_dsl", "speedup_vs_cute_dsl", "targets_met")}, indent=2))
