"""The demo's semi-supervised section: labelled-only vs EM vs VB on a user's text file.

When the ``--data`` file of ``bayesnb demo`` holds unlabelled documents (an empty label
field, ``<TAB>text``, or the label named by ``--unlabelled``), the ordinary comparison
is fitted on the labelled documents only, and this section uses the unlabelled ones:

* hold-out: on the demo's own stratified split of the labelled documents, the
  multinomial model (word counts, ``MultinomialNB(alpha)``, exact posterior predictive)
  fitted on the labelled training documents only, and
  :class:`~bayesnb.SemiSupervisedNB` by MAP-EM and by mean-field VB fitted on those
  plus every unlabelled document, each scored on the held-out labelled documents. The
  three share one vocabulary, ``CountVectorizer`` fitted on the labelled training and
  the unlabelled texts (never the held-out ones). EM and VB use the estimator's default
  ``unlabelled_weight="auto"``: the weight of the unlabelled documents is chosen by
  cross-validating the labelled training documents' log predictive over
  ``weight_grid`` (0, the labelled-only fit, included); the chosen weight and that
  curve are shown.
* learning curve (in the report): ``k`` labelled training documents per class for
  ``k`` in :data:`CURVE_PER_CLASS` below the smallest class's training count; repeat
  ``r`` draws them with ``numpy.random.default_rng(seed + r)`` (classes in sorted
  order, ``rng.choice`` without replacement); labelled training documents not drawn
  are left out (the unlabelled pool is the file's unlabelled documents).
"""

from __future__ import annotations

import textwrap
import warnings

from bayesnb.cli.userdata import DataError

__all__ = []

#: Labelled training documents per class at the points of the learning curve.
CURVE_PER_CLASS = (1, 2, 5, 10, 20, 50, 100)
#: Random labelled subsets per point of the learning curve.
CURVE_REPEATS = 5
METHODS = ("labelled only", "EM", "VB")


class SemiProblem:
    """The unlabelled documents of a demo data file and the vocabulary shared by the three methods.

    Parameters
    ----------
    docs_train, y_train : ndarray
        The labelled training documents (the demo's split) and their labels.
    docs_test, y_test : ndarray
        The held-out labelled documents and their labels.
    docs_unlabelled : ndarray
        Every unlabelled document of the file.
    marker : str
        How the file marks an unlabelled line (for the text).
    """

    def __init__(self, docs_train, y_train, docs_test, y_test, docs_unlabelled, marker):
        from sklearn.feature_extraction.text import CountVectorizer

        import numpy as np

        self.y_train, self.y_test, self.marker = y_train, y_test, marker
        self.vectorizer = CountVectorizer()
        try:
            self.vectorizer.fit(np.concatenate([docs_train, docs_unlabelled]))
        except ValueError as exc:
            raise DataError(f"cannot build a vocabulary from the training and unlabelled texts: {exc}") from None
        self.X_train = self.vectorizer.transform(docs_train)
        self.X_test = self.vectorizer.transform(docs_test)
        self.X_unlabelled = self.vectorizer.transform(docs_unlabelled)

    #: Mixture components per class of EM and VB (``bayesnb demo --n-components``): an
    #: int or ``"auto"``; the labelled-only model has one.
    n_components = 1

    @property
    def n_unlabelled(self):
        return self.X_unlabelled.shape[0]


def parse_n_components(text):
    """``--n-components``: an int >= 1 or ``auto``.

    Examples
    --------
    >>> parse_n_components("2"), parse_n_components("auto")
    (2, 'auto')
    """
    import argparse

    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1 or 'auto', got {text!r}")
    return value


