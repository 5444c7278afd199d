"""The ``bayesnb demo``: data sets, terminal summary and the report directory."""

from __future__ import annotations

import datetime as _dt
import textwrap
from pathlib import Path

from bayesnb import __version__
from bayesnb.cli.userdata import DataError, labelled_texts, split
from bayesnb.io import _atomic

__all__ = []

# Pixels above this intensity (0..16) are "on" for the Bernoulli family.
DIGITS_BINARIZE_THRESHOLD = 0.0
DIGITS_N_CATEGORIES = 17

class _Problem:
    """One demo data set: families to fit, rows, labels and how to name things."""

    def __init__(self, header, families, y_train, y_test, notes, feature_names, describe_row, name, semi=None):
        self.semi = semi  # a cli.semi.SemiProblem when the file holds unlabelled documents
        self.header = header
        self.families = families  # [(name, estimator, X_train, X_test)]
        self.y_train = y_train
        self.y_test = y_test
        self.notes = notes
        self.feature_names = feature_names  # one name per column, the same for every model
        self.describe_row = describe_row  # test row index -> short text
        self.name = name


def digits_problem(args):
    """Bundled digits: one design matrix per family."""
    import numpy as np

    from bayesnb.estimators import BernoulliNB, CategoricalNB, MultinomialNB
    from bayesnb.io.datasets import load_digits_counts

    X, y = load_digits_counts()
    index = np.arange(X.shape[0])
    X_train, X_test, y_train, y_test = split(X, y, args.test_size, args.seed)
    # The same split of the row numbers (same seed, same stratification), to name test rows.
    _, idx_test = split(index, y, args.test_size, args.seed)[:2]
    families = [
        ("multinomial", MultinomialNB(alpha=args.alpha), X_train, X_test),
        ("bernoulli", BernoulliNB(alpha=args.alpha, binarize=DIGITS_BINARIZE_THRESHOLD), X_train, X_test),
        ("categorical", CategoricalNB(alpha=args.alpha, min_categories=DIGITS_N_CATEGORIES), X_train, X_test),
    ]
    header = [
        f"data: scikit-learn digits (bundled), {X.shape[0]} images x {X.shape[1]} pixels, "
        f"{len(set(y.tolist()))} classes",
        "  multinomial: pixel intensities 0..16 as counts",
        f"  bernoulli: a pixel is on if its intensity is > {DIGITS_BINARIZE_THRESHOLD:g}",
        f"  categorical: each intensity is one of {DIGITS_N_CATEGORIES} categories",
    ]
    pixels = [f"pixel({j // 8},{j % 8})" for j in range(64)]

    def describe(i):
        return f"image #{int(idx_test[i])} (label {y_test[i]})"

    return _Problem(header, families, y_train, y_test, [], pixels, describe, "scikit-learn digits")


