r"""The model compiler: numpyro models of the naive-Bayes shape recognised as the registered families.

A user writes the generative story of a naive Bayes classifier in numpyro, a function
``model(X, y, **kwargs)``:

.. math::

    \pi \sim \mathrm{Dir}(\beta) \text{ (or fixed)}, \qquad
    \theta_{c\cdot} \sim \text{prior} \quad (\text{per class, per feature}), \qquad
    y_i \sim \mathrm{Cat}(\pi), \qquad x_{i,B} \mid y_i \sim p(x_B \mid \theta_{y_i})

with one observed site per block of columns :math:`B` of ``X``. :func:`recognise_model`
traces it with :mod:`numpyro.handlers` (``trace`` and ``seed``, the data plugged in) and
the sites' relations of :func:`numpyro.infer.inspect.get_model_relations` (who depends on
whom; :func:`_sample_relations` reads them from the first run), finds the label
site (the observed site holding ``y``), the class proportions, the observed feature
sites and the latent parameter sites, and asks every registered family
(:mod:`bayesnb.core.families`, its ``recognise`` member) whether the (prior, likelihood)
pair of each feature site is its conjugate pair. The result is a pure
:class:`CompiledModel`: per observed site its family, its prior pytree (constants read
from the model; a hyperparameter that is itself a sample site as a :class:`Hyperprior`),
its columns of ``X``, and the class prior. :func:`bayesnb.compile_model` turns it into an
estimator.

How a site is read: probes
--------------------------
The relations of the sites are read by *probing* the model: it is run several times
(different seeds, so that every latent site takes other values: values in its support
drawn with NumPy, see :func:`_probe_values`) on probe data (rows
``i`` of ``X`` holding the distinct values ``i * n_features + j``, so that each observed
value names its column, and labels cycling over the classes), and the parameters of
each likelihood are compared, to 1e-9 relative, with the latent values indexed by the
label: ``probs == theta[y]`` in every probe is the link of a Bernoulli site to its Beta
site, whatever code computes it. A prior's parameter that is the same in every probe is
a constant; one that equals the value of a top-level sample site in every probe is a
hyperprior. Anything else is refused with :class:`~bayesnb.exceptions.ModelCompileError`
naming the site: never a silent wrong answer.

The same model may be written with plates, ``expand``, ``to_event`` or a parameter
array, with the plates of classes and features in either order: a latent's axes are
matched by their values, not by how they were declared.

Refused: a likelihood whose parameter is not a latent of the family's conjugate prior
indexed by the label (a Normal prior on a Bernoulli's logit, a Gamma prior on a Normal's
scale), a feature that depends on another feature, a latent variable inside the data
plate (one per row), a parameter shared by the classes where the family has one per
class, a latent site no pair uses, a ``numpyro.factor``, a prior that depends on the
data, an observed site that is not a block of columns of ``X``.

The cross-check of a compiled model against NUTS on the model as written is
:func:`crosscheck_model` (:func:`run_nuts_model` runs the sampler), with the rule of
:func:`bayesnb.ppl.mcmc.crosscheck`.

Examples
--------
>>> import numpy as np
>>> import numpyro
>>> import numpyro.distributions as dist
>>> from bayesnb.ppl.compile import recognise_model
>>> def model(X, y):
...     pi = numpyro.sample("pi", dist.Dirichlet(np.ones(2)))
...     with numpyro.plate("class", 2, dim=-2), numpyro.plate("feature", X.shape[1], dim=-1):
...         theta = numpyro.sample("theta", dist.Beta(2.0, 3.0))
...     with numpyro.plate("data", X.shape[0], dim=-2):
...         y = numpyro.sample("y", dist.Categorical(pi), obs=y[:, None])
...     with numpyro.plate("rows", X.shape[0], dim=-2), numpyro.plate("cols", X.shape[1], dim=-1):
...         numpyro.sample("x", dist.Bernoulli(theta[y[:, 0]]), obs=X)
>>> X, y = np.array([[1, 0, 1], [0, 1, 1]]), np.array([0, 1])
>>> compiled = recognise_model(model, X, y)
>>> site = compiled.sites[0]
>>> site.site, site.family, site.prior.concentration1.shape, site.columns.tolist()
('x', 'bernoulli', (2, 3), [0, 1, 2])
>>> compiled.labels.concentration.tolist()
[1.0, 1.0]
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import numpy as np

from bayesnb.core import _fitted, families
from bayesnb.core._x64 import enable_x64
from bayesnb.exceptions import ModelCompileError

__all__ = [
    "ClassSpec",
    "CompiledModel",
    "Hyperprior",
    "Role",
    "SiteSpec",
    "SiteView",
    "crosscheck_model",
    "kind",
    "recognise_model",
    "run_nuts_model",
]

#: Runs of the model with other seeds on probe data.
N_PROBES = 3
#: Relative tolerance of the probes' comparisons (float64 throughout).
RTOL = 1e-9
#: Most rows of the probe data.
PROBE_ROWS = 64


class Hyperprior(NamedTuple):
    """A prior hyperparameter that is itself a sample site of the model.

    Attributes
    ----------
    site : str
        Its site name.
    distribution : numpyro.distributions.Distribution
        Its distribution in the model (constant parameters), the form in which the
        estimators take an integrated hyperparameter (e.g. ``alpha=dist.Gamma(2, 1)``).
    """

    site: str
    distribution: Any


class Role(NamedTuple):
    """Where a family's canonical variable lives in the model.

    Attributes
    ----------
    site : str
        The latent site.
    class_axis : int or None
        Its axis of classes (in the site's value); None where shared by the classes.
    tail : tuple of int
        The canonical shape after the class axis (e.g. ``(n_features,)``).
    transform : callable or None
        From the site's value to the canonical variable (e.g. a Cholesky factor to its
        covariance), applied on the trailing axes.
    """

    site: str
    class_axis: int | None
    tail: tuple
    transform: Callable | None = None

    def canonical(self, value, n_classes, lead=0):
        """The canonical array of ``value`` (``lead`` leading axes of draws kept)."""
        value = np.asarray(value)
        lead_shape = value.shape[:lead]
        if self.class_axis is None:
            out = value.reshape(lead_shape + tuple(self.tail))
        else:
            out = np.moveaxis(value, lead + self.class_axis, lead).reshape(lead_shape + (n_classes,) + tuple(self.tail))
        return out if self.transform is None else np.asarray(self.transform(out))


class SiteSpec(NamedTuple):
    """One observed feature site recognised as a family.

    Attributes
    ----------
    site : str
    family : str
        The registered family's name.
    prior : the family's prior pytree
        Arrays of shape (n_classes, n_columns, ...) read from the model; a field may be
        a :class:`Hyperprior`.
    columns : int ndarray of shape (n_columns,)
        The columns of ``X`` the site observes, in its order.
    roles : dict of str -> Role
        The family's canonical variables (``feature_probs``, ``loc``, ``var``, ``rate``,
        ``covariance``) and the latent sites holding them.
    """

    site: str
    family: str
    prior: Any
    columns: np.ndarray
    roles: dict


class ClassSpec(NamedTuple):
    """The labels and the class proportions.

    Attributes
    ----------
    site : str
        The label site.
    proportions_site : str or None
        The Dirichlet site of the class proportions (None: fixed).
    concentration : ndarray of shape (n_classes,), Hyperprior or None
        Its concentration (None where fixed).
    probs : ndarray of shape (n_classes,) or None
        The fixed proportions (None where Dirichlet).
    """

    site: str
    proportions_site: str | None
    concentration: Any
    probs: np.ndarray | None


class CompiledModel(NamedTuple):
    """What :func:`recognise_model` read from a model (a pure description, no estimator).

    Attributes
    ----------
    sites : tuple of SiteSpec
        The observed feature sites, in the order of the model.
    labels : ClassSpec
    n_classes : int
    n_features : int
        Columns of ``X``.
    hyperpriors : dict of str -> Hyperprior
        Every hyperparameter site.
    """

    sites: tuple
    labels: ClassSpec
    n_classes: int
    n_features: int
    hyperpriors: dict


# ----------------------------------------------------------------------------- tracing


def _base(fn):
    """The distribution inside ``Independent`` / ``ExpandedDistribution`` / ``MaskedDistribution``."""
    import numpyro.distributions as dist

    wrappers = (dist.Independent, dist.ExpandedDistribution, dist.MaskedDistribution)
    while isinstance(fn, wrappers):
        fn = fn.base_dist
    return fn


def kind(fn):
    """The name of a numpyro distribution, whatever its parametrisation (``BernoulliLogits`` -> ``"Bernoulli"``)."""
    name = type(_base(fn)).__name__
    for suffix in ("Probs", "Logits"):
        if name.endswith(suffix) and name != suffix:
            return name[: -len(suffix)]
    return name


def _np(value):
    return np.asarray(jax.device_get(value), dtype=np.float64)


class _Trace:
    """One run of the model: its sites, their values and distributions."""

    def __init__(self, trace, y):
        self.sites = trace
        self.y = y

    def value(self, name):
        return _np(self.sites[name]["value"])

    def fn(self, name):
        return self.sites[name]["fn"]

    def attr(self, name, attr):
        value = getattr(_base(self.fn(name)), attr, None)
        if value is None:
            raise AttributeError(attr)
        return _np(value)


def _in_support(constraint, shape, rng):
    """A NumPy value of ``shape`` inside ``constraint``, or None where NumPy has no map into it.

    Uniform values ``u`` on (-2, 2) are mapped elementwise: the reals keep ``u``, a lower
    bound ``l`` gives ``l + exp(u)``, an interval ``(l, h)`` gives ``l + (h - l) * sigmoid(u)``,
    the simplex a softmax of ``u`` over the last axis. Each probe run pays only NumPy for
    them, where numpyro's transforms would be eager JAX operations (a compilation per
    operation and shape: 2.7 s of an 11 s first compile of a 30-site model).
    """
    from numpyro.distributions import constraints

    if getattr(constraint, "is_discrete", True):  # a discrete latent: numpyro draws it
        return None
    if isinstance(constraint, constraints.independent):
        return _in_support(constraint.base_constraint, shape, rng)
    u = rng.uniform(-2.0, 2.0, size=shape)
    if constraint is constraints.real:
        return u
    if constraint is constraints.simplex:
        e = np.exp(u)
        return e / e.sum(axis=-1, keepdims=True)
    if isinstance(constraint, constraints.interval):
        low, high = np.asarray(constraint.lower_bound, np.float64), np.asarray(constraint.upper_bound, np.float64)
        value = low + (high - low) / (1.0 + np.exp(-u))
        return value if np.all((value > low) & (value < high)) else None
    if isinstance(constraint, constraints.greater_than):
        low = np.asarray(constraint.lower_bound, np.float64)
        value = low + np.exp(u)
        return value if np.all(value > low) else None
    return None


def _probe_values(seed, as_numpy=False):
    """A numpyro ``substitute_fn`` giving each latent site a value in its support, drawn by NumPy.

    The probes need latent values that differ from run to run, not draws from the
    prior: drawing them with numpyro compiles JAX's samplers (Gamma, Dirichlet, Beta)
    once per shape, about 80% of the time compiling a model took (11 s of 13 s for a
    30-column Beta-Bernoulli model). Uniform values on (-2, 2) mapped into the support
    are as good: by NumPy for the reals, bounded and interval supports and the simplex
    (:func:`_in_support`), through numpyro's ``biject_to`` for any other (a covariance
    matrix). A site without such a map (a discrete latent) is drawn by numpyro as before.

    With ``as_numpy`` the NumPy values are given to the model as they are: its indexing
    by the label (``theta[y]``, a JAX gather per site and run, the most expensive
    operation of a run) is then NumPy's. Otherwise they are put on the device as JAX
    arrays (for a model using JAX-only methods such as ``.at`` on sampled values).
    """
    from numpyro.distributions.transforms import biject_to

    rng = np.random.default_rng([seed, 0x5EED])

    def value(msg):
        if msg["type"] != "sample" or msg.get("is_observed") or msg.get("value") is not None:
            return None
        fn = msg["fn"]
        try:
            support, shape = fn.support, tuple(fn.shape(msg.get("sample_shape", ())))
        except (NotImplementedError, AttributeError, TypeError, ValueError):
            return None
        try:
            direct = _in_support(support, shape, rng)
        except ValueError:  # bounds that do not broadcast to the value: numpyro's map below
            direct = None
        # jax.device_put, not jnp.asarray: the latter is a JAX operation compiled per shape.
        if direct is not None:
            return direct if as_numpy else jax.device_put(direct)
        try:
            to_support = biject_to(support)
            shape = to_support.inverse_shape(shape)
        except (NotImplementedError, AttributeError, TypeError, ValueError):
            return None
        return to_support(jax.device_put(rng.uniform(-2.0, 2.0, size=shape)))

    return value


def _seed_key(seed):
    """``jax.random.PRNGKey(seed)``, built without running JAX where the keys are threefry's.

    ``PRNGKey`` is two JAX operations compiled on first use (a tenth of a second); a
    threefry key of a seed below 2**32 is the pair ``[0, seed]`` of uint32.
    """
    if jax.config.jax_default_prng_impl == "threefry2x32" and 0 <= seed < 2**32:
        return jax.device_put(np.array([0, seed], dtype=np.uint32))
    return jax.random.PRNGKey(seed)


def _run(model, X, y, kwargs, seed, as_numpy=False):
    """One run of the model on ``X, y``, latent values from :func:`_probe_values` (``seed``, ``as_numpy``)."""
    import numpyro
    from numpyro import handlers

    with numpyro.validation_enabled(False):
        # seed outside substitute: a site the probe values substitute takes no key (a key
        # split per site was an eager JAX operation, and a compilation, in every run).
        probe = handlers.seed(handlers.substitute(model, substitute_fn=_probe_values(seed, as_numpy)),
                              rng_seed=_seed_key(seed))
        trace = handlers.trace(probe).get_trace(X, y, **kwargs)
    return _Trace(trace, y)


def _numpyro_own(fn):
    """Whether a distribution and those it wraps (base, transforms) are numpyro's own classes.

    Their pytree leaves are the parameters their log density is computed from; a class
    of the user's may keep a parameter outside its pytree.
    """
    while fn is not None:
        parts = [fn, *getattr(fn, "transforms", ())]
        if not all(type(part).__module__.startswith("numpyro.distributions") for part in parts):
            return False
        fn = getattr(fn, "base_dist", None)
    return True


def _sample_relations(model, args, kwargs, run):
    """``get_model_relations(model, args, kwargs)["sample_sample"]`` of numpyro, read with a run's values.

    numpyro's :func:`~numpyro.infer.inspect.get_model_relations` first runs the model
    abstractly (``jax.eval_shape``, every latent drawn by numpyro's samplers) only for
    the sites' shapes, then tracks which sample sites each site's log density depends on
    (:func:`numpyro.ops.provenance.eval_provenance`, abstract too). The compiler already
    has a run of the model on the same data (``run``, its first): its values stand for
    that first pass (half the time of the relations of a 30-column model). The second
    pass is numpyro's, with the sample, deterministic and param sites substituted by
    inputs whose provenance is tracked, except that what is tracked of a sample site of
    numpyro's own distributions (:func:`_numpyro_own`) is what its log density is computed
    from, the parameters of its distribution (the leaves of its pytree) and its value,
    rather than the log density itself: the same sites, without tracing every log
    density (60% of the rest for 30 columns). A distribution of the user's is tracked
    through its log density, as numpyro does.

    Returns
    -------
    dict of str -> list of str
        Every sample or deterministic site to the sample or deterministic sites upstream of it.
    """
    from numpyro import handlers
    from numpyro.ops.provenance import eval_provenance

    sites = run.sites
    names = [k for k, s in sites.items() if s["type"] in ("sample", "deterministic")]
    values = {k: sites[k]["value"] for k in names}
    params = {k: s["value"] for k, s in sites.items() if s["type"] == "param"}

    class substitute_deterministic(handlers.substitute):
        def process_message(self, msg):
            if msg["type"] == "deterministic":
                msg["args"] = (msg["value"],)
                msg["kwargs"] = {}
                msg["value"] = self.data.get(msg["name"])
                msg["fn"] = lambda x: x

    def log_probs(**sample):
        with handlers.trace() as tr, handlers.seed(rng_seed=0):
            with handlers.substitute(data=sample), substitute_deterministic(data=sample):
                model(*args, **kwargs)
        out = {}
        for name, site in tr.items():
            if site["type"] == "sample":
                fn = site["fn"]
                leaves = jax.tree.leaves(fn) if _numpyro_own(fn) else None
                if leaves is not None and all(isinstance(leaf, (jax.Array, np.ndarray, float, int)) for leaf in leaves):
                    out[name] = (leaves, site["value"])
                else:  # a distribution of the user's: its log density, as numpyro tracks it
                    out[name] = fn.log_prob(site["value"])
            elif site["type"] == "deterministic":
                out[name] = site["args"][0]
        return out

    deps = eval_provenance(log_probs, **values, **params)
    found = {}
    for name, tree in deps.items():
        found[name] = frozenset().union(*jax.tree.leaves(tree, is_leaf=lambda leaf: isinstance(leaf, frozenset)))
    return {name: [v for v in names if v in found.get(name, ()) and v != name] for name in names}


def _frames(site):
    return [f for f in site.get("cond_indep_stack", ()) if f.size is not None]


def _axis_of(site, frame):
    """The axis of ``frame`` in the site's value."""
    return len(site["fn"].batch_shape) + frame.dim


def _row_axis(site, n_rows):
    for frame in _frames(site):
        if frame.size == n_rows and frame.dim is not None:
            return _axis_of(site, frame)
    return 0


def _close(a, b):
    return a.shape == b.shape and np.allclose(a, b, rtol=RTOL, atol=1e-12)


def _broadcasts_to(value, target):
    """Whether ``target`` is ``value`` broadcast (a hyperparameter standing for a whole parameter)."""
    try:
        return _close(np.broadcast_to(value, target.shape), target)
    except ValueError:  # not broadcastable to it
        return False


# ----------------------------------------------------------------------------- the view of one site


class _Probe:
    """What a family's :meth:`SiteView.constant` function reads of one run."""

    def __init__(self, view, run):
        self._view, self._run = view, run

    def value(self, link):
        """The canonical value of a linked latent site in this run."""
        return link.canonical(self._run.value(link.site), self._view.n_classes)

    def param(self, link, attr, event_dims=0):
        """The canonical parameter ``attr`` of a linked site's distribution in this run."""
        return self._view._field_in(self._run, link, attr, event_dims)


class _Link(NamedTuple):
    site: str
    class_axis: int | None
    tail: tuple
    event_dim: int
    prior_kind: str

    def canonical(self, value, n_classes):
        return Role(self.site, self.class_axis, self.tail).canonical(value, n_classes)


class SiteView:
    """One observed feature site, as the families' ``recognise`` members read it.

    Attributes
    ----------
    name : str
        The site.
    likelihood_kind : str
        Its distribution (``"Bernoulli"``, ``"Normal"``, ...; see :func:`kind`).
    n_columns : int
        Columns of ``X`` it observes.
    n_classes : int
    """

    def __init__(self, compiler, name, n_columns):
        self._c = compiler
        self.name = name
        self.n_columns = n_columns
        self.n_classes = compiler.n_classes
        self.likelihood_kind = kind(compiler.t0.fn(name))

    # -- errors
    def refuse(self, reason):
        """Raise :class:`~bayesnb.exceptions.ModelCompileError` for this site."""
        raise ModelCompileError(self.name, reason)

    def _describe(self, sites):
        return ", ".join(f"{s!r} ({kind(self._c.t0.fn(s))})" for s in sites) or "no latent site"

    # -- the likelihood
    def event_size(self, attr):
        """The last axis of the likelihood's parameter ``attr`` (e.g. the categories of ``probs``)."""
        return int(np.shape(self._c.t0.attr(self.name, attr))[-1])

    def _likelihood_param(self, run, attr, transform):
        site = run.sites[self.name]
        value = np.asarray(site["value"])
        base = _base(site["fn"])
        param = _np(getattr(base, attr))
        batch = value.shape[: value.ndim - base.event_dim]
        target = batch + param.shape[len(base.batch_shape):]
        param = np.broadcast_to(param, target)
        param = np.moveaxis(param, _row_axis(site, run.y.shape[0]), 0).reshape(run.y.shape[0], -1)
        return param if transform is None else transform(param)

    def link(self, attr, prior, tail, *, transform=None, param_name=None, shared=False, expect=""):
        """The latent site whose value, indexed by the label, is the likelihood's ``attr``.

        Parameters
        ----------
        attr : str
            The likelihood's parameter (``"probs"``, ``"rate"``, ``"loc"``, ...).
        prior : str
            The distribution the latent site must have (``"Beta"``, ...).
        tail : tuple of int
            The canonical shape of the latent after its class axis.
        transform : callable, optional
            Applied to the parameter before the comparison (``np.square`` of a scale).
        param_name : str, optional
            How messages name the transformed parameter.
        shared : bool
            Whether the latent may be shared by the classes (one value for all).
        expect : str
            The conjugate pattern, for messages.

        Returns
        -------
        link
            With ``site``, ``class_axis``, ``tail``, ``prior_kind``.

        Raises
        ------
        ModelCompileError
            If no latent site is linked so, if it has another distribution, or if it is
            shared and ``shared`` is False.
        """
        c = self._c
        what = param_name or attr
        parents = [p for p in c.parents(self.name) if p in c.latent]
        params = [self._likelihood_param(run, attr, transform) for run in c.probes]
        found = []
        for p in parents:
            site = c.t0.sites[p]
            values = [run.value(p) for run in c.probes]
            # Any axis but the distribution's own event axes (a Dirichlet's categories) may
            # be the classes: a plate's, an expand's, or one that to_event reinterpreted.
            n_axes = values[0].ndim - _base(site["fn"]).event_dim
            axes = [_axis_of(site, f) for f in _frames(site) if f.size == self.n_classes]
            axes += [a for a in range(n_axes) if values[0].shape[a] == self.n_classes and a not in axes]
            for a in axes:
                expected = [np.moveaxis(np.take(v, run.y, axis=a), a, 0).reshape(run.y.shape[0], -1)
                            for v, run in zip(values, c.probes)]
                if all(_close(e, q) for e, q in zip(expected, params)):
                    found.append((p, a))
                    break
            else:
                flat = [v.reshape(1, -1) for v in values]
                if all(f.shape[1] == q.shape[1] and _close(np.broadcast_to(f, q.shape), q) for f, q in zip(flat, params)):
                    found.append((p, None))
        if not found:
            self.refuse(
                f"its {what} is not the value of one latent site indexed by the label: it depends on "
                f"{self._describe(parents)}; expected {expect}"
            )
        p, axis = found[0]
        got = kind(c.t0.fn(p))
        if got != prior:
            self.refuse(f"its {what} is the site {p!r} drawn from {got}, which is not conjugate here; expected {expect}")
        if axis is None and not shared:
            self.refuse(
                f"its {what} is the site {p!r}, shared by the classes (no axis of classes indexed by the label), "
                f"while this family has one parameter per class; expected {expect}"
            )
        c.claim(p, self.name)
        # The base distribution's event axes (not those to_event added): the value's
        # other axes are cells, each with its own prior parameters.
        return _Link(p, axis, tuple(tail), int(_base(c.t0.fn(p)).event_dim), got)

    # -- the prior's parameters
    def _field_in(self, run, link, attr, event_dims):
        site = run.sites[link.site]
        vshape = np.shape(site["value"])
        batch = vshape[: len(vshape) - link.event_dim]
        value = run.attr(link.site, attr)
        event = tuple(value.shape[value.ndim - event_dims:]) if event_dims else ()
        value = np.broadcast_to(value, tuple(batch) + event)
        btail = link.tail[: len(link.tail) - link.event_dim] if link.event_dim else link.tail
        if link.class_axis is None:
            return value.reshape(tuple(btail) + event)
        return np.moveaxis(value, link.class_axis, 0).reshape((self.n_classes,) + tuple(btail) + event)

    def field(self, link, attr, event_dims=0):
        """The prior parameter ``attr`` of a linked site: a constant array, or a :class:`Hyperprior`.

        Parameters
        ----------
        link : the result of :meth:`link`
        attr : str
            The parameter of the latent's distribution (``"concentration1"``, ...).
        event_dims : int
            Trailing axes of the latent's value that the parameter has (1 for a
            Dirichlet's concentration, 2 for a scale matrix).

        Returns
        -------
        ndarray of shape (n_classes,) + the canonical shape, or Hyperprior

        Raises
        ------
        ModelCompileError
            If it is neither constant nor the value of one hyperprior site.
        """
        c = self._c
        runs = c.runs
        arrays = [self._field_in(run, link, attr, event_dims) for run in runs]
        if all(_close(a, arrays[0]) for a in arrays[1:]):
            return np.array(arrays[0], dtype=np.float64)
        for h in c.latent:
            if h == link.site or (h in c.claimed and c.claimed[h] != "hyperprior"):
                continue
            if all(_broadcasts_to(run.value(h), a) for run, a in zip(runs, arrays)):
                return c.hyperprior(h, f"the {attr} of {link.site!r}")
        parents = [p for p in c.parents(link.site) if p in c.latent]
        # The probes share their data, the first run has the user's: a parameter equal
        # across the probes but not in the first run is computed from the data.
        if all(_close(a, arrays[1]) for a in arrays[2:]) and not _close(arrays[0], arrays[1]):
            raise ModelCompileError(
                link.site,
                f"the {attr} of its {link.prior_kind} prior changes with the data X (the model was run on other "
                "data of the same shape); a prior must not be computed from the data it is the prior of",
            )
        raise ModelCompileError(
            link.site,
            f"the {attr} of its {link.prior_kind} prior is neither a constant nor one hyperprior site "
            f"(it depends on {self._describe(parents)}); bayesnb integrates a hyperparameter only where "
            "it is a sample site standing for the whole parameter",
        )

    def constant(self, fn, site, reason):
        """``fn(probe)`` checked to be the same in every run of the model (e.g. a ``kappa``).

        Parameters
        ----------
        fn : callable ``(probe) -> ndarray``
            ``probe.value(link)`` and ``probe.param(link, attr, event_dims=0)`` give
            canonical arrays of one run.
        site : str
            The site named by the error.
        reason : str
            Why it must be constant, for the error.

        Returns
        -------
        ndarray

        Raises
        ------
        ModelCompileError
            If it varies between runs.
        """
        arrays = [np.asarray(fn(_Probe(self, run)), dtype=np.float64) for run in self._c.runs]
        if not all(_close(a, arrays[0]) for a in arrays[1:]) or not np.all(np.isfinite(arrays[0])):
            raise ModelCompileError(site, reason)
        return arrays[0]

    @staticmethod
    def is_hyperprior(value):
        """Whether a field read by :meth:`field` is a :class:`Hyperprior`."""
        return isinstance(value, Hyperprior)

    def recognised(self, prior, **roles):
        """The family's answer: its prior pytree and where its canonical variables live.

        ``roles`` map a canonical variable to a link, or to ``(link, transform)``.
        """
        out = {}
        for name, role in roles.items():
            link, transform = role if isinstance(role, tuple) and not isinstance(role, _Link) else (role, None)
            out[name] = Role(link.site, link.class_axis, link.tail, transform)
        return prior, out


# ----------------------------------------------------------------------------- the compiler


def _rows_keeping_labels(y, n):
    """Sorted indices of at most ``n`` rows (all where there are fewer): the first row of every label, then the earliest others."""
    if y.shape[0] <= n:
        return np.arange(y.shape[0])
    first = np.unique(y, return_index=True)[1]
    rest = np.setdiff1d(np.arange(y.shape[0]), first)[: max(n - first.size, 0)]
    return np.sort(np.concatenate([first, rest]))


class _Compiler:
    def __init__(self, model, X, y, kwargs):
        self.model, self.kwargs = model, kwargs
        self._numpy_values = True  # latent values given to the model as NumPy arrays while it runs on them
        self.claimed = {}
        self._hyper = {}
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"compile_model needs X of shape (n_rows, n_features), got shape {X.shape}")
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"compile_model needs y of shape ({X.shape[0]},) (one label per row), got shape {y.shape}")
        if y.dtype.kind not in "iu":
            # Labels (strings, ...): the model indexes its parameters by class, so it is
            # run on the class indices, in the sorted order the estimator's classes_ take.
            try:
                y = np.unique(y, return_inverse=True)[1].reshape(-1)
            except TypeError as err:
                raise ValueError(f"compile_model needs labels that can be sorted, got {err}") from None
        # The model is read on at most PROBE_ROWS of the rows (more only if there are more
        # classes), every label kept: the run on them and the probes then share their
        # shapes, so each JAX operation of the model compiles once, not once for the
        # data and again for the probes.
        rows = _rows_keeping_labels(y, max(PROBE_ROWS, 2 * np.unique(y).size, 4))
        X, y = X[rows], y[rows]
        self.X, self.y, self.n_features = X, y, X.shape[1]
        self.t0 = self._safe_run(X, y, 0)
        self.labels = self._label_site()
        label_fn = _base(self.t0.fn(self.labels))
        self.n_classes = int(np.shape(label_fn.probs)[-1])
        # As many rows as X up to PROBE_ROWS (the probes' cost does not grow with the data),
        # at least two of every class.
        n = max(min(X.shape[0], PROBE_ROWS), 2 * self.n_classes, 4)
        dtype = X.dtype if np.issubdtype(X.dtype, np.number) else np.float64
        # Distinct values: each observed value names its row and column.
        self.X_probe = np.arange(n * self.n_features).reshape(n, self.n_features).astype(dtype)
        self.y_probe = np.arange(n) % self.n_classes
        self.probes = [self._safe_run(self.X_probe, self.y_probe, seed) for seed in range(1, N_PROBES + 1)]
        self.runs = [self.t0, *self.probes]
        self.relations = self._relations()
        sites = self.t0.sites
        self.latent = [
            k for k, s in sites.items() if s["type"] == "sample" and not s.get("is_observed", False)
        ]
        self.observed = [k for k, s in sites.items() if s["type"] == "sample" and s.get("is_observed", False)]

    def _safe_run(self, X, y, seed):
        if self._numpy_values:
            try:
                return _run(self.model, X, y, self.kwargs, seed, as_numpy=True)
            except ModelCompileError:
                raise
            except Exception:  # JAX-only operations on sampled values: JAX arrays from now on
                self._numpy_values = False
        try:
            return _run(self.model, X, y, self.kwargs, seed)
        except ModelCompileError:
            raise
        except Exception as err:  # the user's code: say where it failed
            raise ValueError(
                f"compile_model could not run the model on data of shape {np.shape(X)} with labels of shape "
                f"{np.shape(y)}: {type(err).__name__}: {err}. The model is called as model(X, y, **model_kwargs) "
                "with X the feature matrix and y the class indices 0..n_classes-1"
            ) from err

    def _relations(self):
        try:
            with enable_x64():
                return _sample_relations(self.model, (self.X, self.y), self.kwargs, self.t0)
        except Exception as err:
            # The same tracing that NUTS (jax.jit) needs: e.g. NumPy functions on sampled values fail it.
            raise ValueError(
                "compile_model could not trace which sites depend on which "
                f"(numpyro's provenance tracking, as in get_model_relations, failed: {type(err).__name__}: {err}); "
                "write the model with jax.numpy on sampled values, as NUTS needs too"
            ) from err

    def parents(self, name):
        return list(self.relations.get(name, []))

    def claim(self, site, by):
        held = self.claimed.get(site)
        if held is not None and held != by:
            raise ModelCompileError(
                site,
                f"it is the parameter of both {held!r} and {by!r}; in a naive Bayes model every block of "
                "features has parameters of its own",
            )
        self.claimed[site] = by

    def hyperprior(self, site, what):
        if site in self._hyper:
            return self._hyper[site]
        if self.claimed.get(site, "hyperprior") != "hyperprior":
            raise ModelCompileError(site, f"it is both {what} and the parameter of {self.claimed[site]!r}")
        s = self.t0.sites[site]
        if any(f.size in (self.t0.y.shape[0],) for f in _frames(s)) or any(f.size == self.n_classes for f in _frames(s)):
            raise ModelCompileError(site, f"it is {what} but sits inside a plate of classes or rows")
        upstream = [p for p in self.parents(site) if p in self.latent]
        if upstream:
            raise ModelCompileError(
                site, f"it is {what} and itself depends on {upstream}; bayesnb integrates one level of hyperpriors"
            )
        self.claimed[site] = "hyperprior"
        self._hyper[site] = Hyperprior(site, s["fn"])
        return self._hyper[site]

    # -- the labels
    def _label_site(self):
        y = self.y
        found = []
        for name, site in self.t0.sites.items():
            if site["type"] != "sample" or not site.get("is_observed", False):
                continue
            value = np.asarray(site["value"])
            if value.size == y.size and np.array_equal(value.reshape(-1), y.reshape(-1)):
                found.append(name)
        cats = [n for n in found if kind(self.t0.fn(n)) == "Categorical"]
        if not cats:
            raise ModelCompileError(
                found[0] if found else "y",
                "no observed Categorical site of the model holds the labels y (the class indices passed as the "
                "model's second argument); a naive Bayes model observes y ~ Categorical(pi) in the data plate",
            )
        return cats[0]

    def class_spec(self):
        name = self.labels
        parents = [p for p in self.parents(name) if p in self.latent]
        probs = [_np(_base(run.fn(name)).probs).reshape(-1, self.n_classes) for run in self.runs]
        if not parents:
            first = probs[0][0]
            if not all(np.allclose(p, first, rtol=RTOL, atol=1e-12) for p in probs):
                raise ModelCompileError(name, "its class probabilities change from row to row or from run to run")
            return ClassSpec(name, None, None, np.array(first, dtype=np.float64))
        if len(parents) > 1:
            raise ModelCompileError(
                name, f"its probabilities depend on several latent sites ({parents}); expected y ~ Categorical(pi) "
                "with pi ~ Dirichlet(beta)"
            )
        p = parents[0]
        if kind(self.t0.fn(p)) != "Dirichlet":
            raise ModelCompileError(
                name, f"its probabilities are the site {p!r} drawn from {kind(self.t0.fn(p))}; the conjugate prior of "
                "the class proportions is Dirichlet"
            )
        for run, q in zip(self.runs, probs):
            if not _broadcasts_to(run.value(p).reshape(1, -1), q):
                raise ModelCompileError(name, f"its probabilities are not the value of {p!r} (transformed or indexed)")
        self.claim(p, name)
        conc = [_np(np.broadcast_to(run.attr(p, "concentration"), (self.n_classes,))) for run in self.runs]
        if all(_close(a, conc[0]) for a in conc[1:]):
            return ClassSpec(name, p, np.array(conc[0]), None)
        for h in self.latent:
            if h != p and all(_broadcasts_to(run.value(h), a) for run, a in zip(self.runs, conc)):
                return ClassSpec(name, p, self.hyperprior(h, f"the concentration of {p!r}"), None)
        raise ModelCompileError(p, "its concentration is neither a constant nor one hyperprior site")

    # -- the features
    def columns(self, name):
        run = self.probes[0]
        site = run.sites[name]
        value = np.asarray(site["value"])
        n = self.X_probe.shape[0]
        axis = _row_axis(site, n)
        if value.ndim == 0 or value.shape[axis] != n:
            raise ModelCompileError(name, "it is observed but has no row for each row of X")
        flat = np.moveaxis(value, axis, 0).reshape(n, -1)
        cols = np.rint(flat[0]).astype(np.int64)
        ok = (cols >= 0) & (cols < self.n_features)
        if not ok.all() or not np.array_equal(flat, self.X_probe[:, np.clip(cols, 0, self.n_features - 1)]):
            raise ModelCompileError(
                name, "its observed value is not a block of columns of X (transformed, or built from other data); "
                "observe columns of X as they are"
            )
        return cols

    def compile(self):
        # The plates of rows: those of size n_rows around the labels or an observed site.
        data_frames = {
            f.name for k in self.observed for f in _frames(self.t0.sites[k]) if f.size == self.y.shape[0]
        }
        for name in self.latent:
            inside = [f.name for f in _frames(self.t0.sites[name]) if f.name in data_frames]
            if inside:
                raise ModelCompileError(
                    name,
                    f"it is a latent variable inside the data plate {inside[0]!r} (one per row); in a naive Bayes "
                    "model a row depends on the parameters only through its label",
                )
        labels = self.class_spec()
        specs = []
        features = [k for k in self.observed if k != labels.site]
        for name in features:
            if kind(self.t0.fn(name)) == "Unit":
                raise ModelCompileError(name, "it is a numpyro.factor, an arbitrary term of the log density")
            upstream = [p for p in self.parents(name) if p in features]
            if upstream:
                raise ModelCompileError(
                    name, f"it depends on the observed feature site {upstream[0]!r}; naive Bayes features are "
                    "independent given the label"
                )
            if labels.site not in self.parents(name):
                raise ModelCompileError(
                    name, f"it does not depend on the label site {labels.site!r}; every feature of a naive Bayes "
                    "model is drawn given the class"
                )
            cols = self.columns(name)
            view = SiteView(self, name, cols.size)
            for family in families.names():
                recognise = families.get(family).recognise
                answer = None if recognise is None else recognise(view)
                if answer is not None:
                    prior, roles = answer
                    specs.append(SiteSpec(name, family, prior, cols, roles))
                    break
            else:
                known = sorted({"Bernoulli", "Categorical", "Exponential", "Multinomial", "MultivariateNormal",
                                "Normal", "Poisson"})
                raise ModelCompileError(
                    name, f"its likelihood {view.likelihood_kind} is not one bayesnb recognises ({', '.join(known)})"
                )
        if not specs:
            raise ModelCompileError(labels.site, "the model observes no feature site besides the labels")
        used = np.concatenate([s.columns for s in specs])
        if np.unique(used).size != used.size:
            raise ModelCompileError(specs[-1].site, "it observes columns of X that another site observes too")
        unused = [k for k in self.latent if k not in self.claimed]
        if unused:
            raise ModelCompileError(
                unused[0], "it is a latent site that no conjugate pair uses (neither a parameter of an observed site, "
                "nor the class proportions, nor a hyperprior of them)"
            )
        return CompiledModel(tuple(specs), labels, self.n_classes, self.n_features, dict(self._hyper))


