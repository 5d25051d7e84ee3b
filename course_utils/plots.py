"""The one heatmap helper for attention matrices (and other token-by-token grids)."""

from __future__ import annotations

import base64
import io
import warnings
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.typing import RcKeyType
from torch import Tensor

from .interactive import PHONE_VERSION, attach_phone_version, palette_png, png_size, smallest_text_px


def _as_array(weights: Tensor | np.ndarray, name: str) -> np.ndarray:
    if isinstance(weights, Tensor):
        weights = weights.detach().cpu().numpy()
    if not isinstance(weights, np.ndarray):
        raise TypeError(f"{name} must be a tensor or array, got {type(weights).__name__}")
    if weights.dtype == bool:
        weights = weights.astype(np.float32)  # a mask shows as 0/1
    if not np.issubdtype(weights.dtype, np.number):
        raise TypeError(f"{name} must hold numbers, got dtype {weights.dtype}")
    if weights.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {weights.shape}")
    return weights


def _check_labels(name: str, labels: object, size: int, what: str = "labels") -> None:
    """Raise unless ``labels`` is None or a list of ``size`` strings (or numbers)."""
    if labels is None:
        return
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise TypeError(f"{name} must be a list of str (one per {what[:-1]}), got {type(labels).__name__}")
    if len(labels) != size:
        raise ValueError(f"{name} must have {size} {what}, got {len(labels)}")


def _check_common(ax: object = None, title: object = None, vmin: object = 0.0, vmax: object = 1.0,
                  cmap: object = "viridis") -> None:
    """The keyword arguments the heatmap helpers share."""
    if ax is not None and not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None, got {type(title).__name__}")
    for name, value in (("vmin", vmin), ("vmax", vmax)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float, np.number))
                                  or not np.isfinite(value)):
            raise TypeError(f"{name} must be a number or None, got {type(value).__name__} {value!r}")
    numbers = (int, float, np.number)
    if isinstance(vmin, numbers) and isinstance(vmax, numbers) and not float(vmin) < float(vmax):
        raise ValueError(f"vmin must be smaller than vmax, got vmin={vmin} and vmax={vmax}")
    if not isinstance(cmap, str) or cmap not in plt.colormaps():
        raise ValueError(f"cmap must be a matplotlib colormap name such as 'viridis', got {cmap!r}")