def text_problem(args):
    """A user's labelled text file: word counts / word presence."""
    import numpy as np
    from sklearn.feature_extraction.text import CountVectorizer

    from bayesnb.estimators import BernoulliNB, MultinomialNB
    max_size = getattr(args, "max_size", None)
    texts, labels = labelled_texts(
        args.data, max_rows=getattr(args, "max_rows", None), max_bytes=None if max_size is None else max_size * 2**20
    )

    # An unlabelled line (empty label field, or the label --unlabelled names) is never a
    # class: the families below are fitted on the labelled lines, and the unlabelled
    # ones go to the semi-supervised section.
    marker = getattr(args, "unlabelled", None)
    marker = None if marker is None else marker.strip()
    unlabelled = labels == ""
    if marker is not None:
        unlabelled |= labels == marker
    all_docs, all_labels = np.asarray(texts, dtype=object), labels
    docs, labels = all_docs[~unlabelled], labels[~unlabelled]
    if not labels.size:
        raise DataError(f"{args.data} holds no labelled lines (every line is unlabelled)")
    docs_train, docs_test, y_train, y_test = split(docs, labels, args.test_size, args.seed)
    vectorizer = CountVectorizer()
    try:
        X_train = vectorizer.fit_transform(docs_train)
    except ValueError as exc:  # e.g. "empty vocabulary"
        raise DataError(f"{args.data}: cannot build a vocabulary from the training texts: {exc}") from None
    X_test = vectorizer.transform(docs_test)
    families = [
        ("multinomial", MultinomialNB(alpha=args.alpha), X_train, X_test),
        ("bernoulli", BernoulliNB(alpha=args.alpha, binarize=0.0), X_train, X_test),
    ]
    names, counts = np.unique(labels, return_counts=True)
    shown = ", ".join(f"{n} {c}" for n, c in zip(names[:8], counts[:8]))
    more = f", ... ({names.size} in all)" if names.size > 8 else ""
    n_unlabelled = int(unlabelled.sum())
    if n_unlabelled:
        ways = []
        if np.any(all_labels == ""):
            ways.append("an empty label field")
        if marker is not None and np.any(all_labels == marker):
            ways.append(f"the label {marker!r}")
        how = " or ".join(ways)
        counted = f"{len(texts)} documents ({labels.size} labelled, {n_unlabelled} unlabelled: {how})"
    else:
        counted = f"{len(texts)} documents"
    header = [
        f"data: {args.data}, {counted}, {names.size} classes ({shown}{more})",
        f"  vocabulary: {X_train.shape[1]} words (CountVectorizer fitted on the training split)",
        "  multinomial: word counts; bernoulli: word presence",
    ]
    notes = [
        "categorical: skipped for text (a bag of words is sparse counts, not categorical codes).",
    ]
    semi = None
    if n_unlabelled:
        from bayesnb.cli.semi import SemiProblem

        notes.append(
            f"the {n_unlabelled} unlabelled documents are not in the fits above (labelled documents only); "
            "the semi-supervised section uses them."
        )
        semi = SemiProblem(docs_train, y_train, docs_test, y_test, all_docs[unlabelled], how)
    elif "-1" in names:
        notes.append(
            f"the label -1 is a class here ({int(counts[names == '-1'][0])} documents); if it marks unlabelled "
            "documents (scikit-learn's convention), pass --unlabelled=-1."
        )
    words = [str(w) for w in vectorizer.get_feature_names_out()]
    # The report names a test row by its first words: those are kept, not the test texts
    # themselves (a quarter of the file, alive for the whole demo).
    snippets = [_snippet(text) for text in docs_test]

    def describe(i):
        return f"[{y_test[i]}] {snippets[i]}"

    return _Problem(
        header, families, y_train, y_test, notes, words, describe, str(args.data), semi
    )


def _snippet(text, width=90):
    """The start of ``text`` with its whitespace runs as single spaces: ``width`` characters, then "..."."""
    text = " ".join(str(text).split())
    return f"{text[:width]}{'...' if len(text) > width else ''}"


