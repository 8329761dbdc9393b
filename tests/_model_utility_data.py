"""Data shared by the ModelUtility robustness tests: a small iris split, and coalitions holding two classes.

Not a test module: ``test_model_utility_scorers_and_unfit_coalitions.py`` and
``test_model_utility_input_data.py`` import it by name (``tests/`` is on
``sys.path``, see ``pyproject.toml``).
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_iris


def iris_split():
    """30 iris flowers to train on and 60 to test on, drawn with seed 0: three classes, a coalition can miss one."""
    X, y = load_iris(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:30], order[30:90]
    return X[train], y[train], X[test], y[test]


def two_class_prefixes(y_train, sizes):
    """Coalitions of the given sizes holding classes 0 and 1 (alternating while both last, then class 1)."""
    zeros, ones = np.flatnonzero(y_train == 0), np.flatnonzero(y_train == 1)
    k = min(len(zeros), len(ones))
    order = np.concatenate([np.ravel(np.column_stack([zeros[:k], ones[:k]])), zeros[k:], ones[k:]])
    masks = np.zeros((len(sizes), len(y_train)), dtype=bool)
    for row, size in zip(masks, sizes):
        row[order[:size]] = True
    return masks