def recognise_model(model, X, y, **model_kwargs):
    """Recognise a numpyro model of the naive-Bayes shape as the registered families.

    Parameters
    ----------
    model : callable
        A numpyro model called as ``model(X, y, **model_kwargs)``.
    X : array-like of shape (n_rows, n_features)
        Data of the shape the model expects (e.g. the training rows; a few rows
        suffice). The model is run on at most ``PROBE_ROWS`` of its rows (the first row
        of every label among them), and on probe data of as many rows and the same
        columns.
    y : array-like of shape (n_rows,)
        Class indices ``0 .. n_classes - 1``, as the model takes them, or labels
        (strings, ...): the model is then run on their indices in sorted order (the
        order of an estimator's ``classes_``).
    **model_kwargs
        Passed to the model.

    Returns
    -------
    CompiledModel

    Raises
    ------
    ModelCompileError
        Naming the site, where the model is not conjugate or not of the naive-Bayes shape.
    ValueError
        If the model cannot be run on ``X, y``.
    """
    with enable_x64():
        return _Compiler(model, X, y, model_kwargs).compile()


# ----------------------------------------------------------------------------- NUTS on the model as written


def _block_names(fitted, compiled):
    """The fitted model's block name of each site (``""`` for a one-family model)."""
    blocks = fitted.family.blocks
    if blocks is None:
        return {compiled.sites[0].site: ""}
    return {site.site: block.name for site, block in zip(compiled.sites, blocks)}


