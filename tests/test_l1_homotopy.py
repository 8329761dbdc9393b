"""The exact l1 recovery of compressive sampling (lasso homotopy) against cvxpy and scikit-learn's LARS path."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import lars_path

from shapley_research import compressive_shapley
from shapley_research._l1_homotopy import HomotopyError, _cholesky_delete, l1_homotopy
from shapley_research.compressive import bernoulli_matrix, l1_recovery


def problem(m, n, nonzero, noise=0.05, seed=0):
    """``A`` Bernoulli, ``r = A s + noise`` with ``nonzero`` non-zero entries of ``s``; also the noise norm."""
    rng = np.random.default_rng(seed)
    a = bernoulli_matrix(rng, m, n)
    s = np.zeros(n)
    s[rng.choice(n, nonzero, replace=False)] = rng.normal(0.0, 1.0, nonzero)
    e = rng.normal(0.0, noise, m)
    return a, a @ s + e, float(np.linalg.norm(e))


CASES = [(30, 60, 4), (40, 80, 80), (80, 60, 60), (120, 200, 10)]


@pytest.mark.parametrize("m, n, nonzero", CASES)
@pytest.mark.parametrize("radius", [0.25, 1.0, 3.0])
def test_homotopy_solves_the_cone_program_cvxpy_solves(m, n, nonzero, radius):
    """Same objective (to cvxpy's tolerance), residual on the boundary, same point (unique in general position)."""
    a, r, noise = problem(m, n, nonzero, seed=m + n)
    epsilon = radius * noise
    if m > n:  # the least-squares residual is the smallest reachable: stay above it
        closest = np.linalg.norm(r - a @ np.linalg.lstsq(a, r, rcond=None)[0])
        epsilon = max(epsilon, 1.5 * closest)
    d, knots = l1_homotopy(a, r, epsilon)
    reference, status = l1_recovery(a, r, np.zeros(n), epsilon, method="cvxpy")
    assert status == "optimal"
    assert knots > 0
    assert np.linalg.norm(r - a @ d) == pytest.approx(epsilon, rel=1e-9)
    assert np.abs(d).sum() <= np.abs(reference).sum() * (1 + 1e-7)
    assert np.abs(d).sum() == pytest.approx(np.abs(reference).sum(), rel=1e-6)
    np.testing.assert_allclose(d, reference, atol=1e-4 * np.abs(reference).max())


def test_homotopy_lies_on_scikit_learns_lasso_path():
    """At the residual of any knot of ``lars_path(method="lasso")`` the homotopy returns that knot's coefficients."""
    a, r, _ = problem(40, 90, 90, seed=3)
    scale = np.abs(a.T @ r).max() / a.shape[0] * 1e-6  # keep lars_path's alphas far above its float32 stop
    _, _, coefs = lars_path(a, r / scale, method="lasso", alpha_min=0.0, max_iter=10_000)
    coefs *= scale
    residuals = np.linalg.norm(r[:, None] - a @ coefs, axis=0)
    for knot in (1, 5, 20, coefs.shape[1] // 2, coefs.shape[1] - 2):
        d, _ = l1_homotopy(a, r, residuals[knot])
        np.testing.assert_allclose(d, coefs[:, knot], atol=1e-9 * np.abs(coefs[:, knot]).max())


def test_homotopy_edge_radii():
    a, r, _ = problem(30, 70, 70, seed=5)
    d, knots = l1_homotopy(a, r, 1.01 * np.linalg.norm(r))  # zero is feasible
    assert knots == 0 and not d.any()
    d, _ = l1_homotopy(a, r, 0.0)  # basis pursuit: A d = r exactly
    np.testing.assert_allclose(a @ d, r, atol=1e-10 * np.linalg.norm(r))
    assert np.count_nonzero(d) <= a.shape[0]
    reference, _ = l1_recovery(a, r, np.zeros(70), 0.0, method="cvxpy")
    assert np.abs(d).sum() == pytest.approx(np.abs(reference).sum(), rel=1e-6)


def test_infeasible_radius_is_reported_not_hidden():
    a, r, _ = problem(50, 20, 20, noise=0.5, seed=7)  # more rows than columns: r is not in the range of A
    closest = np.linalg.norm(r - a @ np.linalg.lstsq(a, r, rcond=None)[0])
    with pytest.raises(HomotopyError, match="infeasible") as info:
        l1_homotopy(a, r, 0.5 * closest)
    assert info.value.infeasible
    with pytest.raises(RuntimeError, match="compressive recovery failed.*infeasible.*larger epsilon"):
        l1_recovery(a, r, np.zeros(20), 0.5 * closest)


def test_degenerate_matrix_falls_back_to_cvxpy():
    """Six rows of +-1 for twelve columns repeat columns: the solution is not unique, and cvxpy takes over."""
    a = np.array([[1, -1, 1, 1, 1, 1, -1, -1, -1, -1, -1, 1], [1, 1, 1, 1, -1, -1, 1, 1, 1, 1, 1, 1],
                  [-1, -1, -1, -1, 1, -1, -1, -1, 1, -1, 1, -1], [-1, 1, 1, -1, 1, 1, 1, 1, -1, 1, -1, 1],
                  [1, 1, -1, 1, -1, 1, -1, 1, -1, -1, -1, 1], [1, 1, -1, 1, -1, 1, 1, -1, 1, 1, 1, 1]]) / np.sqrt(6)
    assert np.array_equal(a[:, 0], a[:, 3])
    rng = np.random.default_rng(1)
    r = a @ rng.normal(size=12) + rng.normal(0.0, 0.05, 6)
    epsilon = 0.2 * np.linalg.norm(r)
    values, status = l1_recovery(a, r, np.zeros(12), epsilon)
    reference, _ = l1_recovery(a, r, np.zeros(12), epsilon, method="cvxpy")
    assert np.linalg.norm(r - a @ values) <= epsilon * (1 + 1e-6)
    assert np.abs(values).sum() == pytest.approx(np.abs(reference).sum(), rel=1e-6)
    assert status.startswith("optimal (cvxpy CLARABEL: ")  # the path met the repeated columns and said so


def test_cholesky_delete_matches_refactoring():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 9))
    gram = x.T @ x
    for p in range(9):
        factor = np.zeros((12, 12))
        factor[:9, :9] = np.linalg.cholesky(gram)
        _cholesky_delete(factor, 9, p)
        keep = np.delete(np.arange(9), p)
        np.testing.assert_allclose(factor[:8, :8], np.linalg.cholesky(gram[np.ix_(keep, keep)]), atol=1e-12)
        assert not factor[8:, :].any() and not factor[:, 8:].any()


