"""Interactive figures: live ipywidgets controls in a running kernel, pre-rendered frames in the book.

One call, :func:`explore`, serves every chapter. It returns an :class:`Explorer` whose output
holds two views of the same figure:

- ``text/html`` (what the HTML book shows, and Jupyter when no kernel runs): each combination
  of the controls' *book values* rendered once to a PNG, behind ``<input type=range>`` sliders
  with a few lines of inline script. Self-contained: no request outside the page.
- the ipywidgets view (``application/vnd.jupyter.widget-view+json``), added only when the
  object is displayed in a running IPython kernel with ipywidgets: real controls (sliders, text
  boxes) that call ``draw`` again on every change, for any value in their range, so a learner
  can ask "what does it do with *my* input?". Jupyter prefers this view when it can render it.

In a ``make lab`` session (``COURSE_EXPLORERS=live``) the frames are skipped: the learner gets
the live view at once. Widget state is never stored: ``scripts/execute_notebooks.py`` drops the widget view from
stored outputs (the HTML frames are the stored output) and writes no widget state, so
notebooks stay small, nbval compares the ``text/html`` frames (PNG data masked by
``tests/nbval_sanitize.cfg``) and the book needs no widget manager.
"""

from __future__ import annotations

import base64
import contextvars
import html
import io
import itertools
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from PIL import Image

_SCRIPT = """<script>
(function () {
  var root = document.getElementById("%(id)s");
  if (!root || root.dataset.ready) { return; }
  root.dataset.ready = "1";
  var inputs = root.querySelectorAll("input[data-control]");
  var labels = JSON.parse(root.getAttribute("data-labels"));
  function show() {
    var key = [];
    inputs.forEach(function (inp, i) {
      key.push(inp.value);
      root.querySelector('output[data-control="' + i + '"]').textContent = labels[i][+inp.value];
    });
    key = key.join("-");
    root.querySelectorAll("img[data-key]").forEach(function (img) {
      img.style.display = img.getAttribute("data-key") === key ? "block" : "none";
    });
    root.setAttribute("data-shown", key);
  }
  inputs.forEach(function (inp) { inp.addEventListener("input", show); });
  show();
})();
</script>"""


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

#: Width in inches (x 100 = CSS px at the design size) of the phone frames: a phone's text
#: column (about 358 px at 390 px) shows them at about 0.9 of their size, text >= 9 CSS px.
PHONE_WIDTH = 4.0
_PHONE = contextvars.ContextVar("phone_layout", default=False)


def phone_layout() -> bool:
    """True while an explorer renders its phone frames: a draw function may stack its panels. Chapter 7."""
    return _PHONE.get()


#: The attribute under which a figure carries the function that draws its phone version
#: (read by :func:`course_utils.plots.retina_png`; set with :func:`attach_phone_version`).
PHONE_VERSION = "cu_phone"


def attach_phone_version(fig: Figure, draw: Callable[[], Figure]) -> Figure:
    """Let ``fig`` carry ``draw``, a function that draws its phone version; returns ``fig``. Chapter 1."""
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if not callable(draw):
        raise TypeError(f"draw must be a function that returns the phone version (a Figure), got {type(draw).__name__}")
    setattr(fig, PHONE_VERSION, draw)
    return fig


def smallest_text_px(fig: Figure) -> float:
    """The smallest font size of the figure's visible text, in CSS px at 100 px per inch."""
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    # duck-typed: anything with a font size and a text (Text, Annotation, a table's Cell)
    texts: list[Any] = fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text"))
    sizes = [t.get_fontsize() for t in texts if t.get_visible() and str(t.get_text()).strip()]
    return round(min(sizes) * 100 / 72, 1) if sizes else 0.0


def _check_uid(uid: object) -> str:
    if not isinstance(uid, str):
        raise TypeError(f"uid must be a str, got {type(uid).__name__}")
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", uid):
        raise ValueError(f"uid must be lowercase letters, digits and '-', got {uid!r}")
    return uid


