"""Comparing a check's outputs and printing its verdict."""
import numpy as np


def abs_error(got, want):
    """|got - want| elementwise, computed in float64."""
    return np.abs(np.asarray(got, dtype=np.float64) - want)


def outside(got, want, rtol, atol):
    """The elements where |got - want| > atol + rtol |want| (NumPy's
    allclose rule), as a boolean array, and the absolute error."""
    err = abs_error(got, want)
    return err > atol + rtol * np.abs(want), err


def finish(problems, passed="PASS", failed=None):
    """Prints "FAIL: ..." for each problem, then `passed` when there are
    none, else `failed` (either left out when None); returns the check's
    exit status."""
    for problem in problems:
        print("FAIL:", problem)
    verdict = failed if problems else passed
    if verdict is not None:
        print(verdict)
    return 1 if problems else 0