def _same_distribution(a, b):
    """Whether two numpyro distributions are the same law (type, shapes and parameters)."""
    if type(a) is not type(b) or tuple(a.batch_shape) != tuple(b.batch_shape):
        return False
    left, right = jax.tree.leaves(a), jax.tree.leaves(b)
    return len(left) == len(right) and all(
        np.shape(u) == np.shape(v) and np.allclose(np.asarray(u), np.asarray(v), rtol=0, atol=0)
        for u, v in zip(left, right)
    )


def _hyper_sites(fitted, compiled):
    """``[(Hyper, Hyperprior site)]``: a compiled estimator's integrated hyperparameters and their sites.

    An estimator hyperparameter (``hyper_posterior_``'s names) is paired with the model's
    hyperprior site of the same distribution, where that pairing is one to one; a
    hyperparameter whose distribution several sites share (``Beta(a, b)`` with ``a`` and
    ``b`` both ``Gamma(2, 1)``) cannot be told apart from the others and is left out.
    """
    if _fitted.hyper_posterior(fitted) is None:
        return []
    hypers, _ = fitted.hyper_embedding  # the hyperpriors the estimator integrated at its fit
    sites = list(compiled.hyperpriors.values())
    out = []
    for h in hypers:
        match = [s for s in sites if _same_distribution(s.distribution, h.distribution)]
        twins = [g for g in hypers if _same_distribution(g.distribution, h.distribution)]
        if len(match) == 1 and len(twins) == 1:
            out.append((h, match[0]))
    return out


