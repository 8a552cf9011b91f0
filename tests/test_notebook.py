"""The quickstart notebook runs top to bottom on the bundled sample, as an analyst would run it."""

import nbformat
from nbclient import NotebookClient

from conftest import REPO


def test_quickstart_notebook_executes():
    path = REPO / "notebooks" / "01_quickstart.ipynb"
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2  # the timeline and the capacity curve
