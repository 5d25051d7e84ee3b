"""scripts/execute_notebooks.py stores what the book shows: explorer frames without widget views or
widget state, and a text progress line as its final state."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("execute_notebooks", ROOT / "scripts" / "execute_notebooks.py")
execute_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(execute_notebooks)

LIVE_CELL = '''import matplotlib.pyplot as plt
from course_utils.interactive import explore, int_slider

def draw(n):
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title(str(n))
    return fig

explore("t-live", [int_slider("n", 1, 9, book=[1, 2])], draw, dpi=20)'''

PROGRESS_CELL = '''from course_utils.progress import TextProgress
bar = TextProgress(200, desc="training", min_interval=0.0)
for step in range(1, 201):
    bar.update(step, loss="0.5")
bar.close()
print("done")'''


def test_stored_outputs_hold_frames_and_the_final_progress_line(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(LIVE_CELL), nbformat.v4.new_code_cell(PROGRESS_CELL)]
    path = tmp_path / "t.ipynb"
    nbformat.write(nb, path)
    execute_notebooks.execute(path)
    stored = nbformat.read(path, as_version=4)
    assert "widgets" not in stored.metadata  # no widget state
    (live,) = stored.cells[0].outputs
    assert set(live["data"]) == {"text/html", "text/plain"}  # the widget view was dropped, the frames kept
    assert live["data"]["text/html"].count("<img ") == 2 and 'id="cu-explorer-t-live"' in live["data"]["text/html"]
    (progress,) = stored.cells[1].outputs  # one merged stream, carriage returns applied
    assert progress["text"] == "training: 200/200 steps\ndone\n"


def test_tidy_streams_merges_neighbours_only() -> None:
    out = nbformat.v4.new_output
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[
        out("stream", name="stdout", text="\rstep 1/3"), out("stream", name="stdout", text="\rstep 3/3\nbefore\n"),
        out("display_data", data={"text/plain": "figure"}), out("stream", name="stdout", text="after\n")])]
    execute_notebooks.tidy_streams(nb)
    texts = [o.get("text", o.get("data", {}).get("text/plain")) for o in nb.cells[0].outputs]
    assert texts == ["step 3/3\nbefore\n", "figure", "after\n"]  # the text after the figure stays after it


def test_drop_widgets_keeps_the_other_views() -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    out = nbformat.v4.new_output("display_data", data={"text/plain": "x", "text/html": "<b>x</b>",
                                                         execute_notebooks.WIDGET_VIEW: {"model_id": "m"}})
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[out]), nbformat.v4.new_markdown_cell("y")]
    assert execute_notebooks.drop_widgets(nb) == 1
    assert "widgets" not in nb.metadata and set(nb.cells[0].outputs[0]["data"]) == {"text/plain", "text/html"}
