r"""The product family: one conjugate family over blocks of columns, each block its own family.

Naive Bayes assumes the features independent given the class, so a model whose columns
come in blocks of different kinds (Gaussian measurements, binary flags, categories,
counts) is the product of one family per block:

.. math::

    p(x \mid c, \theta) = \prod_b p_b(x_{B_b} \mid c, \theta_b),

with independent priors on the :math:`\theta_b`. Everything a family computes is then a
sum or a tuple over blocks: statistics, posteriors, plug-in parameters and draws are
dicts from the block name to the block family's own pytree; log-likelihoods, predictives
and evidences add up. :func:`product` builds that :class:`~bayesnb.core.families.Family`
from the blocks' families, so that every layer that works through the family protocol
works for a mixed model (:class:`bayesnb.MixedNB`'s ``family_``) with no special case.

Rows of a product are :class:`BlockRows`: one piece per block, each in its own family's
validated form (category codes, :class:`~bayesnb.core.missing.MaskedX` where entries are
unobserved). A block's unobserved entries are that block's business: the product passes
each piece's mask on to its family.

Examples
--------
>>> import numpy as np
>>> from bayesnb.core import families
>>> from bayesnb.core.families.product import Block, BlockRows, product
>>> gauss, bern = families.get("gaussian"), families.get("bernoulli")
>>> fam = product([Block("g", gauss, np.array([0])), Block("b", bern, np.array([1]))], n_features=2)
>>> X = BlockRows([np.array([[0.1], [0.3], [2.0]]), np.array([[1], [1], [0]])], (3, 2))
>>> y = np.array([0, 0, 1])
>>> stats = fam.stats(X, y, 2)
>>> prior = fam.default_prior(stats)
>>> total = fam.log_evidence(prior, stats)
>>> parts = gauss.log_evidence(prior["g"], stats.blocks["g"]) + bern.log_evidence(prior["b"], stats.blocks["b"])
>>> bool(np.isclose(total, parts))
True
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np

from bayesnb.core.families.protocol import Family
from bayesnb.core.missing import MaskedX
from bayesnb.core.stats import ProductStats

__all__ = ["Block", "BlockRows", "product"]


class Block(NamedTuple):
    """One block of a product: its name, family and columns, and the options its family takes.

    Attributes
    ----------
    name : str
        The block's name (the key of its pytrees in the product's dicts).
    family : Family
    columns : int ndarray
        The block's columns, positions in the product's rows.
    stats_options : dict
        Keyword options of the block family's ``stats`` (e.g. ``n_categories``).
    point_options : dict
        ``kind -> keyword options`` of the block family's ``point`` (e.g. a Gaussian's
        ``var_smoothing``); a kind not listed takes none.
    """

    name: str
    family: Family
    columns: Any
    stats_options: dict = {}
    point_options: dict = {}


class BlockRows:
    """Rows of a product, one piece per block (in the order of the blocks).

    Attributes
    ----------
    parts : list
        One validated piece per block: an array, a CSR matrix, or a
        :class:`~bayesnb.core.missing.MaskedX`.
    shape : tuple (n_samples, n_features)
    validated : bool
        False where the pieces are the raw columns still to be validated by each block's
        estimator (what a mixed model's ``fit`` hands its blocks).
    """

    __slots__ = ("parts", "shape", "validated")

    def __init__(self, parts, shape, validated=True):
        self.parts = list(parts)
        self.shape = tuple(shape)
        self.validated = validated

    def rows(self, start, stop):
        """Rows ``start:stop`` of every piece."""
        n = len(range(*slice(start, stop).indices(self.shape[0])))
        return BlockRows([_piece_rows(p, start, stop) for p in self.parts], (n, self.shape[1]), self.validated)


def _piece_rows(piece, start, stop):
    if isinstance(piece, (MaskedX, BlockRows)):
        return piece.rows(start, stop)
    if hasattr(piece, "iloc"):
        return piece.iloc[start:stop]
    return piece[start:stop]


def _split(piece):
    """``(X, mask)`` of one block's piece of rows."""
    if isinstance(piece, MaskedX):
        return piece.X, piece.mask
    return piece, None


def _all(blocks, member):
    return all(getattr(b.family, member) is not None for b in blocks)


def product(blocks, n_features):
    """The family of the product of ``blocks``.

    Parameters
    ----------
    blocks : sequence of Block
        The blocks, in the order of the pieces of the rows (:class:`BlockRows`).
    n_features : int
        Columns of a row of the product; a column in no block (a mixed model's dropped
        remainder) is NaN in simulated rows.

    Returns
    -------
    Family
        Named ``"product"``, not registered (a product is made of registered families).
        Its ``blocks`` member holds ``blocks``; its prior, posterior and parameter pytrees
        are dicts by block name; its statistics :class:`ProductStats`. Optional members
        (``feature_log_odds``, ``expected_log_likelihood``, ``log_density``,
        ``relevance_log_bayes_factor``) are set where every block's family has them.
    """
    blocks = tuple(Block(*b) if not isinstance(b, Block) else b for b in blocks)
    names = [b.name for b in blocks]
    if len(set(names)) != len(names):
        raise ValueError(f"block names must be distinct, got {names}")

    def stats(X, y_index, n_classes, weight=None, mask=None):
        if mask is not None:
            raise ValueError("a product takes each block's unobserved entries in its own piece of the rows")
        out = {
            b.name: _on_piece(b.family.stats, part, y_index, n_classes, weight, **b.stats_options)
            for b, part in zip(blocks, X.parts)
        }
        w = None if weight is None else np.asarray(weight, dtype=np.float64)
        counts = np.bincount(np.asarray(y_index, dtype=np.intp), weights=w, minlength=n_classes).astype(np.float64)
        return ProductStats(counts, out)

    def posterior(prior, stats):
        return {b.name: b.family.posterior(prior[b.name], stats.blocks[b.name]) for b in blocks}

    def point(prior, stats, kind, **options):
        return {
            b.name: b.family.point(prior[b.name], stats.blocks[b.name], kind, **{**b.point_options.get(kind, {}), **options})
            for b in blocks
        }

    def log_likelihood(params, X, prior, mask=None):
        _no_mask(mask)
        return sum(
            _on_piece(b.family.log_likelihood, part, prior[b.name], params=params[b.name])
            for b, part in zip(blocks, X.parts)
        )

    def log_predictive(posterior, X, mask=None):
        _no_mask(mask)
        return sum(
            _on_piece(b.family.log_predictive, part, params=posterior[b.name])
            for b, part in zip(blocks, X.parts)
        )

    def log_evidence(prior, stats):
        return sum(b.family.log_evidence(prior[b.name], stats.blocks[b.name]) for b in blocks)

    def sample(key, dist, n):
        # One key per block, in the order of the blocks (the estimators' own streams).
        keys = jax.random.split(key, len(blocks))
        return {b.name: b.family.sample(k, dist[b.name], n) for k, b in zip(keys, blocks)}

    def simulate(key, params, y_index, stats):
        keys = jax.random.split(key, len(blocks))
        X = np.full((np.shape(y_index)[0], n_features), np.nan)
        for k, b in zip(keys, blocks):
            X[:, b.columns] = np.asarray(b.family.simulate(k, params[b.name], y_index, stats.blocks[b.name]))
        return X

    def default_prior(stats, **options):
        return {b.name: b.family.default_prior(stats.blocks[b.name], **options) for b in blocks}

    def feature_log_odds(params, prior):
        # The blocks' terms side by side, their features mapped to the product's columns.
        parts = [b.family.feature_log_odds(params[b.name], prior[b.name]) for b in blocks]
        terms = np.concatenate([np.asarray(p[0]) for p in parts], axis=-1)
        feature = np.concatenate([np.asarray(b.columns)[np.asarray(p[1])] for b, p in zip(blocks, parts)])
        any_category = any(p[2] is not None for p in parts)
        category = (
            np.concatenate([np.full(np.size(p[1]), -1) if p[2] is None else np.asarray(p[2]) for p in parts])
            if any_category else None
        )
        unit = "; ".join(f"{b.name}: {p[3]}" for b, p in zip(blocks, parts))
        return terms, feature, category, unit

    def expected_log_likelihood(posterior, X, mask=None):
        _no_mask(mask)
        return sum(
            _on_piece(b.family.expected_log_likelihood, part, params=posterior[b.name])
            for b, part in zip(blocks, X.parts)
        )

    def log_density(dist, params, raise_by=0.0):
        return sum(b.family.log_density(dist[b.name], params[b.name], raise_by) for b in blocks)

    def relevance_log_bayes_factor(prior, stats):
        out = np.full(n_features, np.nan)
        for b in blocks:
            out[np.asarray(b.columns)] = np.asarray(b.family.relevance_log_bayes_factor(prior[b.name], stats.blocks[b.name]))
        return out

    return Family(
        name="product",
        prior_type=dict,
        support="mixed",
        hyperparameters=(),
        stats=stats,
        posterior=posterior,
        point=point,
        log_likelihood=log_likelihood,
        log_predictive=log_predictive,
        log_evidence=log_evidence,
        sample=sample,
        simulate=simulate,
        default_prior=default_prior,
        relevance_log_bayes_factor=relevance_log_bayes_factor if _all(blocks, "relevance_log_bayes_factor") else None,
        feature_log_odds=feature_log_odds if _all(blocks, "feature_log_odds") else None,
        expected_log_likelihood=expected_log_likelihood if _all(blocks, "expected_log_likelihood") else None,
        log_density=log_density if _all(blocks, "log_density") else None,
        blocks=blocks,
    )


def _on_piece(fn, part, *args, params=None, **options):
    """``fn([params,] values, *args, mask=mask, **options)`` on one block's piece of rows.

    The protocol's functions take the rows after a leading parameter pytree (likelihoods,
    predictives) or first (statistics); the piece's unobserved entries go in as ``mask``.
    """
    values, mask = _split(part)
    lead = () if params is None else (params,)
    if mask is None:
        return fn(*lead, values, *args, **options)
    return fn(*lead, values, *args, mask=mask, **options)


def _no_mask(mask):
    if mask is not None:
        raise ValueError("a product takes each block's unobserved entries in its own piece of the rows")
