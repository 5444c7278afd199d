"""tests/_xla_codegen.py: the XLA:CPU code generator the suite compiles with (``fast_cpu_compiles``).

The flag is tried in a fresh interpreter before it is set: XLA aborts a process whose
``XLA_FLAGS`` names an option it does not know, so a jaxlib without the older emitters
must leave the suite on the default code generator, not crash it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import _xla_codegen as codegen


@pytest.fixture
def fresh(monkeypatch):
    """The state of a controller that has not imported JAX nor tried the flag."""
    monkeypatch.delitem(sys.modules, "jax", raising=False)  # only its presence is read; restored after the test
    for name in ("XLA_FLAGS", codegen.PROBED_VARIABLE, codegen.DEFAULT_CODEGEN_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_flag_this_jaxlib_knows_is_set_after_a_trial_run(fresh):
    fresh.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
    assert codegen.fast_cpu_compiles() is True
    assert os.environ["XLA_FLAGS"] == f"--xla_force_host_platform_device_count=1 {codegen.FAST_COMPILE_FLAG}"
    assert os.environ["BAYESNB_TESTS_XLA_PROBED"] == "1"


def test_a_flag_this_jaxlib_does_not_know_is_left_out(fresh):
    # What a jaxlib that has retired the older emitters would answer.
    fresh.setattr(codegen, "FAST_COMPILE_FLAG", "--xla_bayesnb_no_such_option=false")
    assert codegen.fast_cpu_compiles() is False
    assert "XLA_FLAGS" not in os.environ
    assert os.environ["BAYESNB_TESTS_XLA_PROBED"] == "1"  # tried once: the workers do not try again


@pytest.mark.parametrize(
    "setting",
    [
        {"XLA_FLAGS": "--xla_cpu_use_fusion_emitters=true"},  # the caller's choice
        {codegen.DEFAULT_CODEGEN_VARIABLE: "1"},  # the default code generator, asked for
        {"BAYESNB_TESTS_XLA_PROBED": "1"},  # a worker of a controller that tried and left it out
    ],
)
def test_the_callers_setting_is_kept(fresh, setting):
    for name, value in setting.items():
        fresh.setenv(name, value)
    fresh.setattr(codegen, "FAST_COMPILE_FLAG", "--xla_bayesnb_would_abort=1")  # a trial would leave it out
    before = os.environ.get("XLA_FLAGS")
    codegen.fast_cpu_compiles()
    assert os.environ.get("XLA_FLAGS") == before


def test_nothing_is_set_once_jax_is_loaded(monkeypatch):
    for name in ("XLA_FLAGS", codegen.PROBED_VARIABLE, codegen.DEFAULT_CODEGEN_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    import jax  # noqa: F401 - loaded, as in every worker once a test has run

    codegen.fast_cpu_compiles()  # XLA has read its flags already: setting them now would do nothing
    assert "XLA_FLAGS" not in os.environ and "BAYESNB_TESTS_XLA_PROBED" not in os.environ


@pytest.mark.parametrize("default_codegen", [False, True])
def test_the_script_prints_what_ci_exports(default_codegen):
    # .ci/run exports this for the test run and the documentation build (one environment,
    # so the build finds the examples' runs in its cache).
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", codegen.PROBED_VARIABLE)}
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=1"
    if default_codegen:
        env[codegen.DEFAULT_CODEGEN_VARIABLE] = "1"
    script = Path(codegen.__file__)
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    want = "--xla_force_host_platform_device_count=1" + ("" if default_codegen else f" {codegen.FAST_COMPILE_FLAG}")
    assert out.stdout.strip() == want
