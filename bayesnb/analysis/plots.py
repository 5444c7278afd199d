"""Plots for the research workflows (matplotlib, imported when a function is called).

Every function draws on the ``ax`` it is given, or on a new figure made without pyplot
(:class:`matplotlib.figure.Figure`, no GUI backend: safe on a headless machine, and
nothing is left open in pyplot's figure manager), and returns the Axes. Save it with
``ax.figure.savefig(path)``.

* :func:`reliability_diagram`: top-label calibration of each estimate;
* :func:`top_features`: the features that most raise the log-odds of a class, with
  posterior credible intervals;
* :func:`uncertainty_histogram`: total, aleatoric and epistemic uncertainty of rows;
* :func:`decision_boundary`: the class regions and boundaries of a 2-feature model
  (linear for ``GaussianBayesClassifier(covariance="shared")``, quadratic for "full");
* :func:`learning_curve`: a metric of each estimate against the training-set size,
  from :func:`bayesnb.compare` with ``train_sizes``.

arviz plots of posterior draws come through the arviz export (``to_inference_data``).
"""

from __future__ import annotations

import numpy as np

from bayesnb.core._validation import ESTIMATES

__all__ = [
    "decision_boundary",
    "learning_curve",
    "merge_bins",
    "reliability_diagram",
    "top_features",
    "uncertainty_histogram",
]

# One colour per estimate, the same in every plot.
_COLOURS = {"mle": "#d62728", "map": "#ff7f0e", "mean": "#1f77b4", "predictive": "#2ca02c"}
# Line styles too: with alpha = 1 the MAP equals the MLE and its line lies on top.
_STYLES = {"mle": "--", "map": ":", "mean": "-.", "predictive": "-"}


def _new_axes(ax, figsize):
    if ax is not None:
        if not hasattr(ax, "figure") or not hasattr(ax, "plot"):
            raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
        return ax
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    return fig.add_subplot()


