"""numpy's __array_function__ protocol: an argument whose type overrides numpy's functions gets
smemkit's calls as numpy would hand them over; arrays smemkit reads itself never do."""

import numpy as np
import pytest

import smemkit


class Overrides:
    """Answers every numpy function with what it was handed."""

    def __array_function__(self, function, types, args, kwargs):
        return function, types, args, kwargs


class Declines:
    def __array_function__(self, function, types, args, kwargs):
        return NotImplemented


class Sub(Overrides):
    def __array_function__(self, function, types, args, kwargs):
        return "sub", function


XY = [1.0, 2.0]


@pytest.mark.parametrize("call, func, args, kwargs", [
    (lambda o: smemkit.histogram2d(o, XY), np.histogram2d, "o, XY", {}),
    (lambda o: smemkit.histogram2d(XY, XY, bins=[o, 5]), np.histogram2d, "XY, XY",
     {"bins": "[o, 5]"}),
    (lambda o: smemkit.histogram2d(XY, XY, weights=o), np.histogram2d, "XY, XY",
     {"weights": "o"}),
    (lambda o: smemkit.histogramdd(o, bins=3), np.histogramdd, "o", {"bins": 3}),
    (lambda o: smemkit.histogramdd([XY, o]), np.histogramdd, "[XY, o]", {}),
    (lambda o: smemkit.digitize(XY, o), np.digitize, "XY, o", {}),
    (lambda o: smemkit.histogram_bin_edges(o, 4), np.histogram_bin_edges, "o, 4", {}),
])
def test_the_call_goes_to_the_override_as_numpy_hands_it(call, func, args, kwargs):
    o = Overrides()
    env = {"o": o, "XY": XY}
    got_func, types, got_args, got_kwargs = call(o)
    assert got_func is func
    assert types == (Overrides,)
    assert got_args == eval(f"({args},)", env)
    assert got_kwargs == {k: eval(v, env) if isinstance(v, str) else v for k, v in kwargs.items()}


def test_histogram_and_bincount_hand_over_their_arguments_by_name():
    o = Overrides()
    func, types, args, kwargs = smemkit.histogram(o, 7, range=(0, 1))
    assert func is np.histogram and types == (Overrides,) and args == (o,)
    assert kwargs == {"bins": 7, "range": (0, 1), "weights": None, "density": False}
    func, _, args, kwargs = smemkit.histogram(np.arange(3.0), weights=o)
    assert func is np.histogram and kwargs["weights"] is o
    func, _, args, kwargs = smemkit.bincount(np.arange(3), o, minlength=4)
    assert func is np.bincount and len(args) == 1 and np.array_equal(args[0], np.arange(3))
    assert kwargs == {"weights": o, "minlength": 4}


def test_a_subclass_answers_before_its_base():
    assert smemkit.histogram2d(Overrides(), Sub()) == ("sub", np.histogram2d)


def test_every_override_declining_is_numpys_type_error():
    with pytest.raises(TypeError, match="__array_function__"):
        smemkit.histogram2d(Declines(), XY)


def test_one_bins_entry_is_not_a_per_axis_list_and_fails_as_numpy():
    # numpy hands over only a two-entry bins list entry by entry; [o] stays one (bad) argument.
    with pytest.raises(Exception):
        smemkit.histogram2d(XY, XY, bins=[Overrides()])


def test_arrays_smemkit_reads_are_not_handed_over():
    class Plain(np.ndarray):
        pass

    a = np.arange(10.0).view(Plain)
    counts, edges = smemkit.histogram(a, 5)
    want, want_edges = np.histogram(np.arange(10.0), 5)
    assert np.array_equal(counts, want) and np.array_equal(edges, want_edges)
    h, xe, ye = smemkit.histogram2d(a, a, bins=2)
    assert np.array_equal(h, np.histogram2d(np.arange(10.0), np.arange(10.0), bins=2)[0])
