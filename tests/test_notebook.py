"""The notebooks run top to bottom on the bundled sample, as an analyst would run them."""

import nbformat
from nbclient import NotebookClient

from conftest import REPO


import pytest


@pytest.mark.parametrize("name", ["01_quickstart.ipynb", "02_policies_and_deploys.ipynb", "03_fleets.ipynb",
                                  "04_anatomy.ipynb"])
def test_notebook_executes(name):
    path = REPO / "notebooks" / name
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2  # every notebook draws at least a timeline and a curve