def reliability_diagram(estimator, X, y, *, estimates=ESTIMATES, n_bins=15, min_count=10, ax=None):
    """Reliability diagram: accuracy against confidence, one line per estimate.

    The confidence of a row is its largest class probability; rows are grouped in
    ``n_bins`` equal-width confidence bins. Every row is drawn: no bin is dropped. A bin
    of fewer than ``min_count`` rows is merged with its sparse neighbours (adjacent bins
    also under ``min_count``, in order of confidence; :func:`merge_bins`) so that the line
    does not zig-zag through bins of one to three rows; a bin of ``min_count`` rows or
    more is never merged, so a few sparse bins never vanish into a full one. A sparse
    run that stays under ``min_count`` rows is drawn on its own with a hollow marker.
    Each point is drawn at (mean confidence, accuracy) with its number of rows written
    beside it and a marker area proportional to it. A calibrated model lies on the
    diagonal.

    Rows impossible under every class for an estimate (e.g. a word never seen in training
    under the MLE) have no probabilities from that estimate; they are drawn as one cross
    at (confidence 1, accuracy 0) with their count, which is how the ECE scores them
    (:data:`bayesnb.analysis.comparison.UNSCORABLE_ROW_COST`: each costs 1/n, as the log
    loss counts them infinite), not at ``predict_proba``'s fallback to the class
    proportions. The legend gives each estimate's expected calibration error over the
    ``n_bins`` bins (:func:`bayesnb.analysis.comparison.reliability_bins`, the same number as
    :func:`bayesnb.compare`). Estimates whose probabilities are identical (the MAP and the
    MLE under a flat prior, the posterior mean and the predictive of a Bernoulli or
    categorical model) are drawn once, labelled together. An estimate undefined for this
    posterior (the MAP with a concentration below 1) is listed as not available.

    Parameters
    ----------
    estimator : fitted bayesnb estimator
    X : rows to score
    y : their labels
    estimates : sequence of {"mle", "map", "mean", "predictive"}
    n_bins : int
    min_count : int
        Rows a merged group of sparse bins should reach (1: the bins as they are).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB
    >>> from bayesnb.analysis.plots import reliability_diagram
    >>> X = np.array([[3, 0, 1], [4, 1, 0], [0, 3, 1], [1, 4, 1], [2, 1, 0], [0, 2, 2]])
    >>> y = ["spam", "spam", "ham", "ham", "spam", "ham"]
    >>> ax = reliability_diagram(MultinomialNB().fit(X, y), X, y, n_bins=5, min_count=2)
    >>> [t.get_text().split(" (")[0] for t in ax.get_legend().get_texts()]
    ['calibrated', 'mle = map', 'mean', 'predictive']
    >>> ax.figure.savefig("reliability.png")  # doctest: +SKIP
    """
    from bayesnb.analysis.comparison import _check_estimates, _predict_all, reliability_bins

    if isinstance(min_count, bool) or not isinstance(min_count, (int, np.integer)) or min_count < 1:
        raise ValueError(f"min_count must be a positive integer, got {min_count!r}")
    estimates = _check_estimates(estimates, None)
    predictions = _predict_all(estimator, X, estimates)
    # Estimates with the very same probabilities share one series (else one hides the other).
    series = []
    for estimate, pred in predictions.items():
        for group in series:
            if (
                pred.proba is not None
                and group[1] is not None
                and np.array_equal(pred.proba, group[1])
                and np.array_equal(pred.dead, group[2])
            ):
                group[0].append(estimate)
                break
        else:
            series.append(([estimate], pred.proba, pred.dead))
    ax = _new_axes(ax, (5.5, 6))
    ax.plot([0, 1], [0, 1], ls="--", color="0.6", lw=1, label="calibrated")
    low = 1.0 / len(estimator.classes_)
    x_lo, x_hi = low - 0.02, 1.01
    labels = []  # (x, y, text, colour, series number)
    for k, (names, proba, dead) in enumerate(series):
        estimate, label = names[0], " = ".join(names)
        colour = _COLOURS[estimate]
        if proba is None:
            ax.plot([], [], color=colour, label=f"{label}: n/a")
            continue
        count, conf, acc, ece = reliability_bins(y, proba, estimator.classes_, n_bins=n_bins, impossible=dead)
        n_dead = int(dead.sum())
        extra = f"; {n_dead} impossible rows at (1, 0)" if n_dead else ""
        if count.sum() > 0:
            count, conf, acc = merge_bins(count, conf, acc, min_count)
        else:
            count = conf = acc = np.zeros(0)
        ax.plot(conf, acc, _STYLES[estimate], color=colour, lw=1.2, alpha=0.85, label=f"{label} (ECE {ece:.3f}{extra})")
        size = 12 + 200 * count / len(dead)
        thin = count < min_count
        ax.scatter(conf[~thin], acc[~thin], s=size[~thin], color=colour, alpha=0.8)
        ax.scatter(conf[thin], acc[thin], s=size[thin], facecolors="none", edgecolors=colour, alpha=0.8)
        labels += [(cx, ay, f"{int(n)}", colour, k) for n, cx, ay in zip(count, conf, acc)]
        if n_dead:
            ax.scatter([1.0], [0.0], marker="x", s=12 + 200 * n_dead / len(dead), color=colour, alpha=0.9)
            labels.append((1.0, 0.0, f"{n_dead} impossible", colour, k))
    for cx, ay, text, colour, k in labels:
        # Beside the point, on the side with room: left of points in the right half (else the
        # label runs off the figure), above points near the bottom; series offset vertically so
        # that the counts of points drawn at the same place do not overlap.
        right = cx > (x_lo + x_hi) / 2
        up = ay < 0.15
        dy = (4 + 8 * k) if up else -(9 + 8 * k)
        ax.annotate(
            text,
            (cx, ay),
            xytext=(-4 if right else 4, dy),
            textcoords="offset points",
            ha="right" if right else "left",
            fontsize=6,
            color=colour,
        )
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("confidence (largest class probability); rows per point written beside it")
    ax.set_ylabel("accuracy")
    ax.set_title(
        f"Reliability: {type(estimator).__name__}\n{n_bins} bins; sparse bins merged to >= {min_count} rows, "
        "hollow where fewer",
        fontsize="small",
    )
    # Below the axes: inside, the legend would hide the points of some corner.
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize="small", frameon=False)
    return ax