def _fit_score(method, X_train, y_train, problem, alpha):
    """Fit one method; return its record (accuracy, log loss, iterations, transduction)."""
    import numpy as np
    import scipy.sparse as sp
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import accuracy_score, log_loss

    from bayesnb.estimators import MultinomialNB, SemiSupervisedNB

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        if method == "labelled only":
            clf = MultinomialNB(alpha=alpha).fit(X_train, y_train)
        else:
            X = sp.vstack([X_train, problem.X_unlabelled]).tocsr()
            y = np.concatenate([np.asarray(y_train, dtype=object), np.full(problem.n_unlabelled, -1, dtype=object)])
            k = problem.n_components
            if k != "auto":
                # A component starts from distinct labelled documents: at most as many as the
                # class has (the learning curve's smallest points have 1 or 2 per class, and
                # copies of a document start in one component).
                k = {label: int(min(k, n)) for label, n in _distinct_documents(X_train, y_train).items()}
            clf = SemiSupervisedNB(MultinomialNB(alpha=alpha), method=method.lower(), n_components=k).fit(X, y)
        proba = clf.predict_proba(problem.X_test)
    record = {
        "method": method,
        "accuracy": float(accuracy_score(problem.y_test, clf.classes_[np.argmax(proba, axis=1)])),
        "log_loss": float(log_loss(problem.y_test, proba, labels=clf.classes_)),
        "n_iter": getattr(clf, "n_iter_", None),
        "converged": not any(issubclass(w.category, ConvergenceWarning) for w in caught),
        "assigned": None,
        "weight": None,
        "curve": None,
        "components": None,
    }
    if method != "labelled only":
        record["components"] = {str(c): int(k) for c, k in zip(clf.classes_, clf.n_components_)}
        assigned = clf.transduction_[len(y_train):]
        record["assigned"] = {str(c): int(np.sum(assigned == c)) for c in clf.classes_}
        record["weight"] = clf.unlabelled_weight_
        record["curve"] = clf.weight_curve_
    return record


def _distinct_documents(X, y):
    """Distinct rows of the count matrix ``X`` (CSR) per label of ``y``: a dict label -> int."""
    import numpy as np

    X = X.tocsr(copy=True)
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    rows = [(X.indices[a:b].tobytes(), X.data[a:b].tobytes()) for a, b in zip(X.indptr[:-1], X.indptr[1:])]
    out = {}
    for label, row in zip(np.asarray(y).tolist(), rows):
        out.setdefault(label, set()).add(row)
    return {label: len(seen) for label, seen in sorted(out.items())}


def _weight(rec):
    """The unlabelled weight cell of a record ("–" for the labelled-only model)."""
    return "–" if rec["weight"] is None else f"{rec['weight']:g}"


def curve_sentence(rec):
    """How the record's unlabelled weight was chosen, in one sentence (None for the labelled-only model)."""
    if rec["weight"] is None:
        return None
    curve = rec["curve"]
    if curve is None:
        return (f"unlabelled weight, {rec['method']}: {rec['weight']:g} (no cross-validation: a class has "
                "fewer than 2 labelled training documents)")
    points = "; ".join(
        f"{lam:g}: accuracy {a:.4f} ± {ase:.4f}, log p(y|x) {m:.4f} ± {se:.4f}"
        for lam, a, ase, m, se in zip(curve["grid"], curve["accuracy"], curve["accuracy_se"], curve["mean"], curve["se"])
    )
    score = "accuracy" if curve["criterion"] == "accuracy" else "mean log p(y|x)"
    return (f"unlabelled weight, {rec['method']}: {curve['chosen']:g}, chosen by the {score} of a "
            f"{curve['n_splits']}-fold cross-validation of the labelled training documents; per weight, "
            f"held-out accuracy and mean log p(y|x) (± standard error): {points}")


def components_sentence(rec):
    """The record's mixture components per class, in one sentence (None with one component per class)."""
    if not rec.get("components") or all(k == 1 for k in rec["components"].values()):
        return None
    return f"mixture components per class, {rec['method']}: {_counts(rec['components'])}"


