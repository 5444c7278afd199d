"""Shared fixtures: the public corpora in ``../shared/data``, read in place and cached.

The corpora (SMS Spam Collection, 20 Newsgroups bydate, UCI mushroom and car evaluation)
live beside the repository, never inside it. Tests that need them request one of the
session fixtures below; when the folder is absent those tests are skipped with a reason
that says where the data is expected. A missing *file* inside a present folder is an
error, not a skip: the readers raise ``FileNotFoundError``.

Every corpus is read and vectorised once per session. The arrays handed out are
read-only so that one test cannot alter what the next one sees (and so that an estimator
writing into its input fails loudly).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

# One BLAS thread per test process, set before NumPy loads OpenBLAS (and inherited by the
# examples' and the command's subprocesses). The suite runs one xdist worker per core,
# so a second BLAS thread per worker has no core to run on: OpenBLAS then waits for it
# on every call, and SciPy's L-BFGS-B (thousands of tiny level-1 calls per fit) ran
# 3.7 times slower (test_calibrate_loo.py and test_calibration.py: 202 s against 58 s
# with OPENBLAS_NUM_THREADS=1, 2 busy cores). The library limits its own solvers the
# same way (bayesnb/core/_threads.py); this covers the oracles (scikit-learn's
# LogisticRegression, CalibratedClassifierCV) and NumPy's linear algebra. Results do
# not depend on it beyond the last bits of a threaded sum.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

# Where NumPy was imported before this file (a plugin), the variables above came too late.
threadpool_limits(limits=1, user_api="blas")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

# The tests mirror the package in folders; a few import cases or helpers from a test module
# of another folder (``from test_mcmc import OffByOneCount``). pytest puts a folder on
# sys.path only when it collects a file from it, so running one folder alone would not
# find them: every folder of tests is importable from the start (file names are unique).
for _folder in sorted(p for p in Path(__file__).resolve().parent.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))
_MISSING = "../shared/data not found: the shared corpora live beside the repository"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``--dist loadgroup`` (pyproject's addopts): files that share work between their
    tests stay on one worker and go first, every other test is dealt on its own
    (``tests/_scheduling.py`` says why and how it was measured)."""
    if config.getoption("dist") != "loadgroup":
        return None
    from _scheduling import make_scheduler  # tests/ is on sys.path (below)

    return make_scheduler(config, log)


