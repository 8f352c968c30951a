"""Re-execute the teaching notebooks and store them the way the repository keeps them.

    python tests/store_notebooks.py                    # every notebooks/*.ipynb that shows a view
    python tests/store_notebooks.py notebooks/10_x.ipynb ...   # these (e.g. a new one, not yet run)

(``make store-notebooks`` runs the first form in the project's venv.)  Each notebook runs top to bottom in
a fresh kernel of this interpreter's environment (the repository on ``PYTHONPATH``) and is stored so that
every viewer shows it as it is and opening it changes nothing (see :func:`tidy`):

* no widget state in the metadata (nbconvert's HTML would otherwise fetch a widget manager from a CDN);
* widget outputs with a blank ``model_id``: JupyterLab hides such an output instead of saying "model not
  found", and the view's static picture (the output before it, written by ``widgets.base``) shows;
* the kernelspec as the installed ``python3`` kernel names itself (JupyterLab rewrites a different
  display name when the kernel starts, and the notebook would be modified);
* no execution timestamps; consecutive stream outputs of one name merged into one (JupyterLab merges them
  when it loads a notebook and would then mark it modified); written as JupyterLab writes (nbformat,
  indent 1, a final newline), so opening and saving it in JupyterLab gives the same bytes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VIEW = "application/vnd.jupyter.widget-view+json"
TIMEOUT_S = 1800   # per cell: notebook 09 measures for minutes on a busy 2-core machine


def tidy(nb) -> None:
    """Make a notebook node what the repository stores (in place)."""
    from jupyter_client.kernelspec import KernelSpecManager

    nb.metadata.pop("widgets", None)
    spec = KernelSpecManager().get_kernel_spec("python3")
    nb.metadata["kernelspec"] = {"display_name": spec.display_name, "language": spec.language, "name": "python3"}
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        merged = []
        for out in cell.outputs:
            if (out.output_type == "stream" and merged and merged[-1].output_type == "stream"
                    and merged[-1].name == out.name):
                merged[-1].text += out.text
                continue
            data = out.get("data", {})
            if VIEW in data:
                data[VIEW]["model_id"] = ""
            merged.append(out)
        cell.outputs = merged


def store(path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3", store_widget_state=False,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    tidy(nb)
    tmp = path.with_name(f".{path.name}.storing")
    nbformat.write(nb, tmp)
    os.replace(tmp, path)   # whole or not at all: a reader never sees half a notebook


def shows_views(path: Path) -> bool:
    """Whether a stored notebook displays a widget view (notebook 09, which only measures, does not: it is
    re-run on purpose, with its measurements, never by this script's default)."""
    return VIEW in path.read_text(encoding="utf-8")


def main(argv: list[str]) -> int:
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    paths = [Path(a).resolve() for a in argv] or [p for p in sorted((REPO / "notebooks").glob("*.ipynb"))
                                                  if shows_views(p)]
    for p in paths:
        if p.suffix != ".ipynb" or not p.is_file():
            raise SystemExit(f"Expected paths of .ipynb files, but got {str(p)!r}.")
    for p in paths:
        print(f"executing {p.relative_to(REPO) if p.is_relative_to(REPO) else p}", flush=True)
        store(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
