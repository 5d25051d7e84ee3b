"""Tests for course_utils.interactive: pre-rendered frames behind range sliders."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from course_utils.interactive import FrameExplorer, explore, figure_to_png  # noqa: E402


def draw(a: int, b: str) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title(f"{a} {b}")
    return fig


def test_one_slider_per_control_one_img_per_frame() -> None:
    ex = explore("t-explorer", [("a", [1, 2, 3]), ("b", ["x", "y"])], draw, caption="demo", dpi=20)
    html = ex._repr_html_()
    assert len(re.findall(r'<input type="range"', html)) == 2
    assert len(re.findall(r"<img ", html)) == 6
    assert 'max="2"' in html and 'max="1"' in html
    assert html.count("display:none;") == 5  # only the first frame is visible
    assert 'id="cu-explorer-t-explorer"' in html and ex.element_id == "cu-explorer-t-explorer"
    assert "http" not in html.replace('xmlns="http', "")  # no request outside the page
    assert "6 frames" in repr(ex)


def test_output_is_deterministic() -> None:
    a = explore("same", [("a", [1, 2])], lambda a: draw(a, "z"), dpi=20)._repr_html_()
    b = explore("same", [("a", [1, 2])], lambda a: draw(a, "z"), dpi=20)._repr_html_()
    assert a == b


def test_labels_with_quotes_are_valid_json() -> None:
    ex = FrameExplorer("q", [("word", ["it's", 'say "hi"'])], {(0,): b"a", (1,): b"b"})
    html = ex._repr_html_()
    assert "data-labels=\"[[&quot;it&#x27;s&quot;, &quot;say \\&quot;hi\\&quot;&quot;]]\"" in html


@pytest.mark.parametrize("uid", ["Bad", "has space", "-lead", "", "a_b"])
def test_bad_uid(uid: str) -> None:
    with pytest.raises(ValueError, match="uid must be lowercase letters, digits and '-'"):
        FrameExplorer(uid, [("a", ["1"])], {(0,): b""})


def test_missing_frames_and_empty_controls() -> None:
    with pytest.raises(ValueError, match=r"one PNG per combination of control values \(4\), got 3"):
        FrameExplorer("m", [("a", ["1", "2"]), ("b", ["1", "2"])], {(0, 0): b"", (0, 1): b"", (1, 0): b""})
    with pytest.raises(ValueError, match="controls must name at least one control"):
        FrameExplorer("m", [], {})
    with pytest.raises(ValueError, match="control 'a' must have at least one value"):
        FrameExplorer("m", [("a", [])], {})


def test_draw_must_return_a_figure() -> None:
    with pytest.raises(TypeError, match="draw must return a matplotlib Figure, got NoneType"):
        explore("n", [("a", [1])], lambda a: None)


def test_figure_to_png_closes_the_figure() -> None:
    fig = draw(1, "x")
    data = figure_to_png(fig, dpi=20)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plt.fignum_exists(fig.number)
