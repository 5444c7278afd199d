"""Issue 15: the chain count is the same in Python and on the command line, and the
command's rule options are those of bayesnb.ppl.mcmc.crosscheck."""

from __future__ import annotations

import inspect

import pytest
from test_cli import run_main

from bayesnb.cli.command import build_parser
from bayesnb.ppl.mcmc import FALSE_ALARM, NUM_CHAINS, crosscheck, run_nuts


def _crosscheck_defaults():
    parser = build_parser()
    import argparse

    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices["crosscheck"].parse_args([])


def test_chain_count_and_rule_defaults_agree_between_python_and_the_cli():
    args = _crosscheck_defaults()
    py = inspect.signature(crosscheck).parameters
    assert args.chains == py["num_chains"].default == NUM_CHAINS == 4
    assert inspect.signature(run_nuts).parameters["num_chains"].default is None  # None: NUM_CHAINS
    assert args.z_max is None and py["z_max"].default is None
    assert args.rhat_max is None and py["rhat_max"].default is None
    assert args.false_alarm == py["false_alarm"].default == FALSE_ALARM


@pytest.mark.parametrize("value", ["0", "1", "1.5", "x"])
def test_false_alarm_must_be_a_probability(value):
    code, out, err, _, _ = run_main(["crosscheck", "--false-alarm", value])
    assert code == 2 and "--false-alarm" in err


def test_help_describes_the_rule():
    code, out, _, _, _ = run_main(["crosscheck", "--help"])
    assert code == 0
    text = " ".join(out.split())
    assert "--false-alarm" in text and "quantiles" in text and "Bonferroni" in text