def holdout(problem, alpha):
    """Labelled-only, EM and VB on the demo's split, scored on the held-out labelled documents.

    Returns
    -------
    list of dict
        One record per method: ``method``, ``accuracy``, ``log_loss`` (scikit-learn's),
        ``n_iter`` (None for labelled only), ``converged`` and ``assigned`` (the number
        of unlabelled documents the method's transduction gives each class).
    """
    from bayesnb.cli.userdata import user_errors

    with user_errors("cannot fit the semi-supervised models"):
        return [_fit_score(m, problem.X_train, problem.y_train, problem, alpha) for m in METHODS]


def curve_sizes(y_train):
    """Points of the learning curve: labelled documents per class below the smallest class's count."""
    import numpy as np

    smallest = int(np.unique(y_train, return_counts=True)[1].min())
    return [k for k in CURVE_PER_CLASS if k < smallest]


def curve(problem, alpha, seed, progress=None):
    """Accuracy and log loss against labelled documents per class, for each method.

    Returns
    -------
    dict
        ``{(k, method): {"accuracy": [...], "log_loss": [...], "weight": [...]}}`` over
        :data:`CURVE_REPEATS` repeats, for ``k`` in :func:`curve_sizes`.
    """
    import numpy as np

    from bayesnb.cli.userdata import user_errors

    sizes = curve_sizes(problem.y_train)
    classes = np.unique(problem.y_train)
    out = {}
    total, done = len(sizes) * CURVE_REPEATS, 0
    with user_errors("cannot fit the semi-supervised learning curve"):
        for k in sizes:
            for r in range(CURVE_REPEATS):
                rng = np.random.default_rng(seed + r)
                rows = np.concatenate(
                    [rng.choice(np.flatnonzero(problem.y_train == c), k, replace=False) for c in classes]
                )
                for method in METHODS:
                    rec = _fit_score(method, problem.X_train[rows], problem.y_train[rows], problem, alpha)
                    cell = out.setdefault((k, method), {"accuracy": [], "log_loss": [], "weight": []})
                    cell["accuracy"].append(rec["accuracy"])
                    cell["log_loss"].append(rec["log_loss"])
                    cell["weight"].append(rec["weight"])
                done += 1
                if progress is not None:
                    progress(done, total, f"{k} labelled per class, repeat {r + 1}")
    return out


def _spread(values, digits):
    import numpy as np

    values = np.asarray(values, dtype=float)
    sd = values.std(ddof=1) if values.size > 1 else 0.0
    return f"{values.mean():.{digits}f} ± {sd:.{digits}f} [{values.min():.{digits}f}, {values.max():.{digits}f}]"


def _counts(mapping):
    return ", ".join(f"{name} {count}" for name, count in mapping.items())


def _class_counts(y):
    import numpy as np

    names, counts = np.unique(y, return_counts=True)
    return dict(zip((str(n) for n in names), (int(c) for c in counts)))


def describe(problem):
    """One sentence on the data of the section (classes named, with their counts)."""
    return (
        f"{problem.n_unlabelled} unlabelled documents ({problem.marker}); labelled training documents: "
        f"{_counts(_class_counts(problem.y_train))}; held-out labelled documents: "
        f"{_counts(_class_counts(problem.y_test))}; vocabulary: {len(problem.vectorizer.vocabulary_)} words "
        "(CountVectorizer fitted on the labelled training and the unlabelled texts)"
    )


def summary_lines(problem, records, alpha):
    """The section of the terminal summary."""
    out = [f"semi-supervised, multinomial (word counts, alpha = {alpha:g}), scored on the held-out labelled documents:"]
    rows = []
    for rec in records:
        iters = "–" if rec["n_iter"] is None else f"{rec['n_iter']}{'' if rec['converged'] else ' (max)'}"
        rows.append([rec["method"], f"{rec['accuracy']:.4f}", f"{rec['log_loss']:.4f}", iters, _weight(rec)])
    header = ["method", "accuracy", "log loss", "iterations", "unlabelled weight"]
    out += ["  " + s for s in _format_table(header, rows, ["<", ">", ">", ">", ">"])]
    lines = [describe(problem)]
    for rec in records:
        if rec["assigned"] is not None:
            lines.append(f"unlabelled documents by class, {rec['method']}: {_counts(rec['assigned'])}")
    lines += [line for line in map(curve_sentence, records) if line is not None]
    lines += [line for line in map(components_sentence, records) if line is not None]
    for line in lines:
        out += textwrap.wrap(line, width=100, initial_indent="  ", subsequent_indent="    ")
    return out