def merge_bins(count, confidence, accuracy, min_count):
    """Merge adjacent sparse confidence bins, keeping every row.

    Empty bins are skipped. A bin of ``min_count`` rows or more is a group of its own,
    never merged. Runs of adjacent bins under ``min_count`` rows (in order of confidence)
    are cut into groups of at least ``min_count`` rows; a remainder short of
    ``min_count`` joins the group before it in the same run, or, when the whole run holds
    fewer than ``min_count`` rows, stays a group of its own (the caller marks it as
    sparse). The counts of the groups add up to the counts of the bins.

    Parameters
    ----------
    count, confidence, accuracy : ndarrays of shape (n_bins,)
        From :func:`bayesnb.analysis.comparison.reliability_bins` (NaN for an empty bin).
    min_count : int

    Returns
    -------
    count, confidence, accuracy : ndarrays of shape (n_groups,)
        Rows, mean confidence and accuracy of each group (row-weighted means of its bins).

    Examples
    --------
    >>> import numpy as np
    >>> count = np.array([3.0, 0.0, 4.0, 12.0, 2.0, 1.0, 40.0])
    >>> conf = np.array([0.55, np.nan, 0.6, 0.65, 0.7, 0.75, 0.95])
    >>> acc = np.array([1 / 3, np.nan, 0.5, 0.75, 1.0, 0.0, 0.9])
    >>> n, c, a = merge_bins(count, conf, acc, min_count=5)
    >>> n.tolist(), [round(float(v), 4) for v in a]  # the run of 2 + 1 rows stays apart
    ([7.0, 12.0, 3.0, 40.0], [0.4286, 0.75, 0.6667, 0.9])
    """
    count = np.asarray(count, dtype=np.float64)
    used = count > 0
    n = count[used]
    conf_sum, acc_sum = n * np.asarray(confidence)[used], n * np.asarray(accuracy)[used]
    groups, run = [], []  # run: the groups cut from the current run of sparse bins

    def close(current):
        if current and run and n[current].sum() < min_count:
            run[-1] = run[-1] + current
        elif current:
            run.append(current)
        groups.extend(run)
        run.clear()

    current = []
    for i in range(n.size):
        if n[i] >= min_count:
            close(current)
            current = []
            groups.append([i])
            continue
        current.append(i)
        if n[current].sum() >= min_count:
            run.append(current)
            current = []
    close(current)
    total = np.array([n[g].sum() for g in groups])
    return (
        total,
        np.array([conf_sum[g].sum() for g in groups]) / total,
        np.array([acc_sum[g].sum() for g in groups]) / total,
    )


def top_features(
    estimator,
    target,
    n=15,
    *,
    feature_names=None,
    versus=None,
    level=0.9,
    n_draws=1000,
    random_state=0,
    ax=None,
):
    """The features that most raise the log-odds of class ``target``, with credible intervals.

    For each feature (for categorical features, each feature value) the posterior median
    of its contribution to the log-odds of ``target`` (against ``versus``, or the other
    classes; see :func:`bayesnb.analysis.uncertainty.feature_log_odds_draws`) is drawn as a point,
    its equal-tailed credible interval at ``level`` as a bar, both from exact posterior
    draws: e.g. the words whose occurrence most raises p(spam), and how sure the
    posterior is of it.

    Parameters
    ----------
    estimator : fitted MultinomialNB, BernoulliNB, CategoricalNB, PoissonNB, ExponentialNB or MixedNB
    target : class label
    n : int
    feature_names : sequence of str, optional
        Defaults to ``estimator.feature_names_in_`` when present, else "x0", "x1", ...
    versus : class label, optional
    level : float in (0, 1)
    n_draws : int
    random_state : int, RandomState, Generator, jax key or None
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB
    >>> from bayesnb.analysis.plots import top_features
    >>> X = np.array([[3, 0, 1], [4, 1, 0], [0, 3, 1], [1, 4, 1]])
    >>> clf = MultinomialNB().fit(X, ["spam", "spam", "ham", "ham"])
    >>> ax = top_features(clf, "spam", 2, feature_names=["free", "lunch", "today"], n_draws=200)
    >>> [t.get_text() for t in ax.get_yticklabels()]  # from the top of the plot down
    ['free', 'today']
    """
    from bayesnb.analysis.uncertainty import top_features as _top

    top = _top(
        estimator, target, n, level=level, versus=versus, n_draws=n_draws, random_state=random_state,
        feature_names=feature_names,
    )
    # The names (with category labels where the estimator knows them: MixedNB).
    labels = [str(v) for v in top.name]
    ax = _new_axes(ax, (6.5, 0.9 + 0.3 * len(labels)))
    y = np.arange(len(labels))[::-1]
    ax.errorbar(
        top.median,
        y,
        xerr=[top.median - top.lower, top.upper - top.median],
        fmt="o",
        color="#1f77b4",
        ecolor="0.4",
        capsize=2,
        ms=4,
    )
    ax.axvline(0.0, color="0.6", lw=1, ls="--")
    ax.set_yticks(y, labels)
    ax.set_xlabel(f"log-odds contribution to {target!s} ({top.unit}), nats")
    ax.set_title(f"Top {len(labels)} features for {target!s}: median and {level:.0%} credible interval")
    return ax


