"""Plate diagrams of bayesnb's numpyro models, drawn without Graphviz.

``numpyro.render_model`` builds a ``graphviz.Digraph`` of a model; turning it into a
picture needs Graphviz's ``dot`` program, which pip cannot install and the CI machine
does not have. This module draws the same diagram with matplotlib from what numpyro
itself reports about the model, :func:`numpyro.infer.inspect.get_model_relations`: the
sample sites, which sites each depends on, the distribution of each, which are observed
and which plates each sits in. Nothing is typed in by hand: a change to a model changes
its picture. The page also shows ``render_model``'s DOT source, which ``dot -Tsvg``
turns into numpyro's own rendering.

Layout (rows top to bottom): sites in no plate but the feature plate (the class
proportions, a shared covariance), per-class parameters (the ``class`` plate), and the
observed sites of every row (the ``data`` plate). Each block of features (one for a
single-family model, one per block of a MixedNB model) occupies its own columns, so
that its ``feature`` plate is a box around its columns only. :func:`layout` returns the
geometry; tests/ppl/test_plate_diagram.py checks that every node lies inside exactly the
boxes of its plates.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["relations", "layout", "draw", "plate_markdown", "dot_source", "family_model"]

_PAD = {"class": 0.42, "data": 0.55, "feature": 0.68}  # feature boxes outside the others
_NODE_RADIUS = 0.3


class Layout(NamedTuple):
    """Geometry of a plate diagram (data units; row 0 drawn on top)."""

    nodes: dict  # site -> (x, y)
    plates: dict  # plate name -> (x0, y0, x1, y1)
    members: dict  # plate name -> sorted list of sites
    edges: list  # (parent, child)
    observed: frozenset
    dists: dict  # site -> distribution name ("Deterministic" for a function of other sites)


def family_model(name):
    """A small numpyro model of bayesnb (``(model, kwargs)``) for the family ``name``.

    The data are a few made-up rows: the structure of the model does not depend on them.
    """
    import numpy as np

    from bayesnb import (
        BernoulliNB,
        CategoricalNB,
        GaussianBayesClassifier,
        GaussianNB,
        MixedNB,
        MultinomialNB,
        PoissonNB,
    )
    from bayesnb.ppl import models

    rng = np.random.default_rng(0)
    y = np.array(["a", "b"] * 4)
    counts = rng.poisson(2.0, (8, 3))
    real = rng.normal(size=(8, 3))
    make = {
        "multinomial": (MultinomialNB(), counts),
        "bernoulli": (BernoulliNB(), (counts > 1).astype(int)),
        "categorical": (CategoricalNB(), counts % 3),
        "poisson": (PoissonNB(), counts),
        "gaussian": (GaussianNB(), real),
        "gaussian_full": (GaussianBayesClassifier(covariance="full"), real),
        "gaussian_shared": (GaussianBayesClassifier(covariance="shared"), real),
        "mixed": (
            MixedNB([("gaussian", GaussianNB(), [0, 1]), ("categorical", CategoricalNB(), [2])]),
            np.column_stack([real[:, :2], counts[:, 2] % 3]),
        ),
    }
    estimator, X = make[name]
    estimator.fit(X, y)
    return models.model_from_estimator(estimator, X, y)


def relations(model, kwargs):
    """numpyro's account of the model (:func:`numpyro.infer.inspect.get_model_relations`)."""
    from numpyro.infer.inspect import get_model_relations

    from bayesnb.core._x64 import enable_x64

    with enable_x64():
        return get_model_relations(model, model_kwargs=kwargs)


def dot_source(model, kwargs):
    """The DOT source of ``numpyro.render_model`` (needs the ``graphviz`` Python package, not ``dot``)."""
    import numpyro

    from bayesnb.core._x64 import enable_x64

    with enable_x64():
        return numpyro.render_model(model, model_kwargs=kwargs, render_distributions=True).source


def _plate_kind(plate):
    return "feature" if plate.endswith("feature") else plate


def layout(rel):
    """Positions of the sites and boxes of the plates, from numpyro's relations.

    Parameters
    ----------
    rel : dict
        What :func:`relations` returns.

    Returns
    -------
    Layout
    """
    sites = list(rel["sample_sample"])
    plates_of = {s: set() for s in sites}
    for plate, members in rel["plate_sample"].items():
        name = plate.replace("__CLONE", "")  # numpyro's copy of a plate around a subset
        for s in members:
            plates_of[s].add(name)
    observed = frozenset(rel["observed"])

    def feature_plate(s):
        return next((p for p in plates_of[s] if _plate_kind(p) == "feature"), None)

    def block(s):
        fp = feature_plate(s)
        if fp is not None:
            return fp
        return s.split("__")[0] if "__" in s else ""

    rows = {}
    for s in sites:
        if "data" in plates_of[s]:
            rows[s] = 2
        elif "class" in plates_of[s]:
            rows[s] = 1
        else:
            rows[s] = 0
    # The label site (observed, parent of the features, no block of its own) goes left.
    label_sites = [s for s in sites if rows[s] == 2 and block(s) == "" and feature_plate(s) is None
                   and any(s in rel["sample_sample"][c] for c in sites if c != s and rows[c] == 2)]
    # Sites above the labels: in no plate, and parents of the labels only (the class
    # proportions). Other plate-free sites (a shared covariance) go above their block.
    children = {s: [c for c in sites if s in rel["sample_sample"][c]] for s in sites}
    global_sites = [
        s for s in sites if rows[s] == 0 and children[s] and all(c in label_sites for c in children[s])
    ]
    blocks = []
    for s in sites:
        if s in label_sites or s in global_sites:
            continue
        if block(s) not in blocks:
            blocks.append(block(s))
    nodes = {}
    for i, s in enumerate(label_sites):
        nodes[s] = (0.0 + i, 2.0)
    for i, s in enumerate(global_sites):
        nodes[s] = (0.0 + i, 0.0)
    col = max(len(label_sites), len(global_sites), 1) + 0.6
    for b in blocks:
        members = [s for s in sites if block(s) == b and s not in label_sites and s not in global_sites]
        per_class = [s for s in members if rows[s] == 1]
        data = [s for s in members if rows[s] == 2]
        top = [s for s in members if rows[s] == 0]
        width = max(len(per_class), len(data), len(top), 1)
        for row_sites, r in ((per_class, 1), (data, 2), (top, 0)):
            start = col + (width - len(row_sites)) / 2
            for i, s in enumerate(row_sites):
                nodes[s] = (start + i, float(r))
        col += width + 0.9  # a gap: the feature boxes of neighbouring blocks do not touch
    members = {}
    for s, ps in plates_of.items():
        for p in ps:
            members.setdefault(p, []).append(s)
    boxes = {}
    for p, ms in members.items():
        pad = _PAD[_plate_kind(p)]
        xs = [nodes[s][0] for s in ms]
        ys = [nodes[s][1] for s in ms]
        boxes[p] = (min(xs) - pad, min(ys) - pad, max(xs) + pad, max(ys) + pad)
    edges = [(parent, child) for child, parents in rel["sample_sample"].items() for parent in parents]
    return Layout(nodes, boxes, {p: sorted(ms) for p, ms in members.items()}, edges, observed, dict(rel["sample_dist"]))


