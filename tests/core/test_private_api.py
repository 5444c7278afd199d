"""The quarantine of private SciPy / JAX names (bayesnb/core/_private_api.py).

* No module of the package but ``core/_private_api.py`` imports a private name of SciPy,
  NumPy or JAX (a dotted module part or imported name starting with ``_``): found by
  ``ast``, with a planted violation.
* The public fallback of each private path gives the private path's numbers (to 1e-12
  relative): the two paths run SciPy's same kernel, the fallback through the public
  ``csr_matrix @``, so only the order of the accumulation into ``out`` differs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from bayesnb.core import _private_api

PACKAGE = Path(__file__).resolve().parents[2] / "bayesnb"
QUARANTINE = PACKAGE / "core" / "_private_api.py"
LIBRARIES = ("scipy", "numpy", "jax", "jaxlib")


def private_imports(root):
    """``[(file, line, name)]``: an import of a private name of SciPy, NumPy or JAX under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                parts = name.split(".")
                if parts[0] in LIBRARIES and any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
                    found.append((path.relative_to(root.parent).as_posix(), node.lineno, name))
    return found


def test_only_the_quarantine_imports_private_names():
    found = private_imports(PACKAGE)
    assert {f for f, _, _ in found} <= {"bayesnb/core/_private_api.py"}, found
    assert found, "the quarantine imports its private kernel (else this check is vacuous)"


def test_the_scan_catches_a_planted_private_import(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("def f():\n    from jax._src.core import trace_state_clean\n")
    (pkg / "b.py").write_text("import scipy.sparse._sparsetools as t\nfrom scipy.sparse import csr_matrix\n")
    (pkg / "c.py").write_text("from jax.extend.core import get_opaque_trace_state\nfrom . import _x\n")
    assert private_imports(pkg) == [
        ("pkg/a.py", 2, "jax._src.core"),
        ("pkg/a.py", 2, "jax._src.core.trace_state_clean"),
        ("pkg/b.py", 1, "scipy.sparse._sparsetools"),
    ]


def _case(seed, n=300, f=60, k=4, index_dtype=np.int32):
    rng = np.random.default_rng(seed)
    X = sp.random(n, f, density=0.1, format="csr", random_state=rng, data_rvs=lambda m: rng.integers(1, 9, m).astype(float))
    r0, r1 = 37, 211  # a slice of rows, read in place: indptr offsets into the whole arrays
    s, e = X.indptr[r0], X.indptr[r1]
    indptr = (X.indptr[r0 : r1 + 1] - s).astype(index_dtype)
    indices = X.indices[s:e].astype(index_dtype)
    W = rng.normal(size=(f, k)) * 10.0 ** rng.integers(-3, 4, size=(f, 1))
    oracle = X[r0:r1].toarray() @ W  # dense BLAS product, an independent computation
    return indptr, indices, X.data[s:e], W, oracle, rng.normal(size=(r1 - r0, k))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("accumulate", [False, True])
def test_public_fallback_equals_the_private_kernel(seed, index_dtype, accumulate):
    if not _private_api.HAS_KERNELS:  # pragma: no cover
        pytest.fail("this SciPy lacks csr_matvecs / csc_matvecs: the private paths are never taken")
    indptr, indices, data, W, oracle, start = _case(seed, index_dtype=index_dtype)
    outs = []
    for public in (False, True):
        out = start.copy()
        got = _private_api.csr_rows_product(indptr, indices, data, W, out, accumulate, public=public)
        assert got is out
        outs.append(out)
    scale = np.abs(oracle).max() + (np.abs(start).max() if accumulate else 0.0)
    np.testing.assert_allclose(outs[1], outs[0], rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(outs[0], oracle + (start if accumulate else 0.0), rtol=0, atol=1e-12 * scale)


def test_without_the_private_kernel_the_public_path_is_taken(monkeypatch):
    indptr, indices, data, W, oracle, start = _case(0)
    monkeypatch.setattr(_private_api, "_csr_matvecs", None)
    out = _private_api.csr_rows_product(indptr, indices, data, W, start.copy())
    np.testing.assert_allclose(out, oracle, rtol=0, atol=1e-12 * np.abs(oracle).max())


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_public_transposed_product_equals_the_private_kernel(seed, index_dtype):
    if not _private_api.HAS_KERNELS:  # pragma: no cover
        pytest.fail("this SciPy lacks csc_matvecs: the private path is never taken")
    indptr, indices, data, _, _, _ = _case(seed, index_dtype=index_dtype)
    rng = np.random.default_rng(50 + seed)
    n, f = indptr.size - 1, 60
    Y = rng.normal(size=(n, 3))
    start = rng.normal(size=(f, 3))
    A = sp.csr_matrix((data, indices, indptr), shape=(n, f)).toarray()
    oracle = start + A.T @ Y  # dense BLAS product, an independent computation
    outs = [
        _private_api.csr_rows_transposed_product(indptr, indices, data, Y, start.copy(), public=public)
        for public in (False, True)
    ]
    scale = np.abs(oracle).max()
    np.testing.assert_allclose(outs[1], outs[0], rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(outs[0], oracle, rtol=0, atol=1e-12 * scale)
