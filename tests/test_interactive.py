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



def test_figure_to_png_keeps_a_heatmap_close_to_full_colour() -> None:
    """The 256-colour palette stays within 15 of 255 levels of the full-colour picture, 2 on average."""
    import io

    import numpy as np
    from PIL import Image

    fig, axes = plt.subplots(1, 2, figsize=(4, 2))
    grid = np.random.default_rng(0).random((8, 8))
    axes[0].imshow(grid, cmap="viridis")
    axes[1].plot(grid[0], label="a line")
    axes[1].legend()
    axes[0].set_title("a heatmap and its labels")
    full = io.BytesIO()
    fig.savefig(full, format="png", dpi=100)
    want = np.asarray(Image.open(full).convert("RGB"), dtype=int)
    got = np.asarray(Image.open(io.BytesIO(figure_to_png(fig, dpi=100, tight=False))).convert("RGB"), dtype=int)
    assert got.shape == want.shape
    error = np.abs(got - want)
    assert error.max() <= 15 and error.mean() <= 2, (error.max(), error.mean())

# --- live controls --------------------------------------------------------------------------

from course_utils import interactive  # noqa: E402
from course_utils.interactive import Explorer, choice, float_slider, int_slider, text  # noqa: E402

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def draw_word(word: str, n: int) -> plt.Figure:
    if not word.isalpha():
        raise ValueError(f"word must be letters only, got {word!r}")
    fig, ax = plt.subplots(figsize=(1, 1))
    ax.set_title(word * n)
    return fig


def make_live() -> Explorer:
    return explore("live-t", [text("word", book=["ab", "cd"]), int_slider("n", 1, 9, default=2)], draw_word, dpi=20)


def test_live_only_controls_are_fixed_in_the_book() -> None:
    ex = make_live()
    assert isinstance(ex, FrameExplorer) and len(ex.frames) == 2
    html = ex._repr_html_()
    assert len(re.findall(r'<input type="range"', html)) == 1  # only "word" has book values
    assert ex.values() == {"word": "ab", "n": 2}
    single = explore("only-live", [int_slider("n", 1, 9, default=3)], lambda n: draw_word("x", n), dpi=20)
    assert list(single.frames) == [(0,)]


def test_live_widget_recomputes_and_reports_bad_input() -> None:
    ex = make_live()
    box = ex.widget()
    assert "cu-live" in box._dom_classes
    word, n = ex._inputs
    first = ex._image.value
    assert first[:8] == b"\x89PNG\r\n\x1a\n" and ex._status.value == ""
    word.value = "anything"  # not a book value: the live control takes any string
    assert ex._image.value != first and ex.values() == {"word": "anything", "n": 2}
    shown = ex._image.value
    n.value = 5
    assert ex._image.value != shown
    shown = ex._image.value
    word.value = "no way!"
    assert "ValueError: word must be letters only" in ex._status.value
    assert ex._image.value == shown  # the last good picture stays
    word.value = "ok"
    assert ex._status.value == "" and ex._image.value != shown


def test_widget_kinds_follow_the_controls() -> None:
    ex = explore("kinds", [choice("c", [1, 2]), float_slider("f", 0.1, 2.0, 0.1, book=[0.5]),
                           int_slider("i", 0, 4, book=[1]), text("t", default="x")],
                 lambda c, f, i, t: draw_word(t, c), dpi=20)
    names = [type(w).__name__ for w in (ex.widget(), ex._inputs)[1]]
    assert names == ["SelectionSlider", "FloatSlider", "IntSlider", "Text"]
    assert all(not w.continuous_update for w in ex._inputs)  # recompute on release / Enter only