def _persistent_compilation_cache():
    """One on-disk cache of XLA programs for the test run, locked, shared by every process.

    JAX keys a program by its lowered computation, compile options and backend, so a
    program loaded from the cache is the one a compile would produce: no check changes.
    What it saves is the compile itself: a program the other xdist worker has compiled
    (the tests of a parametrised file are dealt to both), one compiled again after
    :func:`_release_compiled_programs` dropped the in-memory programs, and those of the
    CLI tests' and examples' subprocesses (PolyaNB's evidence derivatives alone take 8 s
    to compile on these cores).

    pytest-xdist's controller loads this file before it starts the workers, so the
    folder it makes here is the one the workers and their subprocesses inherit. JAX
    writes an entry in place: a process starting the compile another is writing would
    read a partial entry (JAX then warns and compiles; a test that turns warnings into
    errors would fail). With a size limit set, JAX takes a file lock (``filelock``, a
    test extra) around every read and write of the folder; the limit is far above what
    the suite writes, so nothing is evicted. Without ``filelock`` there is no cache
    (slower, the same checks). A folder set by the caller is used as it is.
    """
    if "JAX_COMPILATION_CACHE_DIR" in os.environ or "jax" in sys.modules:
        return  # the caller's folder, or this run's (a worker inherits the controller's)
    try:
        import filelock  # noqa: F401
    except ImportError:
        return
    folder = tempfile.mkdtemp(prefix="bayesnb-tests-xla-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = folder
    os.environ.setdefault("JAX_COMPILATION_CACHE_MAX_SIZE", str(64 << 30))  # enables the lock
    # Programs that compile in under 0.1 s cost about as much to write and read back.
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.1")
    atexit.register(shutil.rmtree, folder, True)


_persistent_compilation_cache()

# tests/ itself on sys.path for its helper modules (_xla_codegen, _scheduling); then
# XLA:CPU's older fusion emitters for the suite's programs: about half the compile time
# (tests/_xla_codegen.py says why, where not, and what it measured).
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
from _xla_codegen import fast_cpu_compiles  # noqa: E402

fast_cpu_compiles()

#: Resident memory of a worker above which the compiled programs are dropped after a module.
RELEASE_ABOVE_BYTES = 3 << 30


def _resident_bytes():
    """Resident memory of this process, or None where ``/proc`` does not say."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after a test module once the worker has grown.

    A worker runs thousands of tests in one process; kept forever, the programs compiled
    for NUTS runs and traced closed forms grow the worker until an XLA compilation can
    fail for memory (two CI workers aborted in NUTS compiles late in the run). Dropping
    them after every module made every module compile again what the last one had just
    compiled (issue 41 item 9: most of a module's time in the estimator checks was XLA
    compiling), so they are dropped when the worker's resident memory passes
    ``RELEASE_ABOVE_BYTES`` (after every module where the memory cannot be read), and
    the on-disk cache above serves the programs compiled again after a drop.
    """
    yield
    import gc

    gc.collect()
    resident = _resident_bytes()
    jax = sys.modules.get("jax")
    if jax is not None and (resident is None or resident > RELEASE_ABOVE_BYTES):
        jax.clear_caches()
        gc.collect()

#: The four newsgroups of scikit-learn's text tutorial / documentation numbers.
NEWS4_CATEGORIES = ("alt.atheism", "comp.graphics", "sci.space", "talk.religion.misc")

#: First rows of the SMS file used for training (see shared/data/sms_spam_collection/README.txt).
SMS_N_TRAIN = 1672


class Split(NamedTuple):
    """A train/test split of one corpus.

    Attributes
    ----------
    X_train, X_test : ndarray or CSR matrix of shape (n_train|n_test, n_features)
    y_train, y_test : ndarray of str
    n_categories : int ndarray of shape (n_features,) or None
        Number of categories of each feature in the whole table (categorical corpora).
    """

    X_train: object
    X_test: object
    y_train: np.ndarray
    y_test: np.ndarray
    n_categories: np.ndarray | None = None


def _frozen(a):
    if sp.issparse(a):
        a = a.tocsr()
        for part in (a.data, a.indices, a.indptr):
            part.flags.writeable = False
        return a
    a = np.asarray(a)
    a.flags.writeable = False
    return a


def _freeze(split):
    return Split(*(None if v is None else _frozen(v) for v in split))


@pytest.fixture(scope="session")
def shared_data():
    """Path of ``../shared/data``; skips the requesting test when the folder is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(_MISSING)
    return SHARED_DATA


@pytest.fixture(scope="session")
def sms_counts(shared_data):
    """SMS Spam Collection word counts (CSR): first 1,672 messages train, the rest test."""
    from sklearn.feature_extraction.text import CountVectorizer

    from bayesnb.io.datasets import read_labelled_text

    texts, labels = read_labelled_text(shared_data / "sms_spam_collection" / "SMSSpamCollection")
    vec = CountVectorizer()
    X_train = vec.fit_transform(texts[:SMS_N_TRAIN])
    X_test = vec.transform(texts[SMS_N_TRAIN:])
    return _freeze(Split(X_train, X_test, labels[:SMS_N_TRAIN], labels[SMS_N_TRAIN:]))


@pytest.fixture(scope="session")
def sms_counts_dense(sms_counts):
    """:func:`sms_counts` as dense int64 arrays."""
    s = sms_counts
    return _freeze(Split(s.X_train.toarray(), s.X_test.toarray(), s.y_train, s.y_test))


@pytest.fixture(scope="session")
def news20_texts(shared_data):
    """20 Newsgroups bydate raw posts: ``{"train": (texts, labels), "test": (texts, labels)}``."""
    from bayesnb.io.datasets import read_20newsgroups_bydate

    path = shared_data / "20newsgroups_bydate" / "20news-bydate.tar.gz"
    return {subset: read_20newsgroups_bydate(path, subset=subset) for subset in ("train", "test")}


@pytest.fixture(scope="session")
def news20_counts(news20_texts):
    """All 20 newsgroups, ``CountVectorizer()`` fitted on train, CSR (11,314 / 7,532 rows)."""
    from sklearn.feature_extraction.text import CountVectorizer

    (train_texts, y_train), (test_texts, y_test) = news20_texts["train"], news20_texts["test"]
    vec = CountVectorizer()
    return _freeze(Split(vec.fit_transform(train_texts), vec.transform(test_texts), y_train, y_test))


@pytest.fixture(scope="session")
def news4_counts_dense(news20_texts):
    """Four newsgroups (:data:`NEWS4_CATEGORIES`), ``CountVectorizer(max_features=5000)``, dense."""
    from sklearn.feature_extraction.text import CountVectorizer

    parts = {}
    for subset, (texts, labels) in news20_texts.items():
        keep = np.isin(labels, NEWS4_CATEGORIES)
        parts[subset] = ([t for t, k in zip(texts, keep) if k], labels[keep])
    vec = CountVectorizer(max_features=5000)
    X_train = vec.fit_transform(parts["train"][0]).toarray()
    X_test = vec.transform(parts["test"][0]).toarray()
    return _freeze(Split(X_train, X_test, parts["train"][1], parts["test"][1]))


def _categorical_split(path, label_column):
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import OrdinalEncoder

    from bayesnb.io.datasets import read_categorical_table

    X, y = read_categorical_table(path, label_column=label_column)
    enc = OrdinalEncoder(dtype=np.int64)
    codes = enc.fit_transform(X)
    X_train, X_test, y_train, y_test = train_test_split(codes, y, random_state=0)
    n_categories = np.array([len(c) for c in enc.categories_], dtype=np.int64)
    return _freeze(Split(X_train, X_test, y_train, y_test, n_categories))


@pytest.fixture(scope="session")
def mushroom_codes(shared_data):
    """UCI mushroom: 22 ordinal-encoded features ('?' is a level), ``train_test_split(random_state=0)``."""
    return _categorical_split(shared_data / "uci_mushroom" / "agaricus-lepiota.data", label_column=0)


@pytest.fixture(scope="session")
def car_codes(shared_data):
    """UCI car evaluation: 6 ordinal-encoded features, ``train_test_split(random_state=0)``."""
    return _categorical_split(shared_data / "uci_car_evaluation" / "car.data", label_column=-1)
