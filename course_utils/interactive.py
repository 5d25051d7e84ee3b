"""Interactive figures that work with no kernel: pre-rendered frames behind range sliders.

One explorer serves every chapter. Each combination of control values is rendered once to a
PNG; the output is a self-contained HTML block (``<input type=range>`` controls, the frames as
``<img>`` data URIs and a few lines of inline script), so the same output is a live control in
Jupyter and in the static HTML book, and makes no request outside the page.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import re
from collections.abc import Callable, Sequence

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


def figure_to_png(fig: Figure, dpi: int = 200, tight: bool = True) -> bytes:
    """Render a matplotlib figure to PNG bytes (no timestamp) and close it. Used by every chapter.

    The picture is stored with a palette of at most 256 colours (8 bits per pixel), which keeps
    heatmaps and line plots sharp at a fraction of the size of a full-colour PNG. With
    ``tight=False`` the picture is exactly the figure's size (width x dpi pixels), whatever
    text it holds.
    """
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight" if tight else None, metadata={"Software": None})
    plt.close(fig)
    image = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, format="PNG", optimize=True)
    return out.getvalue()


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
    ):
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", uid):
            raise ValueError(f"uid must be lowercase letters, digits and '-', got {uid!r}")
        if not controls:
            raise ValueError("controls must name at least one control, got none")
        for name, values in controls:
            if len(values) == 0:
                raise ValueError(f"control {name!r} must have at least one value, got none")
        expected = set(itertools.product(*(range(len(values)) for _, values in controls)))
        if set(frames) != expected:
            missing = sorted(expected - set(frames))[:3]
            raise ValueError(
                f"frames must have one PNG per combination of control values ({len(expected)}), "
                f"got {len(frames)}; missing e.g. {missing}"
            )
        self.uid, self.controls, self.frames, self.caption = uid, list(controls), frames, caption

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
            data = base64.b64encode(self.frames[key]).decode("ascii")
            k = "-".join(str(i) for i in key)
            hidden = "" if all(i == 0 for i in key) else "display:none;"
            # frames are rendered at twice the resolution they are shown at: sharp on 2x screens
            png = self.frames[key]
            width = f' width="{png_size(png)[0] // 2}"' if png.startswith(PNG_SIGNATURE) else ""
            setting = ", ".join(f"{name} = {values[i]}" for (name, values), i in zip(self.controls, key, strict=True))
            alt = f"{self.caption or self.uid} ({setting})"
            images.append(
                f'<img data-key="{k}" alt="{html.escape(alt)}"{width} '
                f'style="{hidden}max-width:100%;height:auto" src="data:image/png;base64,{data}">'
            )
        caption = f'<p style="margin:4px 0"><em>{html.escape(self.caption)}</em></p>' if self.caption else ""
        return (
            f'<div class="cu-explorer" id="{self.element_id}" data-labels="{label_json}">'
            + caption + "".join(rows) + "".join(images)
            + _SCRIPT % {"id": self.element_id} + "</div>"
        )

    def __repr__(self) -> str:
        parts = ", ".join(f"{name} ({len(values)} values)" for name, values in self.controls)
        return f"Interactive figure {self.uid!r}: {len(self.frames)} frames; controls: {parts}"


def explore(
    uid: str,
    controls: Sequence[tuple[str, Sequence[object]]],
    draw: Callable[..., Figure],
    caption: str = "",
    dpi: int = 100,
) -> FrameExplorer:
    """Render ``draw(*values)`` for every combination of control values into a FrameExplorer. Chapter 1.

    ``controls`` is a list of (name, values); ``draw`` takes one value per control and returns
    a matplotlib Figure. Keep the number of combinations small: every frame is stored. Each
    frame is shown at ``dpi`` pixels per inch of the figure and stored at twice that.
    """
    frames: dict[tuple[int, ...], bytes] = {}
    for key in itertools.product(*(range(len(values)) for _, values in controls)):
        args = [controls[i][1][j] for i, j in enumerate(key)]
        fig = draw(*args)
        if not isinstance(fig, Figure):
            raise TypeError(f"draw must return a matplotlib Figure, got {type(fig).__name__}")
        fig.tight_layout()
        # the full figure, not a box cropped around its text: every frame has the same size
        # and the stored HTML (which gives the width) does not depend on the numbers drawn
        frames[key] = figure_to_png(fig, dpi=2 * dpi, tight=False)
    return FrameExplorer(uid, [(name, [str(v) for v in values]) for name, values in controls], frames, caption)