def baselines(clf):
    """What a user would do instead of ``clf``, for :func:`bayesnb.compare`'s ``baselines``.

    scikit-learn's naive Bayes of the same family and prior (``alpha``; for Bernoulli the
    same ``binarize``), the same in ``CalibratedClassifierCV`` (5-fold, sigmoid and
    isotonic), and a reference ``LogisticRegression`` (on max-abs-scaled counts, or on
    one-hot categories; solved by Newton-CG to a tight tolerance, for its memory: see
    below). The estimator names its counterpart
    (its ``sklearn_counterpart()``); empty for a model with none.
    """
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler, OneHotEncoder

    counterpart = clf.sklearn_counterpart()
    if counterpart is None:
        return {}
    nb = counterpart.estimator
    name = type(nb).__name__
    # The reference is the optimum of L2-penalised (C = 1) multinomial logistic
    # regression, a strictly convex problem: any solver run to convergence gives it. The
    # default lbfgs keeps 10 pairs of coefficient-sized history (classes x features x 20
    # arrays: +107 MiB on 6 newsgroups, +666 MiB on 20, the demo's largest allocation);
    # Newton-CG keeps a handful of such arrays (+35 MiB on 6 newsgroups) and at tol=1e-8
    # reaches the optimum in 12 Newton steps there: its probabilities within 3e-5 of
    # lbfgs run to tol=1e-10, where lbfgs at its default tol=1e-4 stopped 0.017 away
    # (log loss 0.32444 against the optimum's 0.32466; accuracy 0.9460 against 0.9453).
    logistic_regression = LogisticRegression(solver="newton-cg", tol=1e-8, max_iter=2000)
    if counterpart.categorical:
        logistic = make_pipeline(OneHotEncoder(handle_unknown="ignore"), logistic_regression)
    else:
        logistic = make_pipeline(MaxAbsScaler(), logistic_regression)
    return {
        f"sklearn {name}": nb,
        "+ CalibratedCV sigmoid": CalibratedClassifierCV(nb, method="sigmoid", cv=5),
        "+ CalibratedCV isotonic": CalibratedClassifierCV(nb, method="isotonic", cv=5),
        "LogisticRegression (ref)": logistic,
    }


def _format_table(header, rows, align):
    """Plain-text table; ``rows`` items are lists of cells, or a (key..., text) tuple."""
    widths = [len(h) for h in header]
    for row in rows:
        if isinstance(row, list):
            widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def line(cells):
        out = []
        for cell, w, a in zip(cells, widths, align):
            out.append(cell.rjust(w) if a == ">" else cell.ljust(w))
        return "  ".join(out).rstrip()

    lines = [line(header), line(["-" * w for w in widths])]
    for row in rows:
        if isinstance(row, list):
            lines.append(line(row))
        else:
            *keys, text = row
            lead = "  ".join(k.ljust(w) for k, w in zip(keys, widths))
            lines.append(f"{lead}  {text}")
    return lines


_METRIC_HEADER = ["accuracy", "log loss", "Brier", "ECE", "macro-F1"]


def _summary_rows(results):
    """Terminal rows ``family estimate metrics... zero-lik`` from {family: compare records}."""
    from bayesnb.analysis.comparison import METRICS, short_reason

    rows = []
    for family, records in results.items():
        for rec in records:
            if not rec["available"]:
                rows.append((family, rec["estimate"], f"n/a ({short_reason(rec['reason'])})"))
            else:
                cells = [f"{rec[m]:.4f}" for m in METRICS]
                rows.append([family, rec["estimate"], *cells, str(int(rec["zero_likelihood_rows"]))])
    return rows