def test_mimebundle_has_the_widget_view_only_in_a_live_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    ex = make_live()
    assert not interactive.live_kernel()  # pytest is no kernel
    bundle = ex._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"} and bundle["text/html"] == ex._repr_html_()
    monkeypatch.setattr(interactive, "live_kernel", lambda: True)
    bundle = ex._repr_mimebundle_()
    assert bundle[WIDGET_VIEW]["model_id"] == ex.widget().model_id
    assert bundle["text/html"] == ex._repr_html_()  # the book's frames are still there


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: int_slider("n", 1, 9, book=[0]), ValueError, r"must lie in \[1, 9\], got \[0\]"),
        (lambda: int_slider("n", 9, 1, default=3), ValueError, "needs low < high"),
        (lambda: int_slider("n", 1, 9), ValueError, "needs book values or a default"),
        (lambda: int_slider("n", 1.0, 9, default=3), TypeError, "low of control 'n' must be an int"),
        (lambda: float_slider("f", 0, 1, 0.0, default=0.5), ValueError, "step > 0"),
        (lambda: text("t", book=[1]), TypeError, "needs str book values"),
        (lambda: choice("c", []), ValueError, "at least one value"),
        (lambda: choice("", [1]), TypeError, "name must be a non-empty str"),
    ],
)
def test_bad_controls(make, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        make()


def test_explore_rejects_duplicate_and_foreign_controls() -> None:
    with pytest.raises(ValueError, match="control names must be unique"):
        explore("d", [("a", [1]), ("a", [2])], lambda a, b: draw(a, "x"))
    with pytest.raises(TypeError, match=r"controls must be a list of \(name, values\) pairs, got controls\[0\] = .a."):
        explore("d", ["a"], lambda a: draw(a, "x"))


def test_live_only_session_renders_no_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def counting(word: str, n: int) -> plt.Figure:
        calls.append(word)
        return draw_word(word, n)

    monkeypatch.setenv("COURSE_EXPLORERS", "live")
    ex = explore("lo", [text("word", book=["ab", "cd"]), int_slider("n", 1, 9, default=2)], counting, dpi=20)
    # no kernel: frames as usual, each drawn once wide and once for a phone
    assert len(ex.frames) == 2 and not ex.live_only and calls == ["ab", "ab", "cd", "cd"]
    monkeypatch.setattr(interactive, "live_kernel", lambda: True)
    calls.clear()
    ex = explore("lo", [text("word", book=["ab", "cd"]), int_slider("n", 1, 9, default=2)], counting, dpi=20)
    assert ex.live_only and calls == []
    bundle = ex._repr_mimebundle_()
    assert calls == ["ab"] and WIDGET_VIEW in bundle  # only the live view was drawn
    assert "run this cell in Jupyter" in bundle["text/html"] and "<img" not in bundle["text/html"]


def test_wide_figures_get_phone_frames_with_legible_text() -> None:
    """A figure wider than a phone's column gets a second set of frames drawn for a phone."""
    from course_utils.interactive import PHONE_WIDTH, phone_layout, png_size

    layouts: list[bool] = []

    def wide(a: int) -> plt.Figure:
        layouts.append(phone_layout())
        fig, axes = plt.subplots(1, 1 if phone_layout() else 2, figsize=(6.8, 2.0), squeeze=False)
        axes[0, 0].set_title(f"a = {a}", fontsize=9)
        return fig

    ex = explore("t-phone", [("a", [1, 2])], wide, dpi=20)
    assert sorted(layouts) == [False, False, True, True], "each frame is drawn once wide, once for a phone"
    html = ex._repr_html_()
    wide_imgs = re.findall(r'<img data-key="(\d)" class="cu-frame-wide"[^>]*width="(\d+)"', html)
    phone_imgs = re.findall(r'<img data-key="(\d)" class="cu-frame-phone"[^>]*width="(\d+)"', html)
    assert [k for k, _ in wide_imgs] == ["0", "1"] and [k for k, _ in phone_imgs] == ["0", "1"]
    assert int(phone_imgs[0][1]) == round(PHONE_WIDTH * 20) < int(wide_imgs[0][1]) == round(6.8 * 20)
    assert all(png_size(png)[0] == 2 * round(PHONE_WIDTH * 20) for png in ex.phone_frames.values())
    # the smallest text of the frames (9 pt) in CSS px at 100 px per inch, for the browser check
    assert 'data-text-px="12.5"' in html
    assert html.count("display:none;") == 2  # one wide and one phone frame hidden: frame 1


def test_narrow_figures_have_one_set_of_frames() -> None:
    ex = explore("t-narrow", [("a", [1, 2])], lambda a: draw(a, "z"), dpi=20)
    assert ex.phone_frames == {} and "cu-frame-phone" not in ex._repr_html_()
