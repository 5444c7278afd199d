"""``bayesnb crosscheck``: the NUTS cross-check from the command line.

The check itself (closed form against NUTS for every family, and that it fails for a
wrong posterior) is tested in tests/ppl/test_mcmc.py; here: the command runs it on the
bundled digits and on a user's CSV, prints the report, and its exit status says whether
the two agree. Each NUTS run is small (a compile of about 10 s dominates it).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_cli import run_main

from bayesnb import GaussianNB

QUICK = ["--warmup", "300", "--samples", "500", "--chains", "4"]


def write_csv(path, n=40, seed=0):
    """Two real features whose means depend on the class: a Gaussian model of 10 parameters."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.4, "spam", "ham")
    X = rng.normal(np.where((y == "spam")[:, None], [1.0, -1.0], [0.0, 0.5]), 1.0)
    lines = ["length,score,label"] + [f"{a:.4f},{b:.4f},{c}" for (a, b), c in zip(X, y)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, X, y


def parameter_rows(out):
    """``{parameter: (closed_mean, mcmc_mean, z)}`` from the report's parameter table."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^\s*(\w+\[[^\]]*\])\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)$", line)
        if m:
            name, closed, _, mcmc, _, z = m.groups()[:6]
            rows[name] = (float(closed), float(mcmc), float(z))
    return rows


def test_crosscheck_on_a_csv_file_agrees_and_exits_0(tmp_path):
    path, X, y = write_csv(tmp_path / "data.csv")
    code, out, err, fits, _ = run_main(["crosscheck", str(path), *QUICK, "--show", "0"])
    assert code == 0, out + err
    assert fits == ["GaussianNB"]
    assert "model: GaussianNB (gaussian), 40 of 40 rows, 2 features, 2 classes, 10 parameters" in out
    assert "closed form vs NUTS (4 chain(s) x 500 draws): AGREES" in out
    rows = parameter_rows(out)
    assert {"loc[ham, length]", "var[spam, score]", "class_probs[spam]"} <= set(rows)
    assert all(abs(z) < 4 for _, _, z in rows.values())
    # The closed-form column is the library's own posterior of the same rows.
    post = GaussianNB().fit(X, y).posterior_
    assert rows["loc[spam, score]"][0] == pytest.approx(float(post.loc[1, 1]), rel=1e-3)
    assert err == ""


def test_crosscheck_on_the_bundled_digits_reports_a_disagreement_with_exit_1():
    # Too few draws for the rule's minimum effective sample size: a disagreement that
    # the command must report with exit status 1 and the reason on stderr.
    code, out, err, fits, _ = run_main(["crosscheck", "--warmup", "20", "--samples", "20", "--chains", "2"])
    assert code == 1
    assert fits == ["MultinomialNB"]
    assert out.startswith("data: scikit-learn digits (bundled), 2x2 blocks of pixels summed: 16 counts per image")
    assert "300 of 1797 rows, 16 features, 10 classes, 170 parameters" in out
    assert "DISAGREES" in out and "parameters (largest |z| first):" in out
    assert re.search(r"feature_probs\[\d, block\(\d,\d\)\]", out)  # parameters named by class and block
    message = err.strip().splitlines()
    assert len(message) == 1 and message[0].startswith("bayesnb: the closed-form posterior and NUTS disagree: ")
    assert "bulk ESS down to" in message[0] and "run longer" in message[0]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["crosscheck", "--label", "y"], "--label describes a DATA file"),
        (["crosscheck", "--family", "categorical"], "--family categorical is not offered on the default data"),
        (["crosscheck", "--max-parameters", "100"], "the model has 170 parameters (more than --max-parameters 100)"),
        (["crosscheck", "--rows", "5"], "cannot draw a stratified subset of 5 rows"),
    ],
)
def test_crosscheck_data_errors_exit_1_before_sampling(argv, message):
    code, out, err, _, _ = run_main(argv)
    assert code == 1 and out == ""
    assert err.startswith("bayesnb: error: ") and message in err and len(err.strip().splitlines()) == 1


def test_crosscheck_too_many_parameters_for_a_text_column(tmp_path):
    path = tmp_path / "texts.csv"
    words = [f"w{i}" for i in range(60)]
    rng = np.random.default_rng(0)
    lines = ["label,text"] + [f"{'ab'[i % 2]},{' '.join(rng.choice(words, 8))}" for i in range(30)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err, fits, _ = run_main(["crosscheck", str(path), "--text", "text", "--max-parameters", "50"])
    assert code == 1 and fits == ["MultinomialNB"]
    assert "more than --max-parameters 50" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["crosscheck", "--chains", "1"],
        ["crosscheck", "--form", "tokens"],
        ["crosscheck", "--z-max", "-1"],
        ["crosscheck", "a.csv", "b.csv"],
    ],
)
def test_crosscheck_usage_errors_exit_2(argv):
    code, out, err, fits, _ = run_main(argv)
    assert code == 2 and "usage: bayesnb" in err and "error:" in err and fits == [] and out == ""


def test_crosscheck_help():
    code, out, _, _, _ = run_main(["--help"])
    assert code == 0 and "crosscheck" in out
    code, out, _, _, _ = run_main(["crosscheck", "--help"])
    assert code == 0
    for option in ("--rows", "--warmup", "--samples", "--chains", "--form", "--z-max", "--rhat-max", "--min-ess",
                   "--predictive-rows", "--max-parameters", "--show", "--seed", "--progress", "--family", "--text"):
        assert option in out, option
    assert "Exit status 0 when they agree, 1 when they do not" in " ".join(out.split())
    assert "Pareto k" in out and "digits" in out
    assert "multinomial" in out