def _check_controls(controls: object) -> None:
    if isinstance(controls, (str, dict)) or not isinstance(controls, Sequence):
        raise TypeError(f"controls must be a list of (name, values) pairs, got {type(controls).__name__}")
    if not controls:
        raise ValueError("controls must name at least one control, got none")
    for i, pair in enumerate(controls):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"controls must be a list of (name, values) pairs, got controls[{i}] = {pair!r:.40}")
        name, values = pair
        if not isinstance(name, str):
            raise TypeError(f"controls[{i}] must start with a str name, got {type(name).__name__}")
        if isinstance(values, str) or not isinstance(values, Sequence):
            raise TypeError(f"control {name!r} must have a list of values, got {type(values).__name__}")
        if len(values) == 0:
            raise ValueError(f"control {name!r} must have at least one value, got none")


def _check_figure_args(fig: object, dpi: object) -> None:
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if isinstance(dpi, bool) or not isinstance(dpi, int) or dpi <= 0:
        raise ValueError(f"dpi must be a positive int, got {dpi!r}")


def palette_png(png: bytes) -> bytes:
    """PNG bytes re-stored with a palette of at most 256 colours (8 bits per pixel). Chapter 1.

    Keeps heatmaps and line plots sharp at a fraction of the size of a full-colour PNG. The
    palette comes from Pillow's fast octree quantizer: on the book's frames it is twice as fast
    as median cut and the files are about 30 % smaller, with every pixel of a heatmap within 15
    of 255 levels of the full-colour picture (1.3 on average; ``tests/test_interactive.py``
    checks the bound). Every figure of the book (explorer frames and static figures) goes
    through it.
    """
    if not isinstance(png, (bytes, bytearray)):
        raise TypeError(f"png must be the bytes of a PNG image, got {type(png).__name__}")
    if not bytes(png).startswith(PNG_SIGNATURE):
        raise ValueError("png must be the bytes of a PNG image (they start with the PNG signature)")
    image = Image.open(io.BytesIO(bytes(png))).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(out, format="PNG", optimize=True)
    return out.getvalue()


def figure_to_png(fig: Figure, dpi: int = 200, tight: bool = True) -> bytes:
    """Render a matplotlib figure to PNG bytes (no timestamp) and close it. Used by every chapter.

    The picture is stored with a 256-colour palette (:func:`palette_png`). With ``tight=False``
    the picture is exactly the figure's size (width x dpi pixels), whatever text it holds.
    """
    _check_figure_args(fig, dpi)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight" if tight else None, metadata={"Software": None})
    plt.close(fig)
    return palette_png(buffer.getvalue())


def png_size(png: bytes) -> tuple[int, int]:
    """(width, height) in pixels of PNG bytes, read from the image header."""
    if not png.startswith(PNG_SIGNATURE):
        raise ValueError("png must be the bytes of a PNG image")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


