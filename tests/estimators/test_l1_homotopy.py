"""The exact l1 recovery of compressive sampling (lasso homotopy) against cvxpy and scikit-learn's LARS path."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from sklearn.linear_model import lars_path

from shapley_research import compressive_shapley
from shapley_research.estimators._l1_homotopy import (HomotopyError, _cholesky_delete, _small_integer_form, _solve,
                                                     l1_homotopy)
from shapley_research.estimators import _l1_homotopy, bernoulli_matrix, l1_recovery


def problem(m, n, nonzero, noise=0.05, seed=0, kind="bernoulli"):
    """``A`` Bernoulli (or Gaussian), ``r = A s + noise`` with ``nonzero`` non-zero entries of ``s``; the noise norm.

    Bernoulli matrices take the homotopy's int8 path (``A = B / sqrt(M)``), Gaussian ones its float64 path.
    """
    rng = np.random.default_rng(seed)
    a = bernoulli_matrix(rng, m, n) if kind == "bernoulli" else rng.normal(0.0, 1.0 / np.sqrt(m), (m, n))
    s = np.zeros(n)
    s[rng.choice(n, nonzero, replace=False)] = rng.normal(0.0, 1.0, nonzero)
    e = rng.normal(0.0, noise, m)
    return a, a @ s + e, float(np.linalg.norm(e))


CASES = [(30, 60, 4), (40, 80, 80), (80, 60, 60), (120, 200, 10)]


@pytest.mark.slow  # over a second
@pytest.mark.parametrize("kind", ["bernoulli", "gaussian"])
@pytest.mark.parametrize("m, n, nonzero", CASES)
@pytest.mark.parametrize("radius", [0.25, 1.0, 3.0])
def test_homotopy_solves_the_cone_program_cvxpy_solves(m, n, nonzero, radius, kind):
    """Same objective (to cvxpy's tolerance), residual on the boundary, same point (unique in general position)."""
    a, r, noise = problem(m, n, nonzero, seed=m + n, kind=kind)
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
        d, status = l1_recovery(a, r, np.zeros(a.shape[1]), residuals[knot])
        assert status == "optimal"  # the homotopy's own answer, not cvxpy's
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


def test_integer_matrices_take_the_int8_path_to_the_same_point():
    """``A = c B`` with small integers ``B`` is solved with ``B`` (a byte per entry): the same path as in float64."""
    a, r, noise = problem(100, 240, 240, seed=11)
    scale, small = _small_integer_form(a)
    assert small.dtype == np.int8 and scale == pytest.approx(1 / np.sqrt(100))
    np.testing.assert_array_equal(small * scale, a)
    d, knots = l1_homotopy(a, r, noise)
    reference, reference_knots = _solve(np.ascontiguousarray(a), r, noise, None)
    assert knots == reference_knots > 100
    np.testing.assert_allclose(d, reference, rtol=0, atol=1e-10 * np.abs(reference).max())
    gaussian, _, _ = problem(10, 20, 5, kind="gaussian")
    assert _small_integer_form(gaussian)[1] is None
    assert _small_integer_form(np.zeros((3, 4)))[1] is None
    scale, small = _small_integer_form(np.array([[0.0, 0.5], [-1.5, 1.0]]))
    assert scale == 0.5 and small.tolist() == [[0, 1], [-3, 2]]
    assert _small_integer_form(np.array([[0.5, 0.75]]))[1] is None  # 1.5 is not an integer
    assert _small_integer_form(np.array([[1.0, 200.0]]))[1] is None  # beyond int8


def whole_matrix_integer_form(a):
    """``(c, B)`` converted in one piece, as before the conversion went by blocks of rows."""
    magnitudes = np.abs(a[a != 0])
    if magnitudes.size == 0 or not np.isfinite(magnitudes).all():
        return 1.0, None
    scale = float(magnitudes.min())
    if magnitudes.max() / scale > 127:
        return 1.0, None
    small = np.rint(a / scale)
    if not np.array_equal(small * scale, a):
        return 1.0, None
    return scale, small.astype(np.int8)


def integer_form_cases(rng):
    """Matrices with and without the form, the deciding entry in a late block."""
    yield bernoulli_matrix(rng, 37, 23)
    yield bernoulli_matrix(rng, 5, 200)  # rows wider than a block
    yield rng.integers(-4, 5, size=(40, 9)) * (1 / 3)
    for value in (np.nan, np.inf, -np.inf, 0.7 / np.sqrt(37), 200 / np.sqrt(37), 0.5 / np.sqrt(37)):
        a = bernoulli_matrix(rng, 37, 23)
        a[-1, -2] = value  # NaN, infinite, not a multiple, too large for int8, the smallest magnitude
        yield a
    a = bernoulli_matrix(rng, 37, 23)
    a[:30] = 0.0  # zero blocks first
    yield a
    yield np.zeros((6, 4))
    yield np.zeros((0, 5))
    yield np.zeros((5, 0))


@pytest.mark.parametrize("entries", [1, 7, 64, 2**20])
def test_integer_form_by_blocks_is_the_whole_matrix_conversion(monkeypatch, entries):
    """Blocks of rows, whatever their size, give the ``(c, B)`` of the whole matrix at once, bit for bit."""
    monkeypatch.setattr(_l1_homotopy, "_CHUNK_ENTRIES", entries)
    for a in integer_form_cases(np.random.default_rng(entries)):
        scale, small = _small_integer_form(a)
        reference_scale, reference = whole_matrix_integer_form(a)
        assert scale == reference_scale and (small is None) == (reference is None)
        if small is not None:
            assert small.dtype == np.int8 and np.array_equal(small, reference)


def test_integer_form_keeps_its_temporaries_to_a_few_blocks(monkeypatch):
    """Converting a 32 MiB matrix allocates its 4 MiB of int8 signs and a few 512 KiB blocks (about 2 MiB), not
    float64 copies of the matrix (three of them, 96 MiB, when it was converted in one piece)."""
    monkeypatch.setattr(_l1_homotopy, "_CHUNK_ENTRIES", 2**16)
    a = bernoulli_matrix(np.random.default_rng(0), 512, 8192)
    tracemalloc.start()
    try:
        scale, small = _small_integer_form(a)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert small is not None and np.array_equal(small * scale, a)
    assert peak < small.nbytes + 8 * (8 * 2**16)  # the signs and eight blocks' worth: 8 MiB, not 96


def test_infeasible_radius_is_reported_not_hidden():
    a, r, _ = problem(50, 20, 20, noise=0.5, seed=7)  # more rows than columns: r is not in the range of A
    closest = np.linalg.norm(r - a @ np.linalg.lstsq(a, r, rcond=None)[0])
    with pytest.raises(HomotopyError, match="infeasible") as info:
        l1_homotopy(a, r, 0.5 * closest)
    assert info.value.infeasible
    with pytest.raises(RuntimeError, match="compressive recovery failed.*infeasible.*larger epsilon"):
        l1_recovery(a, r, np.zeros(20), 0.5 * closest)


DEGENERATE = np.array([[1, -1, 1, 1, 1, 1, -1, -1, -1, -1, -1, 1], [1, 1, 1, 1, -1, -1, 1, 1, 1, 1, 1, 1],
                       [-1, -1, -1, -1, 1, -1, -1, -1, 1, -1, 1, -1], [-1, 1, 1, -1, 1, 1, 1, 1, -1, 1, -1, 1],
                       [1, 1, -1, 1, -1, 1, -1, 1, -1, -1, -1, 1], [1, 1, -1, 1, -1, 1, 1, -1, 1, 1, 1, 1]])


@pytest.mark.parametrize("row_scales, path", [(np.ones(6), "int8"), ([1.0, 0.9, 1.1, 0.95, 1.05, 1.2], "float64")])
def test_degenerate_matrix_is_solved_or_handed_to_cvxpy(row_scales, path):
    """Six rows for twelve columns repeat columns: the solution is not unique.

    In integer arithmetic the repeated column's pivot is exactly zero and the
    path goes on to a certified optimum; in float64 (rows scaled, so not of
    the integer form) it ends short and cvxpy takes over, saying so.
    """
    a = DEGENERATE * np.asarray(row_scales)[:, None] / np.sqrt(6)
    assert np.array_equal(a[:, 0], a[:, 3])
    assert (_small_integer_form(a)[1] is not None) == (path == "int8")
    rng = np.random.default_rng(1)
    r = a @ rng.normal(size=12) + rng.normal(0.0, 0.05, 6)
    epsilon = 0.2 * np.linalg.norm(r)
    values, status = l1_recovery(a, r, np.zeros(12), epsilon)
    reference, _ = l1_recovery(a, r, np.zeros(12), epsilon, method="cvxpy")
    assert np.linalg.norm(r - a @ values) <= epsilon * (1 + 1e-6)
    assert np.abs(values).sum() == pytest.approx(np.abs(reference).sum(), rel=1e-6)
    if path == "int8":
        assert status == "optimal"
    else:
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


@pytest.mark.slow  # over a second
@pytest.mark.parametrize("integer_form", [True, False])
@pytest.mark.parametrize("radius", [0.0, 0.05])
def test_tiny_bernoulli_matrices_never_return_a_wrong_optimum(radius, integer_form):
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
        if not integer_form:  # scaled rows repeat the same columns, in float64
            a *= rng.uniform(0.8, 1.2, size=(m, 1))
        r = a @ (rng.normal(size=n) * (rng.random(n) < 0.3)) + rng.normal(0.0, 0.1, m)
        epsilon = radius * np.linalg.norm(r)
        values, status = l1_recovery(a, r, np.zeros(n), epsilon)
        reference, _ = l1_recovery(a, r, np.zeros(n), epsilon, method="cvxpy")
        assert np.linalg.norm(r - a @ values) <= epsilon + 1e-8 * np.linalg.norm(r)
        assert np.abs(values).sum() <= np.abs(reference).sum() * (1 + 1e-6), status


def test_a_residual_that_rounding_explains_is_no_signal():
    """Measurements that do not vary (an additive game's) give epsilon 0; the residual of the centre is then
    rounding alone, and an exact fit chased it to the end of the path (at N = 3,000 the path lost
    optimality there and cvxpy took a minute). The centre itself comes back, exactly."""
    rng = np.random.default_rng(0)
    a = bernoulli_matrix(rng, 300, 1000)
    centre = 1.0 + 0.1 * rng.normal(size=1000)
    measurements = (a @ centre) * (1.0 + 1e-15 * rng.normal(size=300))  # the centre's, to rounding
    values, status = l1_recovery(a, measurements, centre, 0.0)
    assert status == "optimal"
    np.testing.assert_array_equal(values, centre)
    # above rounding, epsilon 0 still means an exact fit
    shifted = measurements + 1e-6 * rng.normal(size=300)
    values, _ = l1_recovery(a, shifted, centre, 0.0)
    np.testing.assert_allclose(a @ values, shifted, rtol=0, atol=1e-9)
