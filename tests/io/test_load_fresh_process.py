"""A model file loads in a fresh interpreter through ``bayesnb.load`` alone.

``import bayesnb`` is lazy (no estimator module is imported until a name is used), and
loading finds classes in the table that importing the estimator layers fills: the
front's ``load`` and the command's ``predict`` must import those layers themselves.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import bayesnb
import bayesnb.sklearn as bsk

SCRIPT = """
import sys
import numpy as np
import bayesnb
est = bayesnb.load(sys.argv[1])
print(type(est).__module__, type(est).__name__)
np.save(sys.argv[2], est.predict_proba(np.load(sys.argv[3])))
"""


@pytest.mark.parametrize("make", [bayesnb.MultinomialNB, bsk.MultinomialNB], ids=["bayesnb", "namespace"])
def test_bayesnb_load_in_a_fresh_process(make, tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.poisson(2.0, (30, 5)), np.arange(30) % 2
    est = make().fit(X, y)
    path = tmp_path / "m.npz"
    est.save(path)
    np.save(tmp_path / "X.npy", X)
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path), str(tmp_path / "p.npy"), str(tmp_path / "X.npy")],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [type(est).__module__, type(est).__name__]
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), est.predict_proba(X))