def demo_summary(args, problem, results, evidences, n_train, n_test, report_path, semi_lines=None):
    out = [f"bayesnb {__version__} demo", *problem.header]
    out.append(
        f"split: {n_train} train / {n_test} test rows (stratified, test size {args.test_size:g}, "
        f"seed {args.seed}); prior alpha = {args.alpha:g}, class_alpha = 1"
    )
    out.append("")
    out += _format_table(
        ["family", "estimate", *_METRIC_HEADER, "zero-lik rows"],
        _summary_rows(results),
        ["<", "<", ">", ">", ">", ">", ">", ">"],
    )
    out.append("")
    out.append("log evidence log p(X_train, y_train), nats:")
    ev_rows = [[name, f"{value:.2f}"] for name, value in evidences.items()]
    out += ["  " + s for s in _format_table(["family", "log evidence"], ev_rows, ["<", ">"])]
    out.append("")
    if semi_lines:
        out += [*semi_lines, ""]
    out.append("notes:")
    bullets = list(problem.notes) + [
        "every estimate of a family comes from one fit (one posterior), switched with set_params(estimate=...).",
        "zero-lik rows: test rows impossible under every class for that estimate (a feature value "
        "never seen in training). predict gives them the class proportions (bayesnb.ZeroLikelihoodWarning, "
        "counted here instead of printed), but the estimate gives them probability 0: its log loss is "
        "infinite (inf) whenever there is one, and each such row costs the Brier score 2 and the ECE 1 "
        "(the worst one row can cost), so an estimate cannot look better by failing. Accuracy and "
        "macro-F1 score predict's label, fallback included.",
        "log loss clips probabilities at machine epsilon (scikit-learn): a row possible under some "
        "class but given probability 0 for its true class costs about 36 nats (a row impossible under "
        "every class is the inf above). Brier: sum over classes (0..2). "
        "ECE: 15 equal-width confidence bins.",
        "the families model different representations of the data, so their log evidences are "
        "not comparable with each other.",
    ]
    if args.alpha == 1.0:
        bullets.append("with alpha = 1 and class_alpha = 1 the MAP (posterior mode) equals the MLE.")
    for family, records in results.items():
        for rec in records:
            if not rec["available"]:
                bullets.append(f"{family} {rec['estimate']}: {rec['reason']}")
    for bullet in bullets:
        out += textwrap.wrap(bullet, width=100, initial_indent="  - ", subsequent_indent="    ")
    if report_path is not None:
        out.append("")
        out.append(f"report: {report_path} (95% bootstrap intervals, learning curve, uncertainty, plots)")
    return "\n".join(out)


def _is_report_dir(path):
    """Whether a directory holds a report of ``bayesnb demo`` (its report.md says so)."""
    first = _atomic.read_head(path / "report.md", 256).split(b"\n", 1)[0]
    return first.startswith(b"# bayesnb ") and b"demo report" in first


def report_dir(requested, force=False):
    """The report directory: ``requested``, or a new time-stamped one in the working directory.

    An existing directory is reused only when it is empty or holds an earlier demo report
    (whose files the new report replaces), or with ``force``: a report never overwrites
    a user's files unasked.
    """
    if requested is not None:
        path = Path(requested)
        if path.exists() and not path.is_dir():
            raise DataError(f"--out {path}: exists and is not a directory")
        if path.is_dir() and not force and any(path.iterdir()) and not _is_report_dir(path):
            raise DataError(
                f"--out {path}: the directory holds files and no bayesnb demo report; refusing to write "
                "the report's files there (choose a new or empty directory, or pass --force)"
            )
    else:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        path = Path.cwd() / f"bayesnb-report-{stamp}"
        k = 1
        while path.exists():
            path = Path.cwd() / f"bayesnb-report-{stamp}-{k}"
            k += 1
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DataError(f"cannot create the report directory {path}: {exc.strerror or exc}") from None
    return path


def _save(ax, path):
    # Whole or not at all: an interrupted report never leaves a truncated image.
    with _atomic.atomic_write(path, "wb") as fh:
        ax.figure.savefig(fh, format="png", dpi=110)
    return path.name