def run_nuts_model(
    model, estimator, X, y, *, num_warmup=1000, num_samples=1000, num_chains=None, random_state=None,
    chain_method="vectorized", progress_bar=None, target_accept_prob=0.8, **model_kwargs,
):
    """NUTS on a compiled model *as written*, its draws renamed as the estimator's canonical variables.

    The run that :func:`bayesnb.ppl.mcmc.crosscheck` (``nuts=``) compares with the
    compiled estimator's closed forms: the samples are the model's own latent sites,
    mapped to the canonical variables (``class_probs``, ``feature_probs``, ``loc``, ...;
    block-prefixed for a mixed model) by the roles :func:`recognise_model` found, and
    the predictive probabilities are computed from the model's own log densities.

    Parameters
    ----------
    model : callable
        The numpyro model ``model(X, y, **model_kwargs)``.
    estimator : fitted estimator, or its FittedModel
        What :func:`bayesnb.compile_model` returned, fitted on ``X, y``.
    X : array-like of shape (n_rows, n_features)
    y : array-like of shape (n_rows,)
        Labels (values of ``estimator.classes_``).
    num_warmup, num_samples, num_chains, random_state, chain_method, progress_bar, target_accept_prob
        As :func:`bayesnb.ppl.mcmc.run_nuts`.
    **model_kwargs

    Returns
    -------
    bayesnb.ppl.mcmc.NUTSRun
    """
    from numpyro.infer.util import log_likelihood

    from bayesnb.ppl import mcmc, models

    fitted = _fitted.as_fitted(estimator)  # the estimator is read once, here
    X = np.asarray(X)
    y_index = _fitted.label_index(fitted, y)
    compiled = recognise_model(model, X, y_index, **model_kwargs)
    grouped, latent, diverging = mcmc.sample_nuts(
        model, (X, y_index), model_kwargs, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
        random_state=random_state, chain_method=chain_method, progress_bar=progress_bar,
        target_accept_prob=target_accept_prob,
    )
    C = compiled.n_classes
    samples = {}
    if compiled.labels.proportions_site is not None:
        draws = grouped[compiled.labels.proportions_site]
        samples["class_probs"] = draws.reshape(draws.shape[:2] + (C,))
    names = _block_names(fitted, compiled)
    for site in compiled.sites:
        for var, role in site.roles.items():
            samples[models._prefixed(names[site.site], var)] = role.canonical(grouped[role.site], C, lead=2)
    for h, site in _hyper_sites(fitted, compiled):
        value = grouped[site.site]
        if value.size == np.prod(value.shape[:2]) * int(np.prod(h.shape)):
            samples[h.name] = value.reshape(value.shape[:2] + tuple(h.shape))
    wanted = {**models.variable_dims(fitted), **models.hyper_dims(fitted)}
    samples = {k: v for k, v in samples.items() if k in wanted}
    classes = fitted.classes

    def log_joint(X_rep, y_rep):
        # log p(x_r, y_r | draw) of every (row, label) pair, from the model's own densities.
        idx = np.searchsorted(classes, np.asarray(y_rep))
        with enable_x64():
            sites = jax.jit(lambda s: log_likelihood(model, s, np.asarray(X_rep), idx, **model_kwargs))(latent)
            total = 0.0
            for value in sites.values():
                value = np.asarray(value)
                total = total + value.reshape(value.shape[:2] + (-1,)).sum(axis=-1)
        return np.asarray(total)

    return mcmc.nuts_run(
        fitted, samples, diverging, model, model_kwargs, latent, mcmc.data_fingerprint(X, y), "rows",
        log_joint=log_joint,
    )


