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


def test_the_tours_comments_say_what_the_calls_return():
    # the tour's suggest_swizzle line: its comment names the type returned (a SwizzleSuggestion, not a Swizzle),
    # the swizzle it holds and the wavefronts; checked against the call itself
    text = README.read_text()
    line = next(s for s in text.splitlines() if s.startswith("wb.suggest_swizzle(ldsm"))
    call, comment = line.split("#", 1)
    comment += text.split(line, 1)[1].split("\n", 2)[1]   # the comment's second line
    scope = {}
    block = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    setup = [s for s in block.splitlines() if s.startswith(("import ", "mma = ", "ldsm = "))]   # what the line uses
    exec("\n".join(setup + ["s = " + call]), scope)  # noqa: S102 - the README is ours
    s, wb = scope["s"], scope["wb"]
    assert type(s).__name__ in comment and comment.strip().startswith("SwizzleSuggestion:")
    sw = s.swizzle
    assert f"{sw}," in comment and f".swizzle is wb.Swizzle({sw.bits}, {sw.base}, {sw.shift})" in comment
    assert type(sw) is type(wb.Swizzle(3, 3, 3)) and sw == wb.Swizzle(sw.bits, sw.base, sw.shift)
    assert f"wavefronts {s.before.total} -> {s.after.total}" in comment and s.after.conflict_free