def curve_sizes(n_train, n_classes):
    base = [n_classes * k for k in (1, 2, 5, 10, 25)] + [n_train // 4, n_train // 2, n_train]
    return sorted({s for s in base if 1 <= s <= n_train})


def reliability_image(out_dir, name, est, X_test, y_test):
    """Draw family ``name``'s reliability diagram (``est`` fitted) into ``out_dir``; returns the file name.

    Drawn as soon as the family is scored, so that its fitted model need not be kept
    for the report (see :func:`write_report`).
    """
    from bayesnb.analysis import plots

    return _save(plots.reliability_diagram(est, X_test, y_test), out_dir / f"reliability_{name}.png")


def write_report(args, problem, out_dir, first, reliability, tables, evidences, curve, progress, semi_md=None):
    """Write ``report.md`` and the remaining figures into ``out_dir``; returns the report's path.

    ``first``: ``(name, fitted estimator, X_train, X_test)`` of the first family, whose
    learning curve (``curve``), posterior uncertainty and top features the report shows;
    ``reliability``: family name -> file of its reliability diagram
    (:func:`reliability_image`), drawn already.
    """
    import numpy as np

    from bayesnb.analysis import plots
    from bayesnb.analysis.comparison import format_comparison
    from bayesnb.analysis.uncertainty import decompose_uncertainty, top_features

    y_test = problem.y_test
    first, clf, _, X_test = first
    images = {f"reliability_{name}": image for name, image in reliability.items()}
    with progress.step("drawing the learning curve"):
        images["learning_curve"] = _save(plots.learning_curve(curve, "log_loss"), out_dir / "learning_curve.png")
        images["learning_curve_accuracy"] = _save(
            plots.learning_curve(curve, "accuracy"), out_dir / "learning_curve_accuracy.png"
        )
    with progress.step(f"posterior uncertainty of {len(y_test)} test predictions ({args.draws} draws)"):
        decomposition = decompose_uncertainty(clf, X_test, n_draws=args.draws, random_state=args.seed)
        images["uncertainty"] = _save(
            plots.uncertainty_histogram(decomposition=decomposition), out_dir / "uncertainty.png"
        )
        labels, counts = np.unique(problem.y_train, return_counts=True)
        target = labels[np.argmin(counts)] if args.data is not None else clf.classes_[0]
        names = problem.feature_names
        top = top_features(clf, target, 15, level=0.9, n_draws=args.draws, random_state=args.seed)
        images["top_features"] = _save(
            plots.top_features(clf, target, 15, feature_names=names, n_draws=args.draws, random_state=args.seed),
            out_dir / "top_features.png",
        )
    order = np.argsort(-decomposition.epistemic, kind="stable")[:8]
    predicted = clf.classes_[np.argmax(decomposition.mean_proba, axis=1)]

    md = [f"# bayesnb {__version__} demo report", ""]
    md.append(f"Generated {_dt.datetime.now().isoformat(timespec='seconds')} by `bayesnb demo`.")
    md.append("")
    md += [line.strip() if not line.startswith("  ") else f"- {line.strip()}" for line in problem.header]
    md.append("")
    md.append(
        f"Split: {len(problem.y_train)} training / {len(y_test)} test rows (stratified, test size "
        f"{args.test_size:g}, seed {args.seed}); prior alpha = {args.alpha:g}, class_alpha = 1. "
        "Each family is fitted once; its four estimates come from that one posterior."
    )
    md.append("")
    md.append("## Estimates compared on the test split")
    md.append("")
    md.append(
        "Point values with 95% percentile bootstrap intervals over the test rows (1000 resamples). "
        "Log loss in nats (probabilities clipped at machine epsilon, as scikit-learn); Brier summed "
        "over classes (0 to 2); ECE with 15 equal-width confidence bins; zero-lik rows: test rows "
        "impossible under every class. Such a row has probability 0 under that estimate, so its log "
        "loss is infinite (inf), and it costs the Brier score 2 and the ECE 1 (the worst one row can "
        "cost: an estimate cannot look better by failing); accuracy and macro-F1 score predict's "
        "fallback label (the class proportions). The reliability diagrams draw such rows as a cross "
        "at (confidence 1, accuracy 0), and every bin with its number of rows."
    )
    for name, table in tables.items():
        md += ["", f"### {name}", "", format_comparison(table, style="markdown", intervals=True), ""]
        md.append(
            "Paired differences from the exact posterior predictive (estimate minus predictive; an "
            "interval excluding 0 is a difference the test set resolves):"
        )
        md += ["", format_comparison(
            table, style="markdown", differences=True, values=False, metrics=("accuracy", "log_loss", "brier")
        ), ""]
        md.append(f"![reliability diagram, {name}]({images[f'reliability_{name}']})")
    md += ["", "## Log evidence", "", "| family | log p(X_train, y_train) (nats) |", "|---|---|"]
    md += [f"| {k} | {v:.2f} |" for k, v in evidences.items()]
    md += [
        "",
        "The families model different representations of the data, so their evidences are not "
        "comparable with each other; within a family they compare priors.",
        "",
        "## Where full Bayes matters: learning curve",
        "",
        f"{type(clf).__name__} ({first}) refitted on random stratified training subsets "
        f"(5 per size), scored on the same {len(y_test)} test rows; bands are 95% bootstrap "
        "intervals over the test rows.",
        "",
        f"![log loss by training size]({images['learning_curve']})",
        f"![accuracy by training size]({images['learning_curve_accuracy']})",
        "",
        format_comparison(curve, style="markdown", metrics=("accuracy", "log_loss")),
        "",
        "Paired differences from the exact posterior predictive (estimate minus predictive):",
        "",
        format_comparison(curve, style="markdown", differences=True, values=False, metrics=("accuracy", "log_loss")),
        "",
        _curve_verdict(curve),
        "",
        *(semi_md or []),
        "## Posterior uncertainty of the predictions",
        "",
        f"From {args.draws} exact posterior draws of the {first} model: per test row, total "
        "uncertainty (entropy of the mean class probabilities) = aleatoric (mean entropy of each "
        "draw's probabilities) + epistemic (mutual information between the label and the "
        "parameters: what more training data would remove).",
        "",
        f"![uncertainty histogram]({images['uncertainty']})",
        "",
        "Test rows with the highest epistemic uncertainty:",
        "",
        "| row | predicted | epistemic | aleatoric | total |",
        "|---|---|---|---|---|",
    ]
    for i in order:
        md.append(
            f"| {_md_escape(problem.describe_row(int(i)))} | {predicted[i]} | {decomposition.epistemic[i]:.4f} | "
            f"{decomposition.aleatoric[i]:.4f} | {decomposition.total[i]:.4f} |"
        )
    names = problem.feature_names
    md += [
        "",
        f"## Features that most raise p({target})",
        "",
        f"Posterior median and 90% credible interval of each feature's contribution to the "
        f"log-odds of {target} ({top.unit}), from {args.draws} posterior draws.",
        "",
        f"![top features]({images['top_features']})",
        "",
        "| feature | median | 90% interval |",
        "|---|---|---|",
    ]
    for f, m, lo, hi in zip(top.feature, top.median, top.lower, top.upper):
        md.append(f"| {_md_escape(names[f])} | {m:.3f} | [{lo:.3f}, {hi:.3f}] |")
    md.append("")
    path = out_dir / "report.md"
    with _atomic.atomic_write(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(md))
    return path


def _md_escape(text):
    return str(text).replace("|", "\\|")


def _curve_verdict(curve):
    """One sentence: at which sizes the predictive beats the posterior-mean plug-in in log loss."""
    recs = [r for r in curve.records if r["estimate"] == "mean" and r["available"] and r.get("log_loss_diff_lo") is not None]
    if not recs:
        return ""
    better = [r["train_size"] for r in recs if r["log_loss_diff_lo"] > 0]  # mean worse than predictive
    same = [r["train_size"] for r in recs if r["log_loss_diff_lo"] <= 0 <= r["log_loss_diff_hi"]]
    worse = [r["train_size"] for r in recs if r["log_loss_diff_hi"] < 0]
    parts = []
    if better:
        parts.append(f"the exact predictive has a lower log loss than the posterior-mean plug-in at {_sizes_text(better)} training rows")
    if same:
        parts.append(f"the difference is not resolved at {_sizes_text(same)}")
    if worse:
        parts.append(f"the plug-in is better at {_sizes_text(worse)}")
    return "Paired 95% intervals of Δ log loss (mean − predictive): " + "; ".join(parts) + "."


def _sizes_text(sizes):
    return ", ".join(str(s) for s in sizes)
