"""The README's tour runs as written (so the README stays true)."""

import linecache
import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 2
    scopes = []
    for i, block in enumerate(blocks):
        name = f"<README.md block {i}>"
        # the kernel DSL reads a kernel's source through inspect, which reads linecache
        linecache.cache[name] = (len(block), None, block.splitlines(True), name)
        # the tour's views (block 1) continue the tour (block 0); every other block runs alone, as a reader pastes it
        scope = scopes[0] if i == 1 else {}
        exec(compile(block, name, "exec"), scope)  # noqa: S102 - the README is ours
        scopes.append(scope)
    scope = scopes[0]
    t = scope["t"]
    assert str(t.layout) == "(?,?):(?{i64},1)"
    assert scope["L"](5) == 5 and callable(scope["vadd"])