def uncertainty_histogram(
    estimator=None,
    X=None,
    *,
    decomposition=None,
    n_draws=500,
    random_state=0,
    bins=30,
    components=("total", "aleatoric", "epistemic"),
    ax=None,
):
    """Histogram of the predictive uncertainty of rows, split into its parts.

    Total (predictive entropy), aleatoric (expected entropy) and epistemic (mutual
    information) uncertainty per row, in nats, from posterior draws
    (:func:`bayesnb.analysis.uncertainty.decompose_uncertainty`), or from a ``decomposition``
    computed before.

    Parameters
    ----------
    estimator : fitted bayesnb estimator, optional
    X : rows, optional
    decomposition : UncertaintyDecomposition, optional
        Instead of ``estimator`` and ``X``.
    n_draws : int
    random_state : int, RandomState, Generator, jax key or None
    bins : int
    components : sequence of {"total", "aleatoric", "epistemic"}
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import BernoulliNB
    >>> from bayesnb.analysis.plots import uncertainty_histogram
    >>> X = np.array([[1, 0], [1, 1], [0, 1], [0, 1], [1, 0], [0, 0]])
    >>> clf = BernoulliNB().fit(X, [0, 0, 1, 1, 0, 1])
    >>> ax = uncertainty_histogram(clf, X, n_draws=100, bins=5)
    >>> ax.get_xlabel()
    'uncertainty of the prediction (nats)'
    """
    from bayesnb.analysis.uncertainty import decompose_uncertainty

    if decomposition is None:
        if estimator is None or X is None:
            raise ValueError("pass an estimator and X, or a decomposition")
        decomposition = decompose_uncertainty(estimator, X, n_draws=n_draws, random_state=random_state)
    known = ("total", "aleatoric", "epistemic")
    for c in components:
        if c not in known:
            raise ValueError(f"unknown component {c!r}; expected some of {known}")
    ax = _new_axes(ax, (6, 4))
    values = {c: np.asarray(getattr(decomposition, c)) for c in components}
    top = max(float(v.max()) for v in values.values()) if values else 1.0
    edges = np.linspace(0.0, max(top, 1e-12), bins + 1)
    colours = {"total": "0.3", "aleatoric": "#1f77b4", "epistemic": "#d62728"}
    for c, v in values.items():
        ax.hist(v, bins=edges, histtype="step", lw=1.8, color=colours[c], label=f"{c} (mean {v.mean():.3f})")
    ax.set_yscale("log")
    ax.set_xlabel("uncertainty of the prediction (nats)")
    ax.set_ylabel("rows")
    ax.set_title("Predictive uncertainty: total = aleatoric + epistemic")
    ax.legend(fontsize="small")
    return ax