def report_lines(problem, records, curve_result, alpha, seed):
    """The section of report.md (Markdown)."""
    md = [
        "## Unlabelled documents: semi-supervised naive Bayes",
        "",
        f"The file holds {problem.n_unlabelled} unlabelled documents ({problem.marker}). The comparison "
        "above is fitted on the labelled documents only; here `MultinomialNB(alpha="
        f"{alpha:g})` on the labelled training documents (exact posterior predictive) is compared with "
        "`SemiSupervisedNB(MultinomialNB(alpha), method=\"em\")` (MAP-EM, Laplace smoothing) and "
        "`method=\"vb\"` (mean-field variational Bayes), both fitted on the labelled training documents "
        "plus every unlabelled one, all scored on the held-out labelled documents of the split above. "
        "Both weigh the unlabelled documents by `unlabelled_weight=\"auto\"` (the default): the weight "
        "with the best cross-validated log p(y|x) of the labelled training documents, 0 (labelled only) "
        "unless a larger weight beats it by more than one standard error.",
        "",
        describe(problem) + ".",
        "",
        "| method | accuracy | log loss | iterations | unlabelled weight | unlabelled documents by class |",
        "|---|---|---|---|---|---|",
    ]
    for rec in records:
        iters = "–" if rec["n_iter"] is None else f"{rec['n_iter']}{'' if rec['converged'] else ' (max_iter reached)'}"
        assigned = "–" if rec["assigned"] is None else _md(_counts(rec["assigned"]))
        md.append(
            f"| {rec['method']} | {rec['accuracy']:.4f} | {rec['log_loss']:.4f} | {iters} | {_weight(rec)} | {assigned} |"
        )
    md.append("")
    sentences = [line for line in map(curve_sentence, records) if line is not None]
    sentences += [line for line in map(components_sentence, records) if line is not None]
    if sentences:
        md += [f"- {_md(line)}" for line in sentences] + [""]
    if not curve_result:
        md.append(
            "No learning curve: it needs at least 2 labelled training documents in every class "
            "(its smallest point is 1 per class)."
        )
        md.append("")
        return md
    sizes = sorted({k for k, _ in curve_result})
    md += [
        "### Learning curve",
        "",
        f"k labelled training documents per class (k = {', '.join(map(str, sizes))}), drawn at random "
        f"{CURVE_REPEATS} times (repeat r with seed {seed} + r); the other labelled training documents "
        "are left out, the unlabelled ones are all used by EM and VB. Mean ± standard deviation over the "
        "repeats [min, max], on the same held-out documents.",
        "",
        "| labelled per class | method | accuracy | log loss | unlabelled weights chosen |",
        "|---|---|---|---|---|",
    ]
    for k in sizes:
        for method in METHODS:
            cell = curve_result[k, method]
            weights = "–" if method == "labelled only" else ", ".join(f"{w:g}" for w in cell["weight"])
            md.append(
                f"| {k} | {method} | {_spread(cell['accuracy'], 3)} | {_spread(cell['log_loss'], 3)} | {weights} |"
            )
    md.append("")
    return md


def _format_table(header, rows, align):
    """Plain-text table of string cells (``align`` items ``"<"`` or ``">"``)."""
    widths = [max(len(c) for c in column) for column in zip(header, *rows)]

    def line(cells):
        return "  ".join(c.rjust(w) if a == ">" else c.ljust(w) for c, w, a in zip(cells, widths, align)).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


def _md(text):
    return str(text).replace("|", "\\|")
