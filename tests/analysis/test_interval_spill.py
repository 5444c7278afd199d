"""Issue 19: the temporary file of :func:`bayesnb.analysis.uncertainty.proba_interval` is
bounded, and failures to write or read it back fall back to drawing again.

When the draws of every row exceed one block, the interval writes them (n_draws x
n_rows x n_classes float64) to an unnamed temporary file and reads them back block of
rows by block. Checked here, each against the interval with the file (same draws; equal
up to the summation order of a block shape, see ``tests/_float_paths.py``):

* beyond ``SPILL_MAX_BYTES``, or beyond ``SPILL_FREE_FRACTION`` of the free space of the
  temporary directory, no file is opened and the parameters are drawn again per block of
  rows;
* an ``OSError`` while writing the file falls back to drawing again for every block;
* an ``OSError`` while reading back a later block keeps the blocks already done and draws
  again for the rest only; the file is closed either way.
"""

from __future__ import annotations

import shutil
import tempfile

import pytest
from _float_paths import assert_equal_up_to_block_shape
from test_uncertainty import _zipf_counts

from bayesnb import MultinomialNB
from bayesnb.analysis import uncertainty as U
from bayesnb.core._fitted import draw_block

N_DRAWS, LEVEL, N_ROWS = 60, 0.8, 90


@pytest.fixture(scope="module")
def setting():
    X, y = _zipf_counts(N_ROWS, 40, 6, 3, seed=1)
    clf = MultinomialNB(alpha=0.5).fit(X, y)
    source = clf._draw_source(X, N_DRAWS, 11)
    block = draw_block(N_DRAWS, source.draw_size) * source.draw_size
    chunk = max(block, 2 * N_DRAWS * 3 * 30)  # 3 blocks of 30 rows
    n_param_blocks = -(-N_DRAWS // draw_block(N_DRAWS, source.draw_size))
    reference = U.proba_interval(source, LEVEL, chunk_entries=chunk)
    return source, chunk, n_param_blocks, reference


def _counting(source):
    sampled = []

    def sample(key, n):
        sampled.append(n)
        return source.sample(key, n)

    return source._replace(sample=sample), sampled


def _track_files(monkeypatch):
    """Record every temporary file the interval opens (the list is filled as they open)."""
    opened = []
    real = tempfile.TemporaryFile

    def tracked(*args, **kwargs):
        f = real(*args, **kwargs)
        opened.append(f)
        return f

    monkeypatch.setattr(tempfile, "TemporaryFile", tracked)
    return opened


def _assert_reference(result, reference):
    # The same draws, scored on blocks of rows of another shape (see tests/_float_paths.py).
    assert_equal_up_to_block_shape(result[0], reference[0])
    assert_equal_up_to_block_shape(result[1], reference[1])


def test_the_reference_goes_through_the_file_once(setting, monkeypatch):
    source, chunk, n_param_blocks, reference = setting
    opened = _track_files(monkeypatch)
    counting, sampled = _counting(source)
    _assert_reference(U.proba_interval(counting, LEVEL, chunk_entries=chunk), reference)
    assert len(opened) == 1 and opened[0].closed
    assert len(sampled) == n_param_blocks  # each parameter block drawn once


def _no_file(*args, **kwargs):
    raise AssertionError("no temporary file may be opened beyond the bound")


@pytest.mark.parametrize("bound", ["limit", "free space"])
def test_beyond_the_disk_bound_no_file_is_written(setting, monkeypatch, bound):
    source, chunk, n_param_blocks, reference = setting
    need = N_DRAWS * N_ROWS * 3 * 8
    if bound == "limit":
        monkeypatch.setattr(U, "SPILL_MAX_BYTES", need - 1)
    else:
        total = shutil.disk_usage(tempfile.gettempdir())
        monkeypatch.setattr(shutil, "disk_usage", lambda path: total._replace(free=2 * need - 8))
    monkeypatch.setattr(tempfile, "TemporaryFile", _no_file)
    counting, sampled = _counting(source)
    _assert_reference(U.proba_interval(counting, LEVEL, chunk_entries=chunk), reference)
    assert len(sampled) == 3 * n_param_blocks  # drawn again for each of the 3 blocks of rows


def test_at_the_disk_bound_the_file_is_written(setting, monkeypatch):
    # The bound is inclusive: a file of exactly SPILL_MAX_BYTES is written.
    source, chunk, n_param_blocks, reference = setting
    monkeypatch.setattr(U, "SPILL_MAX_BYTES", N_DRAWS * N_ROWS * 3 * 8)
    counting, sampled = _counting(source)
    _assert_reference(U.proba_interval(counting, LEVEL, chunk_entries=chunk), reference)
    assert len(sampled) == n_param_blocks


def test_an_error_while_writing_falls_back_to_drawing_again(setting, monkeypatch):
    source, chunk, n_param_blocks, reference = setting
    calls = []
    real = U._write_all

    def failing(f, offset, array):
        calls.append(offset)
        if len(calls) > 3:
            raise OSError(28, "No space left on device")
        real(f, offset, array)

    monkeypatch.setattr(U, "_write_all", failing)
    counting, sampled = _counting(source)
    _assert_reference(U.proba_interval(counting, LEVEL, chunk_entries=chunk), reference)
    # The first parameter block went to the file before the failure; then every block
    # of rows drew every parameter block again.
    assert len(sampled) == 1 + 3 * n_param_blocks


def test_an_error_while_reading_back_keeps_the_rows_done(setting, monkeypatch):
    source, chunk, n_param_blocks, reference = setting
    opened = _track_files(monkeypatch)
    reads = []
    real = U._read_all

    def failing(f, offset, out):
        reads.append(offset)
        if len(reads) == 2:
            raise OSError(5, "Input/output error")
        real(f, offset, out)

    monkeypatch.setattr(U, "_read_all", failing)
    counting, sampled = _counting(source)
    _assert_reference(U.proba_interval(counting, LEVEL, chunk_entries=chunk), reference)
    # Written once; the first block of rows read back; the other two drawn again.
    assert len(sampled) == n_param_blocks + 2 * n_param_blocks
    assert len(opened) == 1 and opened[0].closed


def test_an_error_opening_the_file_falls_back(setting, monkeypatch):
    source, chunk, n_param_blocks, reference = setting

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_space)
    counting, sampled = _counting(source)
    _assert_reference(U.proba_interval(counting, LEVEL, chunk_entries=chunk), reference)
    assert len(sampled) == 3 * n_param_blocks


