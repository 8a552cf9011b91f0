"""The notebooks run top to bottom on the bundled sample, as an analyst would run them; what they run on is
named once, in their first code cell, and they run from any folder of the repository."""

import re

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import REPO

NOTEBOOKS = ["01_quickstart.ipynb", "02_policies_and_deploys.ipynb", "03_fleets.ipynb", "04_anatomy.ipynb"]


def _execute(nb, cwd):
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_executes(name):
    path = REPO / "notebooks" / name
    nb = nbformat.read(path, as_version=4)
    outputs = _execute(nb, path.parent)
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2  # every notebook draws at least a timeline and a curve


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_one_parameter_cell_names_what_the_notebook_runs_on(name):
    nb = nbformat.read(REPO / "notebooks" / name, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    first = code[0]
    assert "parameters" in first.metadata.get("tags", [])  # papermill's convention
    assigned = re.findall(r"^([A-Z_]+) = ", first.source, re.M)
    assert {"TRACE", "PORT"} <= set(assigned), first.source
    # every later cell follows it: no path, port or trace of its own
    for cell in code[1:]:
        assert not re.search(r"sample_traces|\.pcap|\.monitor|names\.txt|16380|Path\(\"\.\.\"\)", cell.source), \
            cell.source
    # every parameter is used below
    rest = "\n".join(c.source for c in code[1:])
    for param in assigned:
        assert re.search(rf"\b{param}\b", rest), param


def test_a_notebook_runs_from_the_repositorys_root_on_the_trace_its_first_cell_names(tmp):
    """From another folder than notebooks/ (a JupyterLab started at the root), and with TRACE pointed elsewhere."""
    nb = nbformat.read(REPO / "notebooks" / "04_anatomy.ipynb", as_version=4)
    trace = tmp / "my capture.pcap"
    trace.write_bytes((REPO / "sample_traces" / "feature_store_paced.pcap").read_bytes())
    first = nb.cells[1]
    first.source = re.sub(r'^TRACE = .*$', f"TRACE = {str(trace)!r}", first.source, flags=re.M)
    nb.cells.append(nbformat.v4.new_code_cell('print("ran on", result.trace.path)'))
    outputs = _execute(nb, REPO)
    assert not [o for o in outputs if o.output_type == "error"], [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") for o in outputs)
    assert "LRU needs" in text and f"ran on {trace}" in text