class FrameExplorer:
    """Pre-rendered frames behind one slider per control; displays as self-contained HTML."""

    def __init__(
        self,
        uid: str,
        controls: Sequence[tuple[str, Sequence[str]]],
        frames: dict[tuple[int, ...], bytes],
        caption: str = "",
        phone_frames: dict[tuple[int, ...], bytes] | None = None,
        text_px: float = 0.0,
    ):
        _check_uid(uid)
        _check_controls(controls)
        if not isinstance(frames, dict) or not all(isinstance(v, bytes) for v in frames.values()):
            raise TypeError("frames must map each tuple of control indices to PNG bytes, got "
                            f"{type(frames).__name__}" + (" with non-bytes values" if isinstance(frames, dict) else ""))
        if not isinstance(caption, str):
            raise TypeError(f"caption must be a str, got {type(caption).__name__}")
        expected = set(itertools.product(*(range(len(values)) for _, values in controls)))
        if set(frames) != expected:
            missing = sorted(expected - set(frames))[:3]
            raise ValueError(
                f"frames must have one PNG per combination of control values ({len(expected)}), "
                f"got {len(frames)}; missing e.g. {missing}"
            )
        if phone_frames is not None and set(phone_frames) != set(frames):
            raise ValueError("phone_frames must have one PNG per frame, got "
                             f"{len(phone_frames)} for {len(frames)} frames")
        self.uid, self.controls, self.frames, self.caption = uid, list(controls), frames, caption
        self.phone_frames = phone_frames or {}
        self.text_px = text_px

    @property
    def element_id(self) -> str:
        """The id of the explorer's root element in the page (deterministic)."""
        return f"cu-explorer-{self.uid}"

    def _repr_html_(self) -> str:
        labels = [[str(v) for v in values] for _, values in self.controls]
        label_json = html.escape(json.dumps(labels))
        rows = []
        for i, (name, values) in enumerate(self.controls):
            rows.append(
                f'<label style="display:block;margin:4px 0">{html.escape(name)} '
                f'<input type="range" data-control="{i}" min="0" max="{len(values) - 1}" step="1" '
                f'value="0" aria-label="{html.escape(name)}" style="vertical-align:middle;width:14em"> '
                f'<output data-control="{i}">{html.escape(str(values[0]))}</output></label>'
            )
        images = []
        for key in sorted(self.frames):
            k = "-".join(str(i) for i in key)
            hidden = "" if all(i == 0 for i in key) else "display:none;"
            setting = ", ".join(f"{name} = {values[i]}" for (name, values), i in zip(self.controls, key, strict=True))
            alt = f"{self.caption or self.uid} ({setting})"
            variants = [("cu-frame-wide", self.frames[key]), ("cu-frame-phone", self.phone_frames[key])] \
                if self.phone_frames else [("", self.frames[key])]
            for css, png in variants:
                data = base64.b64encode(png).decode("ascii")
                # frames are rendered at twice the resolution they are shown at: sharp on 2x screens
                width = f' width="{png_size(png)[0] // 2}"' if png.startswith(PNG_SIGNATURE) else ""
                cls = f' class="{css}"' if css else ""
                images.append(
                    f'<img data-key="{k}"{cls} alt="{html.escape(alt)}"{width} '
                    f'style="{hidden}max-width:100%;height:auto" src="data:image/png;base64,{data}">'
                )
        caption = f'<p style="margin:4px 0"><em>{html.escape(self.caption)}</em></p>' if self.caption else ""
        return (
            f'<div class="cu-explorer" id="{self.element_id}" data-labels="{label_json}"'
            + (f' data-text-px="{self.text_px:g}"' if self.text_px else "") + ">"
            + caption + "".join(rows) + "".join(images)
            + _SCRIPT % {"id": self.element_id} + "</div>"
        )

    def __repr__(self) -> str:
        parts = ", ".join(f"{name} ({len(values)} values)" for name, values in self.controls)
        return f"Interactive figure {self.uid!r}: {len(self.frames)} frames; controls: {parts}"


@dataclass(frozen=True)
class Control:
    """One control of an explorer: the values pre-rendered for the book and the live widget's range.

    Build with :func:`choice`, :func:`int_slider`, :func:`float_slider` or :func:`text`.
    ``book`` holds the values rendered as frames (the book's slider steps through them); with an
    empty ``book`` the control exists only live and the frames use ``default``.
    """

    name: str
    kind: str  # "choice", "int", "float" or "text"
    book: tuple[Any, ...]
    default: Any
    low: float | None = None
    high: float | None = None
    step: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("choice", "int", "float", "text"):
            raise ValueError(f"kind must be one of 'choice', 'int', 'float' or 'text', got {self.kind!r:.40}")


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str, got {name!r}")
    return name


def choice(name: str, values: Sequence[object]) -> Control:
    """A control over a fixed list of values (the same ones live and in the book). Chapter 1."""
    values = tuple(values)
    if not values:
        raise ValueError(f"control {_check_name(name)!r} must have at least one value, got none")
    return Control(_check_name(name), "choice", values, values[0])


