"""numpy's own tests of histogram, histogram_bin_edges, histogramdd, histogram2d, bincount and
digitize, run against smemkit: the test classes are imported from the installed numpy (nothing of
them is kept here) and each test method runs with numpy's functions replaced by smemkit's, in the
test module and on the numpy namespace. Every case must pass except the ones listed in
``NOT_YET``, each with the reason it does not, and a listed case that starts passing fails too (so
the list stays true). Skipped where numpy's test modules are not installed."""

import importlib
import inspect
import warnings

import numpy as np
import pytest

import smemkit

FUNCTIONS = ("histogram", "histogram_bin_edges", "histogramdd", "histogram2d", "bincount",
             "digitize")

SUITES = [
    ("numpy.lib.tests.test_histograms", ("TestHistogram", "TestHistogramOptimBinNums",
                                         "TestHistogramdd")),
    ("numpy.lib.tests.test_twodim_base", ("TestHistogram2d",)),
    ("numpy.lib.tests.test_function_base", ("TestDigitize", "TestBincount")),
]

# Cases that do not pass, and why (features smemkit does not have, limits it keeps).
NOT_YET = {
}


def _cases():
    out = []
    for module, classes in SUITES:
        try:
            mod = importlib.import_module(module)
        except ImportError:  # numpy without its tests, or their own imports missing
            continue
        for cname in classes:
            cls = getattr(mod, cname, None)
            if cls is None:
                continue
            for name, fn in inspect.getmembers(cls, inspect.isfunction):
                if not name.startswith("test_"):
                    continue
                marks = _numpys_skip(fn)
                for kwargs in _parameters(fn):
                    out.append(pytest.param(mod, cls, name, kwargs, marks=marks,
                                            id=f"{cname}.{name}{_label(kwargs)}"))
    return out


def _numpys_skip(fn):
    """numpy's own unconditional ``pytest.mark.skip`` of a test (``test_big_arrays``: 2.4 GB of
    samples into 2.56e9 bins, which numpy's CI does not run either), kept as a skip that says so;
    conditional marks (``skipif``) are numpy's platform checks and are not copied."""
    for mark in getattr(fn, "pytestmark", []):
        if mark.name == "skip":
            reason = mark.kwargs.get("reason", mark.args[0] if mark.args else "")
            return [pytest.mark.skip(reason=f"numpy's suite skips it: {reason}")]
    return []


def _parameters(fn):
    """The keyword sets of a test's ``pytest.mark.parametrize`` marks (their product)."""
    calls = [{}]
    for mark in getattr(fn, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = mark.args[0]
        names = [n.strip() for n in (names.split(",") if isinstance(names, str) else names)]
        calls = [
            {**c, **dict(zip(names, v.values if hasattr(v, "values") else
                             (v if len(names) > 1 else (v,))))}
            for c in calls for v in mark.args[1]
        ]
    return calls


def _label(kwargs):
    return "[" + ",".join(f"{k}={v!r:.20}" for k, v in kwargs.items()) + "]" if kwargs else ""


@pytest.fixture
def as_smemkit(monkeypatch):
    def patch(mod):
        for name in FUNCTIONS:
            if hasattr(mod, name):
                monkeypatch.setattr(mod, name, getattr(smemkit, name))
            monkeypatch.setattr(np, name, getattr(smemkit, name))
    return patch


CASES = _cases()


@pytest.mark.skipif(not CASES, reason="numpy's test modules are not installed")
@pytest.mark.parametrize("mod, cls, name, kwargs", CASES)
def test_numpys_own_tests(as_smemkit, mod, cls, name, kwargs):
    as_smemkit(mod)
    instance = cls()
    if hasattr(instance, "setup_method"):
        instance.setup_method()
    reason = NOT_YET.get(f"{cls.__name__}.{name}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            getattr(instance, name)(**kwargs)
    except Exception as e:
        if reason is None:
            raise
        return  # listed: a known gap
    if reason is not None:
        pytest.fail(f"{cls.__name__}.{name} passes now: take it off NOT_YET ({reason})")


def test_the_suites_are_there():
    # numpy's wheels carry their tests; a numpy without them would skip everything above.
    if not CASES:
        pytest.skip("numpy's test modules are not installed")
    assert len(CASES) > 100