def test_a_planted_fallback_with_other_draws_is_caught(setting, monkeypatch):
    # A fallback that drew other parameters (another key) than the file held would give
    # other intervals: the bit-equality with the reference is not vacuous.
    import jax

    source, chunk, _, reference = setting
    real = U._iter_by_rows

    def other_draws(source, chunk, blocks, rows_chunk):
        return real(source._replace(key=jax.random.fold_in(source.key, 1)), chunk, blocks, rows_chunk)

    monkeypatch.setattr(U, "_iter_by_rows", other_draws)

    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_space)
    with pytest.raises(AssertionError):
        _assert_reference(U.proba_interval(source, LEVEL, chunk_entries=chunk), reference)


def test_small_parameters_are_kept_and_no_file_is_written(monkeypatch):
    """Where the parameter draws of every block fit an eighth of the bound but the
    probabilities of every row do not fit one block, the blocks are drawn once and kept:
    each block of rows is scored under them (no temporary file, no second draw), and
    the interval is the one through the file (the same draws; bit for bit here, where
    the likelihood is a sparse product whose rows do not depend on how they are cut,
    to rounding for families whose rounding does)."""
    X, y = _zipf_counts(400, 40, 6, 3, seed=1)
    clf = MultinomialNB(alpha=0.5).fit(X, y)
    source = clf._draw_source(X, N_DRAWS, 11)
    # Parameters: one block of 64 draws (the last block is drawn at full size) x 120
    # <= chunk / 8; probabilities: 60 draws x 400 rows x 3 classes > chunk / 2.
    chunk = 64_000
    assert 64 * source.draw_size <= chunk // 8 < chunk // 2 < N_DRAWS * 400 * 3
    opened = _track_files(monkeypatch)
    counting, sampled = _counting(source)
    kept = U.proba_interval(counting, LEVEL, chunk_entries=chunk)
    assert opened == []
    n_blocks = -(-N_DRAWS // draw_block(N_DRAWS, source.draw_size))
    assert len(sampled) == n_blocks  # each parameter block drawn once
    # The same draws through the file (a bound under which the parameters are not kept).
    monkeypatch.setattr(U, "_kept_blocks", lambda source, chunk: None)
    through_file = U.proba_interval(source, LEVEL, chunk_entries=chunk)
    assert len(opened) == 1
    _assert_reference(kept, through_file)
    # And the interval of all the draws at once.
    _assert_reference(kept, U.credible_interval(U.proba_draws(source), LEVEL))