def attention_heatmap(
    weights: Tensor | np.ndarray,
    keys: Sequence[str] | None = None,
    queries: Sequence[str] | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    annotate: bool = False,
    vmin: float | None = 0.0,
    vmax: float | None = 1.0,
    cmap: str = "viridis",
) -> Axes:
    """Draw one (T_q, T_k) matrix with key labels on x and query labels on y. Chapter 1.

    Set vmin/vmax to None for matrices that are not attention weights (scores, PE, masks).
    """
    w = _as_array(weights, "weights")
    if w.ndim != 2:
        raise ValueError(f"weights must be 2-D (T_q, T_k), got shape {w.shape}")
    _check_labels("keys", keys, w.shape[1])
    _check_labels("queries", queries, w.shape[0])
    _check_common(ax, title, vmin, vmax, cmap)
    if not isinstance(annotate, bool):
        raise TypeError(f"annotate must be True or False, got {type(annotate).__name__} {annotate!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.45 * w.shape[1] + 1.8, 0.45 * w.shape[0] + 1.2))
    image = ax.imshow(w, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    if keys is not None:
        ax.set_xticks(range(w.shape[1]), list(keys))
    if queries is not None:
        ax.set_yticks(range(w.shape[0]), list(queries))
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    if title:
        ax.set_title(title, fontsize=10)
    if annotate:
        top = np.nanmax(np.abs(w)) if w.size else 1.0
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                ax.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(w[i, j]) < 0.6 * top else "black")
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def attention_grid(
    weights: Tensor | np.ndarray,
    keys: Sequence[str] | None = None,
    queries: Sequence[str] | None = None,
    row_titles: Sequence[str] | None = None,
    col_titles: Sequence[str] | None = None,
    suptitle: str | None = None,
    cell_size: float | None = None,
) -> Figure:
    """Draw a (rows, cols, T_q, T_k) stack of attention matrices as a grid, e.g. layers x heads. Chapter 7.

    ``cell_size`` is the side of one panel in inches; by default the grid fills the book's
    6.8-inch text column (panels of at most 2.2 inches).
    """
    w = _as_array(weights, "weights")
    if w.ndim != 4:
        raise ValueError(f"weights must be 4-D (rows, cols, T_q, T_k), got shape {w.shape}")
    _check_labels("keys", keys, w.shape[3])
    _check_labels("queries", queries, w.shape[2])
    _check_labels("row_titles", row_titles, w.shape[0], "titles")
    _check_labels("col_titles", col_titles, w.shape[1], "titles")
    if suptitle is not None and not isinstance(suptitle, str):
        raise TypeError(f"suptitle must be a str or None, got {type(suptitle).__name__}")
    if cell_size is not None and (isinstance(cell_size, bool) or not isinstance(cell_size, (int, float))
                                  or not 0 < cell_size < float("inf")):
        raise ValueError(f"cell_size must be a positive number, got {cell_size!r}")
    rows, cols = w.shape[:2]
    if cell_size is None:
        cell_size = min(2.2, (6.8 - 0.5) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(cell_size * cols + 0.5, cell_size * rows + 0.6), squeeze=False)
    for r in range(rows):
        for c in range(cols):
            ax = axes[r, c]
            ax.imshow(w[r, c], cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
            ax.set_xticks(range(w.shape[3]), list(keys) if keys is not None else [], fontsize=8)
            ax.set_yticks(range(w.shape[2]), list(queries) if queries is not None else [], fontsize=8)
            if r == 0 and col_titles is not None:
                ax.set_title(col_titles[c], fontsize=9)
            if c == 0 and row_titles is not None:
                ax.set_ylabel(row_titles[r], fontsize=9)
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    fig.tight_layout()
    return fig


#: Matplotlib defaults for the book's text column (about 688 px wide at 100 dpi).
BOOK_RC: dict[RcKeyType, Any] = {
    "figure.dpi": 100,  # 1 inch = 100 CSS px on the page: a 6.8-inch figure fills the column
    "figure.figsize": (6.4, 3.4),
    "savefig.dpi": 200,  # explorer frames and files: sharp on 2x screens
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "figure.titlesize": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


#: What a phone shows: the text column at a 390 px wide screen is about 342 CSS px, and no
#: figure text may be smaller than 9 CSS px there (the browser check measures it).
PHONE_COLUMN_PX = 342
MIN_TEXT_PX = 9.0
#: Phone variants: drawn this many inches wide (x 100 = CSS px at the design size), with no
#: text under this many points: shown at about 0.85 of their size, text stays >= 9 CSS px.
PHONE_WIDTH_IN = 4.0
PHONE_MIN_PT = 9.0


def _shown_text_px(text_px: float, width_px: float, column_px: float = PHONE_COLUMN_PX) -> float:
    """The size (CSS px) of text ``text_px`` big in a figure ``width_px`` wide, shown in a column."""
    return text_px * min(1.0, column_px / width_px) if width_px > 0 else 0.0


def _render_retina(fig: Figure) -> tuple[bytes, int, int]:
    buffer = io.BytesIO()
    fig.canvas.print_figure(buffer, format="png", dpi=2 * fig.dpi, bbox_inches="tight",
                            facecolor="white", metadata={"Software": None})
    png = palette_png(buffer.getvalue())
    width, height = png_size(png)
    return png, width // 2, height // 2


def _panel_groups(fig: Figure) -> list[list[Axes]] | None:
    """The figure's axes grouped by panel when its panels stand in one row of 2-4, else None.

    A panel is one cell of the figure's top-level grid with whatever shares it (a colour bar).
    """
    groups: dict[int, list[Axes]] = {}
    grid = None
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        spec = ax.get_subplotspec()
        if spec is None:
            return None
        top = spec.get_topmost_subplotspec()
        if grid is None:
            grid = top.get_gridspec()
        if top.get_gridspec() is not grid:
            return None
        rows, _ = grid.get_geometry()
        col_span = top.colspan
        if rows != 1 or len(col_span) != 1:
            return None
        groups.setdefault(col_span.start, []).append(ax)
    if grid is None or not 2 <= len(groups) <= 4 or len(groups) != grid.get_geometry()[1]:
        return None
    return [groups[k] for k in sorted(groups)]


def _restack(fig: Figure, groups: list[list[Axes]], width: float, height: float) -> float:
    """Move a row of panels into a column ``width`` inches wide; return the new height (inches)."""
    n = len(groups)
    spans = []
    for group in groups:
        boxes = [ax.get_position() for ax in group]
        spans.append((min(b.x0 for b in boxes), max(b.x1 for b in boxes)))
    left_in = spans[0][0] * width  # the room for tick labels and y labels, kept in inches
    right_in = (1 - spans[-1][1]) * width
    band = height * 0.85  # each panel keeps most of its height
    new_height = band * n
    x_left = min(left_in / PHONE_WIDTH_IN, 0.3)
    x_right = 1 - min(max(right_in, 0.1) / PHONE_WIDTH_IN, 0.3)
    for i, (group, (a, b)) in enumerate(zip(groups, spans, strict=True)):
        for ax in group:
            box = ax.get_position()
            x0 = x_left + (box.x0 - a) / (b - a) * (x_right - x_left)
            x1 = x_left + (box.x1 - a) / (b - a) * (x_right - x_left)
            y0 = (n - 1 - i + box.y0) / n
            y1 = (n - 1 - i + box.y1) / n
            ax.set_position((x0, y0, x1 - x0, y1 - y0))
    return new_height


def _first_label_points(labels: Sequence[Text]) -> float | None:
    """The font size in points of the first tick label, None without labels."""
    return labels[0].get_fontproperties().get_size_in_points() if labels else None


def _phone_png(fig: Figure) -> tuple[bytes, dict[str, float]] | None:
    """The figure drawn for a phone's text column: PNG bytes and its size and smallest text.

    A figure may carry ``fig.cu_phone``, a function that draws its phone version (a Figure);
    otherwise the figure itself is redrawn :data:`PHONE_WIDTH_IN` inches wide, a row of 2-4
    panels stacked in a column, no text smaller than :data:`PHONE_MIN_PT` points, and put back
    as it was afterwards. None when the figure holds nothing to draw.
    """

    draw_phone = getattr(fig, PHONE_VERSION, None)
    if callable(draw_phone):
        phone = draw_phone()
        if not isinstance(phone, Figure):
            raise TypeError(f"fig.cu_phone must return a matplotlib Figure, got {type(phone).__name__}")
        png, width, height = _render_retina(phone)
        text_px = smallest_text_px(phone)
        plt.close(phone)
        return png, {"width": width, "height": height, "text_px": text_px}
    width, height = fig.get_size_inches()
    positions = [(ax, ax.get_position(original=True), ax.get_position()) for ax in fig.axes]
    texts = [t for t in fig.findobj(Text) if t.get_visible() and str(t.get_text()).strip()]
    fonts = [(t, t.get_fontproperties().get_size_in_points()) for t in texts]
    ticks = [(ax, _first_label_points(ax.xaxis.get_ticklabels()), _first_label_points(ax.yaxis.get_ticklabels()))
             for ax in fig.axes]
    engine = fig.get_layout_engine()
    try:
        for ax, x_size, y_size in ticks:
            if x_size is not None and x_size < PHONE_MIN_PT:
                ax.tick_params(axis="x", labelsize=PHONE_MIN_PT)
            if y_size is not None and y_size < PHONE_MIN_PT:
                ax.tick_params(axis="y", labelsize=PHONE_MIN_PT)
        for text, size in fonts:
            if size < PHONE_MIN_PT:
                text.set_fontsize(PHONE_MIN_PT)
        wraps = [(text, text.get_wrap()) for text in fig.texts + [ax.title for ax in fig.axes]]
        for text, _ in wraps:
            text.set_wrap(True)  # a long title wraps at the phone figure's edge
        groups = _panel_groups(fig) if width > PHONE_WIDTH_IN else None
        if groups is not None:
            fig.set_layout_engine("none")
            new_height = _restack(fig, groups, width, height)
            fig.set_size_inches(PHONE_WIDTH_IN, new_height)
        elif width > PHONE_WIDTH_IN:
            fig.set_size_inches(PHONE_WIDTH_IN, height * min(1.5, (width / PHONE_WIDTH_IN) ** 0.5))
            if engine is None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        fig.tight_layout()
                    except (ValueError, RuntimeError):
                        pass
        text_px = smallest_text_px(fig)
        png, shown_width, shown_height = _render_retina(fig)
    finally:
        for text, wrap in locals().get("wraps", []):
            text.set_wrap(wrap)
        fig.set_size_inches(width, height)
        if engine is not None or fig.get_layout_engine() is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fig.set_layout_engine(engine)
        for ax, original, active in positions:
            ax.set_position(original, which="original")
            ax.set_position(active, which="active")
        for text, size in fonts:
            text.set_fontsize(size)
        for ax, x_size, y_size in ticks:
            if x_size is not None:
                ax.tick_params(axis="x", labelsize=x_size)
            if y_size is not None:
                ax.tick_params(axis="y", labelsize=y_size)
    return png, {"width": shown_width, "height": shown_height, "text_px": text_px}


def retina_png(fig: Figure) -> tuple[bytes, dict[str, object]] | None:
    """A figure as a PNG at twice its resolution with a 256-colour palette, plus its display size.

    Used as the notebook's PNG formatter by :func:`book_style`: sharp on 2x screens at about
    the size of a plain full-colour PNG. Returns None for a figure with nothing drawn.

    The metadata also records ``text_px``, the figure's smallest text in CSS px at its design
    size, and, for a figure whose text a phone's column would shrink below 9 CSS px, ``phone``:
    a phone version (:func:`_phone_png`: base64 PNG, its design size and smallest text), which
    the book shows below 721 px. The browser check measures both.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if not fig.axes and not fig.texts and not fig.images:
        return None

    png, width, height = _render_retina(fig)
    text_px = smallest_text_px(fig)
    meta: dict[str, object] = {"width": width, "height": height, "text_px": text_px}
    if _shown_text_px(text_px, width) < MIN_TEXT_PX:
        phone = _phone_png(fig)
        if phone is not None:
            phone_bytes, info = phone
            meta["phone"] = {"png": base64.b64encode(phone_bytes).decode("ascii"), **info}
    return png, meta


def book_style() -> None:
    """Use the book's figure defaults: column-sized figures, readable text, sharp PNGs. Chapter 1.

    Call it once at the top of a notebook (after importing pyplot). In IPython it also makes
    figures display through :func:`retina_png`; outside IPython it only sets the defaults.
    """
    plt.rcParams.update(BOOK_RC)
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: nothing more to set
        return
    shell = get_ipython()
    if shell is not None:
        if "inline" in str(plt.rcParams["backend"]):
            # loading the inline backend registers its own PNG formatter; load it first so
            # that it does not replace ours at the first figure
            import matplotlib_inline.backend_inline  # noqa: F401
        formatter = shell.display_formatter.formatters["image/png"]
        formatter.for_type(Figure, retina_png)


def patch_attention_figure(
    images: Tensor | np.ndarray,
    weights: Tensor | np.ndarray,
    titles: Sequence[str] | None = None,
    phone: bool = False,
) -> Figure:
    """Each image above its patches' attention weights, printed in a heatmap with one colour scale. Chapter 12.

    ``images`` is (n, H, W) grey pixels, ``weights`` (n, side, side): how much one query (the class
    token) attends to each of the side x side patches. The weights are drawn as their own heatmap
    (digits stay readable, no overlay) with the value in every cell and one shared colour bar
    from 0 to 1. With ``phone`` the figure is laid out two images per row for a phone's column;
    the default figure carries that version as its ``cu_phone`` (see :func:`retina_png`).
    """
    pictures = _as_array(images, "images")
    w = _as_array(weights, "weights")
    if pictures.ndim != 3:
        raise ValueError(f"images must be 3-D (n, H, W), got shape {pictures.shape}")
    if w.ndim != 3 or w.shape[1] != w.shape[2] or w.shape[0] != pictures.shape[0]:
        raise ValueError(f"weights must be (n, side, side) with n = {pictures.shape[0]} images, got shape {w.shape}")
    _check_labels("titles", titles, pictures.shape[0], "titles")
    if not isinstance(phone, bool):
        raise TypeError(f"phone must be True or False, got {type(phone).__name__} {phone!r}")
    n, side = pictures.shape[0], w.shape[1]
    per_row = 2 if phone else n
    rows = -(-n // per_row)
    width = PHONE_WIDTH_IN if phone else min(6.8, 1.45 * n + 0.7)
    fig = plt.figure(figsize=(width, rows * (2 * 1.35 if phone else 2 * 1.3) + 0.2), layout="constrained")
    grid = fig.add_gridspec(2 * rows, per_row)
    image = None
    for k in range(n):
        r, c = divmod(k, per_row)
        top = fig.add_subplot(grid[2 * r, c])
        top.imshow(pictures[k], cmap="gray_r")
        top.set_xticks([])
        top.set_yticks([])
        top.spines[:].set_visible(False)
        if titles is not None:
            top.set_title(str(titles[k]), fontsize=10)
        bottom = fig.add_subplot(grid[2 * r + 1, c])
        image = bottom.imshow(w[k], cmap="viridis", vmin=0.0, vmax=1.0)
        for i in range(side):
            for j in range(side):
                bottom.text(j, i, f"{w[k, i, j]:.2f}", ha="center", va="center", fontsize=10,
                            color="white" if w[k, i, j] < 0.6 else "black")
        bottom.set_xticks([])
        bottom.set_yticks([])
        bottom.spines[:].set_visible(False)
    if image is None:
        raise ValueError("images must hold at least one image, got none")
    fig.colorbar(image, ax=fig.axes, shrink=0.6, label="attention weight")
    if not phone:
        attach_phone_version(fig, lambda: patch_attention_figure(pictures, w, titles, phone=True))
    return fig