def _slider(kind: str, name: str, low: float, high: float, step: float, book: Sequence[float],
            default: float | None) -> Control:
    _check_name(name)
    number = int if kind == "int" else (int, float)
    for arg, value in (("low", low), ("high", high), ("step", step)):
        if isinstance(value, bool) or not isinstance(value, number):
            raise TypeError(f"{arg} of control {name!r} must be {'an int' if kind == 'int' else 'a number'}, "
                            f"got {value!r}")
    if not low < high or step <= 0:
        raise ValueError(f"control {name!r} needs low < high and step > 0, got low={low}, high={high}, step={step}")
    book = tuple(book)
    default = book[0] if default is None and book else default
    if default is None:
        raise ValueError(f"control {name!r} needs book values or a default, got neither")
    outside = [v for v in (*book, *([] if default in book else [default])) if not low <= v <= high]
    if outside:
        raise ValueError(f"values of control {name!r} must lie in [{low}, {high}], got {outside}")
    return Control(name, kind, book, default, low, high, step)


def int_slider(name: str, low: int, high: int, step: int = 1, book: Sequence[int] = (),
               default: int | None = None) -> Control:
    """An integer slider over [low, high] live; the ``book`` values as frames. Chapter 2."""
    return _slider("int", name, low, high, step, book, default)


def float_slider(name: str, low: float, high: float, step: float, book: Sequence[float] = (),
                 default: float | None = None) -> Control:
    """A float slider over [low, high] live; the ``book`` values as frames. Chapter 6."""
    return _slider("float", name, low, high, step, book, default)


def text(name: str, book: Sequence[str] = (), default: str | None = None) -> Control:
    """A text box live (any string); the ``book`` strings as frames. Chapter 7."""
    _check_name(name)
    book = tuple(book)
    default = book[0] if default is None and book else default
    if not isinstance(default, str) or not all(isinstance(v, str) for v in book):
        raise TypeError(f"control {name!r} needs str book values or a str default, got {book!r}, {default!r}")
    return Control(name, "text", book, default)


def _as_control(control: Control | tuple[str, Sequence[object]]) -> Control:
    if isinstance(control, Control):
        return control
    if isinstance(control, (tuple, list)) and len(control) == 2:
        return choice(*control)
    raise TypeError(f"controls must hold Control objects or (name, values) pairs, got {control!r}")


def live_kernel() -> bool:
    """True inside a running IPython kernel where ipywidgets can be imported."""
    try:
        import ipywidgets  # noqa: F401
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _render(draw: Callable[..., Figure], values: Sequence[object], dpi: int,
            phone: bool = False) -> tuple[bytes, float]:
    """One frame as PNG bytes and the size of its smallest text (CSS px at the design size).

    With ``phone`` the figure is drawn for a phone's text column: :func:`phone_layout` is True
    while ``draw`` runs (so it may stack its panels), and a figure wider than
    :data:`PHONE_WIDTH` inches is narrowed to it (and made a little taller).
    """
    token = _PHONE.set(phone)
    try:
        fig = draw(*values)
    finally:
        _PHONE.reset(token)
    if not isinstance(fig, Figure):
        raise TypeError(f"draw must return a matplotlib Figure, got {type(fig).__name__}")
    if phone:
        width, height = fig.get_size_inches()
        if width > PHONE_WIDTH:
            fig.set_size_inches(PHONE_WIDTH, height * min(1.5, (width / PHONE_WIDTH) ** 0.5))
    fig.tight_layout()
    text_px = smallest_text_px(fig)
    # the full figure, not a box cropped around its text: every frame has the same size
    # and the stored HTML (which gives the width) does not depend on the numbers drawn
    return figure_to_png(fig, dpi=dpi, tight=False), text_px


