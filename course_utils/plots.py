"""The one heatmap helper for attention matrices (and other token-by-token grids)."""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from torch import Tensor

from .interactive import palette_png, png_size


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
    if vmin is not None and vmax is not None and not vmin < vmax:
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
BOOK_RC: dict[str, object] = {
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


def retina_png(fig: Figure) -> tuple[bytes, dict[str, int]] | None:
    """A figure as a PNG at twice its resolution with a 256-colour palette, plus its display size.

    Used as the notebook's PNG formatter by :func:`book_style`: sharp on 2x screens at about
    the size of a plain full-colour PNG. Returns None for a figure with nothing drawn.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if not fig.axes and not fig.texts and not fig.images:
        return None
    buffer = io.BytesIO()
    fig.canvas.print_figure(buffer, format="png", dpi=2 * fig.dpi, bbox_inches="tight",
                            facecolor="white", metadata={"Software": None})
    png = palette_png(buffer.getvalue())
    width, height = png_size(png)
    return png, {"width": width // 2, "height": height // 2}


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