def crosscheck_model(model, estimator, X, y, *, random_state=None, nuts_options=None, **model_kwargs):
    """Cross-check a compiled estimator against NUTS on the numpyro model as written.

    :func:`bayesnb.ppl.mcmc.crosscheck` (its rule for ``agrees``) with the MCMC side
    from :func:`run_nuts_model`.

    Parameters
    ----------
    model : callable
    estimator : fitted estimator returned by :func:`bayesnb.compile_model`, or its FittedModel
    X, y : the data it was fitted on
    random_state : int, optional
    nuts_options : dict, optional
        Keyword arguments of :func:`run_nuts_model` and :func:`~bayesnb.ppl.mcmc.crosscheck`
        (``num_warmup``, ``num_samples``, ``num_chains``, ``n_rows``, ...).
    **model_kwargs

    Returns
    -------
    bayesnb.ppl.mcmc.CrossCheck
    """
    from bayesnb.ppl import mcmc

    options = dict(nuts_options or {})
    run_keys = ("num_warmup", "num_samples", "num_chains", "chain_method", "progress_bar", "target_accept_prob")
    run_options = {k: options.pop(k) for k in run_keys if k in options}
    fitted = _fitted.as_fitted(estimator)  # the estimator is read once, here
    nuts = run_nuts_model(model, fitted, X, y, random_state=random_state, **run_options, **model_kwargs)
    return mcmc.crosscheck(fitted, X, y, random_state=random_state, nuts=nuts, **options)
