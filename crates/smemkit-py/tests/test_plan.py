"""smemkit.plan: the planner's choice as a dict with a readable repr."""

import numpy as np
import pytest

import smemkit


def test_plan_is_a_dict_with_the_plan():
    p = smemkit.plan(4096, np.int32)
    assert isinstance(p, dict) and isinstance(p, smemkit.Plan)
    assert p["bins"] == 4096 and p["dtype"] == "int32" and not p["weighted"]
    assert p["strategy"] == "shared"
    assert p["block"] > 0 and p["grid"] > 0 and p["shared_bytes"] >= 4096 * 4
    text = repr(p)
    assert text.startswith("smemkit plan: 4096 bins of int32")
    assert "strategy       shared" in text and "why" in text
    assert str(p) == text


def test_plan_follows_the_workload():
    big = smemkit.plan(1 << 24, "float32", samples=1 << 20)
    assert big["strategy"] != "shared" and big["samples"] == 1 << 20
    weighted = smemkit.plan(1000, "f8", weighted=True)
    assert weighted["weighted"] and weighted["dtype"] == "float64"
    assert "weighted" in repr(weighted)


def test_forced_strategies_and_errors():
    assert smemkit.plan(100, strategy="global")["strategy"] == "global"
    with pytest.raises(ValueError, match="strategy shared cannot run"):
        smemkit.plan(1 << 22, strategy="shared")
    with pytest.raises(ValueError, match="unknown strategy"):
        smemkit.plan(10, strategy="fast")
    with pytest.raises(ValueError, match="positive"):
        smemkit.plan(0)
    with pytest.raises(ValueError, match="unknown sample type"):
        smemkit.plan(10, np.complex64)
    with pytest.raises(TypeError):
        smemkit.plan(10.5)