def decision_boundary(estimator, X, y=None, *, resolution=300, margin=0.1, exact=True, ax=None):
    """Class regions and decision boundaries of a fitted 2-feature classifier.

    The plane around the data is coloured by the predicted class (the current
    ``estimate``), shaded by its probability, and each boundary between two classes is
    drawn where their predicted probabilities tie. For
    :class:`~bayesnb.GaussianBayesClassifier` with a plug-in estimate and ``exact=True``
    the analytic boundaries are drawn on top (dotted): the line
    :math:`(w_1 - w_0)^\\top x + (w_{01} - w_{00}) = 0` of ``coef_`` for a shared
    covariance (LDA), the conic of ``quadratic_`` for per-class covariances (QDA).

    Parameters
    ----------
    estimator : fitted classifier with two features
    X : array-like of shape (n_samples, 2)
        Points to show (and to set the extent).
    y : array-like of shape (n_samples,), optional
        Their labels (colours the points).
    resolution : int
        Grid points per axis.
    margin : float
        Extent beyond the data, as a fraction of its range.
    exact : bool
        Overlay the analytic boundary where there is one.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import GaussianBayesClassifier
    >>> from bayesnb.analysis.plots import decision_boundary
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 1, (20, 2)), rng.normal(3, 1, (20, 2))])
    >>> y = np.repeat(["a", "b"], 20)
    >>> clf = GaussianBayesClassifier(covariance="shared", estimate="mean").fit(X, y)
    >>> ax = decision_boundary(clf, X, y, resolution=50)
    >>> ax.get_title()
    "GaussianBayesClassifier(covariance='shared')\\nestimate='mean': linear boundary"
    """
    from matplotlib.colors import to_rgba

    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != 2 or getattr(estimator, "n_features_in_", 2) != 2:
        raise ValueError("decision_boundary needs a classifier fitted on exactly two features and X of shape (n, 2)")
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) or resolution < 10:
        raise ValueError(f"resolution must be an integer >= 10, got {resolution!r}")
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = margin * np.where(hi > lo, hi - lo, 1.0)
    gx = np.linspace(lo[0] - pad[0], hi[0] + pad[0], resolution)
    gy = np.linspace(lo[1] - pad[1], hi[1] + pad[1], resolution)
    xx, yy = np.meshgrid(gx, gy)
    grid = np.column_stack([xx.ravel(), yy.ravel()])
    log_p = estimator.predict_log_proba(grid)
    classes = estimator.classes_
    n_classes = classes.size
    winner = np.argmax(log_p, axis=1)
    confidence = np.exp(log_p.max(axis=1))
    palette = [to_rgba(f"C{k % 10}") for k in range(n_classes)]
    image = np.array([palette[k] for k in winner]).reshape(resolution, resolution, 4)
    image[..., 3] = 0.15 + 0.35 * (confidence.reshape(resolution, resolution) - 1 / n_classes) / (1 - 1 / n_classes)
    ax = _new_axes(ax, (6, 5))
    ax.imshow(image, origin="lower", extent=(gx[0], gx[-1], gy[0], gy[-1]), aspect="auto", interpolation="nearest")
    # Boundary of class c: where its log-probability ties with the best other class.
    for c in range(n_classes):
        others = np.delete(log_p, c, axis=1).max(axis=1)
        margin_c = (log_p[:, c] - others).reshape(resolution, resolution)
        if margin_c.min() < 0 < margin_c.max():
            ax.contour(xx, yy, margin_c, levels=[0.0], colors="k", linewidths=1.5)
    if exact:
        _exact_boundary(estimator, xx, yy, ax)
    if y is not None:
        y = np.asarray(y)
        for k, label in enumerate(classes):
            pts = X[y == label]
            ax.scatter(pts[:, 0], pts[:, 1], s=14, color=palette[k], edgecolor="k", lw=0.4, label=str(label))
        ax.legend(fontsize="small", loc="best")
    ax.set_xlim(gx[0], gx[-1])
    ax.set_ylim(gy[0], gy[-1])
    names = getattr(estimator, "feature_names_in_", None)
    ax.set_xlabel(str(names[0]) if names is not None else "x0")
    ax.set_ylabel(str(names[1]) if names is not None else "x1")
    ax.set_title(_boundary_title(estimator))
    return ax


def _boundary_title(estimator):
    covariance = getattr(estimator, "covariance", None)
    name = type(estimator).__name__
    estimate = getattr(estimator, "estimate", None)
    shape = {"shared": "linear", "full": "quadratic", "diag": "quadratic, axis-aligned"}.get(covariance)
    head = f"{name}(covariance={covariance!r})" if covariance else name
    tail = f", estimate={estimate!r}" if estimate else ""
    if shape and estimate != "predictive":
        return f"{head}\n{tail.lstrip(', ')}: {shape} boundary"
    if shape:
        return f"{head}\n{tail.lstrip(', ')}: Student-t predictive"
    return f"{head}{tail}"