def draw(lay, title=None):
    """A matplotlib figure of the layout: nodes (observed ones grey, deterministic dashed), arrows, plate boxes.

    Parameters
    ----------
    lay : Layout
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle, FancyArrowPatch, Rectangle

    xs = [x for x, _ in lay.nodes.values()] + [b[0] for b in lay.plates.values()] + [b[2] for b in lay.plates.values()]
    ys = [y for _, y in lay.nodes.values()] + [b[1] for b in lay.plates.values()] + [b[3] for b in lay.plates.values()]
    x0, x1, y0, y1 = min(xs) - 0.3, max(xs) + 0.3, min(ys) - 0.3, max(ys) + 0.7
    fig = Figure(figsize=(1.45 * (x1 - x0), 1.45 * (y1 - y0)))
    ax = fig.add_subplot()
    for name, (bx0, by0, bx1, by1) in sorted(lay.plates.items(), key=lambda kv: _PAD[_plate_kind(kv[0])]):
        ax.add_patch(Rectangle((bx0, by0), bx1 - bx0, by1 - by0, fill=False, lw=1.0, ec="0.25"))
        ax.text(bx1 - 0.06, by1 - 0.06, name, ha="right", va="top", fontsize=8, color="0.25")
    for s, (x, y) in lay.nodes.items():
        deterministic = lay.dists.get(s) == "Deterministic"
        ax.add_patch(
            Circle((x, y), _NODE_RADIUS, fc="0.75" if s in lay.observed else "white", ec="k", lw=1.0,
                   ls="--" if deterministic else "-", zorder=3)
        )
        ax.text(x, y, s.split("__")[-1], ha="center", va="center", fontsize=7, zorder=4)
        ax.text(x, y - _NODE_RADIUS - 0.06, lay.dists.get(s, ""), ha="center", va="top", fontsize=6, color="0.35", zorder=4)
    for parent, child in lay.edges:
        (px, py), (cx, cy) = lay.nodes[parent], lay.nodes[child]
        dx, dy = cx - px, cy - py
        # Long edges bend, so that they pass beside the nodes between their ends: along a
        # row by more than a node's radius (down in the data row, up elsewhere, so the arc
        # stays in its plates), across rows to the side.
        if abs(dy) < 1e-9 and abs(dx) > 1.5:
            down = py == 2.0
            rad = (0.9 / abs(dx)) * (1 if dx > 0 else -1) * (1 if down else -1)
        else:
            rad = 0.25 if abs(dy) > 1.5 else 0.0
        norm = max((dx * dx + dy * dy) ** 0.5, 1e-9)
        ux, uy = dx / norm * (_NODE_RADIUS + 0.02), dy / norm * (_NODE_RADIUS + 0.02)
        ax.add_patch(
            FancyArrowPatch(
                (px + ux, py + uy), (cx - ux, cy - uy), arrowstyle="-|>", mutation_scale=9, lw=0.9, color="k",
                shrinkA=0, shrinkB=0, connectionstyle=f"arc3,rad={rad:.3f}", zorder=2,
            )
        )
    ax.set_xlim(x0, x1)
    ax.set_ylim(y1, y0)  # row 0 (the class proportions) on top
    ax.set_aspect("equal")
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)
    return fig


def plate_markdown(name, title=None):
    """Markdown for the plates page: the drawing and, collapsed, numpyro's DOT source.

    Parameters
    ----------
    name : str
        A family of :func:`family_model`.
    title : str, optional

    Returns
    -------
    str
    """
    from bayesnb_docs import _fence, matplotlib_figure

    model, kwargs = family_model(name)
    lay = layout(relations(model, kwargs))
    caption = title or f"{model.__name__}, drawn from numpyro's model relations"
    parts = [matplotlib_figure(draw(lay), caption=caption)]
    body = "    " + _fence(dot_source(model, kwargs), "dot").replace("\n", "\n    ")
    parts.append(f'??? note "Graphviz source from numpyro.render_model ({model.__name__})"\n\n{body}')
    return "\n".join(parts)
