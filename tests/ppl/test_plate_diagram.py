"""The plate diagrams of the documentation (tools/docs/plate_diagram.py) show the models as they are.

The drawing is laid out from numpyro's own account of each model
(``get_model_relations``); the oracle is that account: every site is drawn inside exactly
the boxes of the plates numpyro puts it in (and clear of the others), every arrow is a
dependency numpyro reports, and the observed sites are the observed ones.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from _ppl_cases import fitted

from bayesnb.ppl import models

TOOLS = Path(__file__).resolve().parents[2] / "tools" / "docs"
FAMILIES = ("multinomial", "bernoulli", "categorical", "poisson", "gaussian", "gaussian_full", "gaussian_shared",
            "mixed")


@pytest.fixture(scope="module")
def plates():
    spec = importlib.util.spec_from_file_location("_docs_tool_plate_diagram", TOOLS / "plate_diagram.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inside(box, center, radius):
    x0, y0, x1, y1 = box
    x, y = center
    return x0 + radius <= x <= x1 - radius and y0 + radius <= y <= y1 - radius


def _clear(box, center, radius):
    x0, y0, x1, y1 = box
    x, y = center
    return x < x0 - radius or x > x1 + radius or y < y0 - radius or y > y1 + radius


def _check(plates, model, kwargs):
    rel = plates.relations(model, kwargs)
    lay = plates.layout(rel)
    assert set(lay.nodes) == set(rel["sample_sample"])
    r = plates._NODE_RADIUS
    for plate, box in lay.plates.items():
        for site, center in lay.nodes.items():
            if site in lay.members[plate]:
                assert _inside(box, center, r), (plate, site)
            else:
                assert _clear(box, center, r), (plate, site)
    expected_members = {}
    for plate, sites in rel["plate_sample"].items():
        expected_members.setdefault(plate.replace("__CLONE", ""), set()).update(sites)
    assert {p: set(m) for p, m in lay.members.items()} == expected_members
    assert set(lay.edges) == {(p, c) for c, ps in rel["sample_sample"].items() for p in ps}
    assert lay.observed == set(rel["observed"]) and {"y"} <= lay.observed
    positions = list(lay.nodes.values())
    assert len(set(positions)) == len(positions)  # no two sites on top of each other
    return lay


@pytest.mark.parametrize("name", FAMILIES)
def test_every_site_is_inside_exactly_its_plates(plates, name):
    model, kwargs = plates.family_model(name)
    lay = _check(plates, model, kwargs)
    assert {"class", "data"} <= set(lay.plates)
    if name in ("bernoulli", "categorical", "poisson", "gaussian"):
        assert "feature" in lay.plates


def test_a_model_with_a_block_of_every_family(plates):
    case = fitted("all")
    model, kwargs = models.model_from_estimator(case.estimator, case.X, case.y)
    lay = _check(plates, model, kwargs)
    assert {"bernoulli__feature", "categorical__feature", "poisson__feature", "gaussian__feature"} <= set(lay.plates)
    assert "shared__covariance_tril" not in lay.members["class"]  # one covariance for every class


def test_plate_markdown_has_the_drawing_and_numpyros_dot_source(plates, monkeypatch):
    pytest.importorskip("graphviz", reason="render_model's DOT source needs the graphviz package")
    monkeypatch.syspath_prepend(str(TOOLS))  # plate_markdown uses the docs helpers
    md = plates.plate_markdown("gaussian_shared")
    assert md.count("data:image/png;base64,") == 1
    assert "cluster_class" in md and "cluster_data" in md and "covariance_tril -> loc" in md
    sys.modules.pop("bayesnb_docs", None)