def test_compressive_recoveries_agree(sparse_values_game):
    game = sparse_values_game
    fast = compressive_shapley(game, 2 + 200 * game.n_players, seed=4)
    slow = compressive_shapley(game, 2 + 200 * game.n_players, seed=4, recovery="cvxpy")
    assert fast.info["recovery"] == "homotopy" and fast.info["status"] == "optimal"
    assert slow.info["recovery"] == "cvxpy"
    np.testing.assert_array_equal(fast.info["permutation_values"], slow.info["permutation_values"])
    np.testing.assert_allclose(fast.values, slow.values, atol=1e-5 * np.abs(slow.values).max())
    assert fast.values.sum() == pytest.approx(slow.values.sum(), rel=1e-6)


@pytest.mark.parametrize("radius", [0.0, 0.05])
def test_tiny_bernoulli_matrices_never_return_a_wrong_optimum(radius):
    """Few rows of +-1 repeat columns; where the path cannot be followed the certificate must send it to cvxpy.

    Basis pursuit (``radius = 0``) ends the path at ``lambda = 0``, where the
    lasso conditions say nothing: the end is certified by the dual point of
    the last segment instead (before that check, some of these returned a
    larger l1 norm than cvxpy's, with status "optimal").
    """
    rng = np.random.default_rng(164)
    for _ in range(40):
        m, n = int(rng.integers(2, 15)), int(rng.integers(40, 90))
        a = rng.choice([-1.0, 1.0], size=(m, n)) / np.sqrt(m)
        r = a @ (rng.normal(size=n) * (rng.random(n) < 0.3)) + rng.normal(0.0, 0.1, m)
        epsilon = radius * np.linalg.norm(r)
        values, status = l1_recovery(a, r, np.zeros(n), epsilon)
        reference, _ = l1_recovery(a, r, np.zeros(n), epsilon, method="cvxpy")
        assert np.linalg.norm(r - a @ values) <= epsilon + 1e-8 * np.linalg.norm(r)
        assert np.abs(values).sum() <= np.abs(reference).sum() * (1 + 1e-6), status