class Explorer(FrameExplorer):
    """Pre-rendered frames (text/html) plus, in a running kernel, live ipywidgets controls. Chapter 1."""

    def __init__(self, uid: str, controls: Sequence[Control], draw: Callable[..., Figure],
                 frames: dict[tuple[int, ...], bytes] | None, caption: str = "", dpi: int = 100,
                 phone_frames: dict[tuple[int, ...], bytes] | None = None, text_px: float = 0.0):
        self.specs = list(controls)
        for i, c in enumerate(self.specs):
            if not isinstance(c, Control):
                raise TypeError(f"controls[{i}] must be a Control (use choice, int_slider, float_slider or text), "
                                f"got {type(c).__name__}")
        book = [(c.name, [str(v) for v in c.book]) for c in self.specs if c.book]
        if not book:  # every control is live-only: the book shows the defaults as one frame
            book = [(self.specs[0].name, [str(self.specs[0].default)])]
        self.live_only = frames is None  # made in a live-only session (COURSE_EXPLORERS=live): no frames
        if frames is None:
            frames = {key: b"" for key in itertools.product(*(range(len(values)) for _, values in book))}
        super().__init__(uid, book, frames, caption, phone_frames, text_px)
        self.draw, self.dpi = draw, dpi
        self._widget: Any = None
        self._inputs: list[Any] = []

    def values(self) -> dict[str, object]:
        """The live controls' current values by name (the defaults before any widget exists)."""
        if not self._inputs:
            return {c.name: c.default for c in self.specs}
        return {c.name: w.value for c, w in zip(self.specs, self._inputs, strict=True)}

    def widget(self) -> Any:
        """The live ipywidgets view (built on first use): one input per control, the figure, a status line."""
        if self._widget is not None:
            return self._widget
        import ipywidgets as widgets

        style = {"description_width": "initial"}
        layout = widgets.Layout(width="28em")
        for c in self.specs:
            common = {"description": c.name, "style": style, "layout": layout, "continuous_update": False}
            if c.kind == "choice":
                options = [(str(v), v) for v in c.book]
                w = widgets.SelectionSlider(options=options, value=c.default, **common)
            elif c.kind == "int":
                w = widgets.IntSlider(value=c.default, min=c.low, max=c.high, step=c.step, **common)
            elif c.kind == "float":
                w = widgets.FloatSlider(value=c.default, min=c.low, max=c.high, step=c.step, **common)
            else:
                w = widgets.Text(value=c.default, placeholder=f"type a {c.name}, then Enter", **common)
            w.add_class("cu-live-control")
            self._inputs.append(w)
        self._image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self._image.add_class("cu-live-figure")
        self._status = widgets.HTML(value="")
        self._status.add_class("cu-live-status")
        head = widgets.HTML(value=f"<em>{html.escape(self.caption)}</em> (live)" if self.caption else "(live)")
        self._widget = widgets.VBox([head, *self._inputs, self._status, self._image])
        self._widget.add_class("cu-live")
        for w in self._inputs:
            w.observe(lambda _change: self.refresh(), names="value")
        self.refresh()
        return self._widget

    def refresh(self) -> None:
        """Redraw the live figure for the current control values; show an error in the status line."""
        values = list(self.values().values())
        try:
            png, _ = _render(self.draw, values, 2 * self.dpi)
        except Exception as error:  # shown to the learner instead of a traceback in the log
            plt.close("all")
            self._status.value = f'<span style="color:#b00020">{html.escape(type(error).__name__)}: ' \
                                 f"{html.escape(str(error))}</span>"
            return
        self._status.value = ""
        self._image.value = png
        self._image.width = str(png_size(png)[0] // 2)  # stored at twice the shown resolution

    def _repr_html_(self) -> str:
        if self.live_only:
            return (f'<div class="cu-explorer-live-only" id="{self.element_id}"><p><em>{html.escape(self.caption)}'
                    "</em></p><p>A live figure: run this cell in Jupyter to use its controls.</p></div>")
        return super()._repr_html_()

    def __repr__(self) -> str:
        if self.live_only:
            return f"Live figure {self.uid!r}: controls " + ", ".join(c.name for c in self.specs)
        return super().__repr__()

    def _repr_mimebundle_(self, include: object = None, exclude: object = None) -> dict[str, object]:
        bundle: dict[str, object] = {"text/plain": repr(self), "text/html": self._repr_html_()}
        if live_kernel():
            view = self.widget()._repr_mimebundle_()
            bundle["application/vnd.jupyter.widget-view+json"] = view["application/vnd.jupyter.widget-view+json"]
        return bundle


def explore(
    uid: str,
    controls: Sequence[Control | tuple[str, Sequence[object]]],
    draw: Callable[..., Figure],
    caption: str = "",
    dpi: int = 100,
    phone: bool = True,
) -> Explorer:
    """Render ``draw(*values)`` for every combination of book values; live controls in a kernel. Chapter 1.

    ``controls`` lists :class:`Control` objects (:func:`choice`, :func:`int_slider`,
    :func:`float_slider`, :func:`text`) or plain ``(name, values)`` pairs (a choice); ``draw``
    takes one value per control, in that order, and returns a matplotlib Figure. Keep the number
    of book combinations small: every frame is stored in the notebook. Each frame (and the live
    picture) is shown at ``dpi`` pixels per inch of the figure and stored at twice that. With
    ``phone`` (the default) every combination is also drawn for a phone's text column
    (:data:`PHONE_WIDTH` inches, see :func:`phone_layout`); the book shows those frames on
    narrow screens, so that their text stays at least 9 CSS px.

    With the environment variable ``COURSE_EXPLORERS=live`` (set by ``make lab``) and a running
    kernel, no frames are rendered: the output is the live view and a short note, which saves
    the learner the wait. The book's frames come from ``make execute``, which never sets it.
    """
    _check_uid(uid)
    if isinstance(controls, (str, dict)) or not isinstance(controls, Sequence):
        raise TypeError(f"controls must be a list of controls or (name, values) pairs, got {type(controls).__name__}")
    pairs = [c for c in controls if not isinstance(c, Control)]
    if pairs:
        _check_controls(pairs)
    if not callable(draw):
        raise TypeError(f"draw must be a function returning a matplotlib Figure, got {type(draw).__name__}")
    if not isinstance(caption, str):
        raise TypeError(f"caption must be a str, got {type(caption).__name__}")
    if isinstance(dpi, bool) or not isinstance(dpi, int) or dpi <= 0:
        raise ValueError(f"dpi must be a positive int, got {dpi!r}")
    specs = [_as_control(c) for c in controls]
    if not specs:
        raise ValueError("controls must name at least one control, got none")
    names = [c.name for c in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"control names must be unique, got {names}")
    if os.environ.get("COURSE_EXPLORERS") == "live" and live_kernel():
        return Explorer(uid, specs, draw, None, caption, dpi)  # `make lab`: the live view only, no frames
    book = [i for i, c in enumerate(specs) if c.book]
    frames: dict[tuple[int, ...], bytes] = {}
    phone_frames: dict[tuple[int, ...], bytes] = {}
    text_px = float("inf")
    for key in itertools.product(*(range(len(specs[i].book)) for i in book)):
        values = [c.default for c in specs]
        for i, j in zip(book, key, strict=True):
            values[i] = specs[i].book[j]
        frame_key = key if book else (0,)
        frames[frame_key], wide_px = _render(draw, values, 2 * dpi)
        text_px = min(text_px, wide_px)
        if phone:
            phone_frames[frame_key], phone_px = _render(draw, values, 2 * dpi, phone=True)
            text_px = min(text_px, phone_px)
    if all(phone_frames.get(k) == png for k, png in frames.items()):
        phone_frames = {}  # a figure already narrow enough for a phone: one set of frames
    return Explorer(uid, specs, draw, frames, caption, dpi, phone_frames or None,
                    0.0 if text_px == float("inf") else text_px)