def _exact_boundary(estimator, xx, yy, ax):
    """Analytic boundaries of a GaussianBayesClassifier plug-in estimate (dotted)."""
    # Estimators whose plug-in class scores are quadratic forms publish them as quadratic_.
    if not hasattr(type(estimator), "quadratic_") or estimator.estimate == "predictive":
        return
    A, b, c = estimator.quadratic_
    pts = np.stack([xx, yy], axis=-1)
    n_classes = b.shape[0]
    # log p(x, y=k) = x'A_k x + b_k'x + c_k; pairwise ties of the winning classes.
    scores = np.einsum("...i,kij,...j->...k", pts, A, pts) + pts @ b.T + c
    # A tie of classes k and m is a boundary only where they are the two leading classes.
    second = np.sort(scores, axis=-1)[..., -2] if n_classes > 2 else None
    for k in range(n_classes):
        for m in range(k + 1, n_classes):
            diff = scores[..., k] - scores[..., m]
            if second is not None:
                diff = np.where(np.minimum(scores[..., k], scores[..., m]) >= second, diff, np.nan)
            if np.nanmin(diff, initial=np.inf) < 0 < np.nanmax(diff, initial=-np.inf):
                ax.contour(xx, yy, diff, levels=[0.0], colors="w", linewidths=1.0, linestyles=":")


def learning_curve(result, metric="log_loss", *, model=None, ax=None):
    """A metric of each estimate against the training-set size, with bootstrap intervals.

    Parameters
    ----------
    result : pandas.DataFrame or ComparisonTable
        From :func:`bayesnb.compare` with ``train_sizes``.
    metric : {"accuracy", "log_loss", "brier", "ece", "macro_f1"}
    model : str, optional
        Which model, when several were compared.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> from bayesnb import MultinomialNB, compare
    >>> from bayesnb.analysis.plots import learning_curve
    >>> rng = np.random.default_rng(0)
    >>> X = rng.poisson([[6, 1, 1]] * 40 + [[1, 1, 6]] * 40)
    >>> y = np.repeat(["a", "b"], 40)
    >>> result = compare(MultinomialNB(), X[::2], y[::2], X[1::2], y[1::2], estimates=("mean", "predictive"),
    ...                  train_sizes=[4, 10, 40], n_repeats=2, n_bootstrap=50, as_frame=False)
    >>> ax = learning_curve(result, "log_loss")
    >>> ax.get_xlabel(), [line.get_label() for line in ax.get_lines()]
    ('training rows', ['mean', 'predictive'])
    """
    from bayesnb.analysis.comparison import _TITLES, METRICS, _records_of

    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {METRICS}")
    names, records, attrs = _records_of(result)
    if "train_size" not in names:
        raise ValueError("learning_curve needs the result of compare(..., train_sizes=[...])")
    if "model" in names:
        models = sorted({r["model"] for r in records})
        if model is None and len(models) > 1:
            raise ValueError(f"several models were compared; choose one with model= among {models}")
        model = model or models[0]
        records = [r for r in records if r["model"] == model]
    ax = _new_axes(ax, (6, 4))
    for estimate in dict.fromkeys(r["estimate"] for r in records):
        rows = sorted((r for r in records if r["estimate"] == estimate and r.get("available")), key=lambda r: r["train_size"])
        if not rows:
            ax.plot([], [], color=_COLOURS.get(estimate), label=f"{estimate}: n/a")
            continue
        size = np.array([r["train_size"] for r in rows], dtype=float)
        value = np.array([r[metric] for r in rows], dtype=float)
        label = estimate
        if np.isinf(value).any():
            # An infinite log loss (test rows impossible under every class) is not drawn:
            # the legend says where, rather than a line that seems to stop.
            label += f" (infinite at {', '.join(f'{s:g}' for s in size[np.isinf(value)])} rows)"
        ax.plot(size, value, marker="o", ls=_STYLES.get(estimate, "-"), color=_COLOURS.get(estimate), label=label, ms=4)
        if rows[0].get(f"{metric}_lo") is not None:
            lo = np.array([r[f"{metric}_lo"] for r in rows])
            hi = np.array([r[f"{metric}_hi"] for r in rows])
            ax.fill_between(size, lo, hi, color=_COLOURS.get(estimate), alpha=0.12, lw=0)
    ax.set_xscale("log")
    ax.set_xlabel("training rows")
    ax.set_ylabel(_TITLES[metric])
    level = attrs.get("level")
    ax.set_title(f"{_TITLES[metric]} by training-set size" + (f" ({level:.0%} bootstrap bands)" if level else ""))
    ax.legend(fontsize="small")
    return ax
