"""foolbox's attacks on the float64 torch model (clear errors, exact fit, determinism) and the adversarial-set cache."""

import importlib.util

import numpy as np
import pytest

from shapley_research.attacks import (array_digest, cache_key, check_images, check_labels, generate_adversarial,
                                      load_or_generate, read_cache, train_torch_logistic_regression)

pytestmark = pytest.mark.slow  # torch and foolbox: seconds a test

torch = pytest.importorskip("torch")
needs_foolbox = pytest.mark.skipif(importlib.util.find_spec("foolbox") is None,
                                   reason="foolbox (the attacks extra) is not installed")


@pytest.fixture(scope="module")
def blobs():
    """Three classes of 4x4 'images' in [0, 1]: a bright quadrant per class plus noise."""
    rng = np.random.default_rng(0)
    n, k = 90, 3
    y = np.repeat(np.arange(k), n // k)
    X = rng.uniform(0.0, 0.3, size=(n, 4, 4))
    for c, (r, s) in enumerate([(0, 0), (0, 2), (2, 0)]):
        X[y == c, r:r + 2, s:s + 2] += 0.6
    return np.clip(X, 0, 1).astype(np.float32), y


@pytest.fixture(scope="module")
def model(blobs):
    X, y = blobs
    return train_torch_logistic_regression(X, y, C=1.0)


# --- validation -------------------------------------------------------------------------------------------

def test_pixels_outside_bounds_name_both_ranges():
    X = np.full((3, 4), 200.0)
    with pytest.raises(ValueError, match=r"values in \[200, 200\].*bounds are \[0, 1\].*divide by 255"):
        check_images(X, (0, 1))
    with pytest.raises(ValueError, match=r"\[-0.5, 0\].*\[0, 1\]"):
        check_images(np.array([[-0.5, 0.0]]), (0, 1))


def test_non_numeric_and_malformed_images_are_refused():
    with pytest.raises(TypeError, match="numeric"):
        check_images(np.array([["a", "b"]]))
    with pytest.raises(TypeError, match="numeric"):
        check_images(np.array([[1 + 1j]]))
    with pytest.raises(ValueError, match="at least 2-D"):
        check_images(np.zeros(5))
    with pytest.raises(ValueError, match="empty"):
        check_images(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="NaN"):
        check_images(np.array([[0.1, np.nan]]))


def test_float32_and_integer_images_become_float64():
    out = check_images(np.array([[0.25, 1.0]], dtype=np.float32))
    assert out.dtype == np.float64 and out.flags.c_contiguous
    assert check_images(np.array([[0, 255]], dtype=np.uint8), (0, 255)).dtype == np.float64


def test_labels_must_be_integer_class_indices():
    assert check_labels(np.array([0.0, 2.0]), 2, 3).dtype == np.int64
    with pytest.raises(TypeError, match="integer"):
        check_labels(np.array([0.5, 1.0]), 2)
    with pytest.raises(TypeError, match="integer"):
        check_labels(np.array(["a", "b"]), 2)
    with pytest.raises(ValueError, match="label 3 but the model has 3 classes"):
        check_labels([0, 3], 2, 3)
    with pytest.raises(ValueError, match="negative"):
        check_labels([-1, 0], 2)
    with pytest.raises(ValueError, match="2 labels but there are 3 images"):
        check_labels([0, 1], 3)


# --- the torch model -----------------------------------------------------------------------------------------

def test_torch_logistic_regression_matches_scikit_learn(blobs):
    from sklearn.linear_model import LogisticRegression

    X, y = blobs
    model = train_torch_logistic_regression(X, y, C=0.5)
    assert not model.training and model.linear.weight.dtype == torch.float64
    flat = torch.from_numpy(X.reshape(len(X), -1).astype(np.float64))
    with torch.no_grad():
        logits = model(flat).numpy()
    reference = LogisticRegression(C=0.5, tol=1e-12, max_iter=10_000).fit(flat.numpy(), y)
    proba = np.exp(logits - logits.max(1, keepdims=True))
    proba /= proba.sum(1, keepdims=True)
    np.testing.assert_allclose(proba, reference.predict_proba(flat.numpy()), atol=1e-6)
    # Newton's method stops at the optimum up to rounding: the objective's gradient vanishes
    weight = model.linear.weight.clone().requires_grad_(True)
    bias = model.linear.bias.clone().requires_grad_(True)
    loss = 0.5 * torch.nn.functional.cross_entropy(flat @ weight.T + bias, torch.from_numpy(y), reduction="sum") \
        + 0.5 * weight.square().sum()
    loss.backward()
    assert weight.grad.abs().max() < 1e-10 and bias.grad.abs().max() < 1e-10


def test_torch_training_is_deterministic_and_projection_is_applied(blobs):
    X, y = blobs
    flat = X.reshape(len(X), -1)
    components = np.linalg.svd(flat - flat.mean(0), full_matrices=False)[2][:3]
    a = train_torch_logistic_regression(X, y, projection=(components, flat.mean(0)))
    b = train_torch_logistic_regression(X, y, projection=(components, flat.mean(0)))
    assert a.linear.weight.shape == (3, 3)
    assert torch.equal(a.linear.weight, b.linear.weight) and torch.equal(a.linear.bias, b.linear.bias)
    with pytest.raises(ValueError, match="shape"):
        train_torch_logistic_regression(X, y, projection=(components[:, :5], flat.mean(0)))
    with pytest.raises(ValueError, match="pass a projection"):
        train_torch_logistic_regression(np.zeros((4, 28, 28)), [0, 1, 2, 3], n_classes=10)


# --- attacks ----------------------------------------------------------------------------------------------------

@needs_foolbox
def test_fgsm_perturbs_by_epsilon_and_reports_success_from_predictions(blobs, model):
    X, y = blobs
    out = generate_adversarial(model, X, y, "fgsm", epsilon=0.1)
    assert out.images.dtype == np.float64 and out.images.shape == X.shape
    assert out.linf.max() <= 0.1 + 1e-12 and np.median(out.linf) == pytest.approx(0.1, abs=1e-12)
    assert out.images.min() >= 0 and out.images.max() <= 1
    with torch.no_grad():
        predicted = model(torch.from_numpy(out.images)).argmax(1).numpy()
    np.testing.assert_array_equal(out.success, predicted != y)
    again = generate_adversarial(model, X.astype(np.float64), y, "fgsm", epsilon=0.1)  # the same in float64
    np.testing.assert_array_equal(out.images, again.images)


@needs_foolbox
def test_fgsm_leaves_pixels_the_model_ignores_exactly_unchanged(blobs):
    X, y = blobs
    flat = X.reshape(len(X), -1).astype(np.float64)
    components = np.linalg.svd(flat - flat.mean(0), full_matrices=False)[2][:4]
    components[:, :4] = 0.0  # as fit_pca sets the loadings of constant pixels: their gradient is exactly 0
    model = train_torch_logistic_regression(X, y, projection=(components, flat.mean(0)))
    out = generate_adversarial(model, X, y, "fgsm", epsilon=0.2).images.reshape(len(X), -1)
    np.testing.assert_array_equal(out[:, :4], flat[:, :4])
    assert np.all(np.abs(out[:, 4:] - flat[:, 4:]).max(axis=1) > 0)


@needs_foolbox
def test_larger_fgsm_epsilon_fools_the_model_more(blobs, model):
    X, y = blobs
    rates = [generate_adversarial(model, X, y, "fgsm", epsilon=e).success_rate for e in (0.02, 0.3)]
    assert rates[0] < rates[1]


@needs_foolbox
def test_cw_finds_small_l2_adversarials_and_returns_originals_on_failure(blobs, model):
    X, y = blobs
    good = generate_adversarial(model, X[:20], y[:20], "cw", steps=50, stepsize=0.05, binary_search_steps=5)
    assert good.success_rate >= 0.9
    fgsm = generate_adversarial(model, X[:20], y[:20], "fgsm", epsilon=0.3)
    both = good.success & fgsm.success
    assert np.median(good.l2[both]) < np.median(fgsm.l2[both])  # minimal-norm attack
    # one tiny step finds nothing: the original comes back, marked as a failure
    bad = generate_adversarial(model, X[:20], y[:20], "cw", steps=1, stepsize=1e-6, binary_search_steps=1)
    assert not bad.success.any()
    np.testing.assert_array_equal(bad.images, X[:20])


@needs_foolbox
def test_cw_confidence_buys_a_logit_margin_at_a_larger_perturbation(blobs, model):
    X, y = blobs
    settings = dict(steps=50, stepsize=0.05, binary_search_steps=5)
    plain = generate_adversarial(model, X[:20], y[:20], "cw", **settings)
    strong = generate_adversarial(model, X[:20], y[:20], "cw", confidence=2.0, **settings)
    with torch.no_grad():
        logits = model(torch.from_numpy(strong.images)).numpy()
    true = logits[np.arange(20), y[:20]]
    logits[np.arange(20), y[:20]] = -np.inf
    margin = logits.max(axis=1) - true
    assert strong.success.all() and np.all(margin >= 2.0 - 1e-9)
    assert np.median(strong.l2) > np.median(plain.l2)


@needs_foolbox
def test_attacks_are_bit_identical_per_image_and_restore_torch_settings(blobs, model):
    X, y = blobs
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    for attack in ("fgsm", "cw"):
        whole = generate_adversarial(model, X[:12], y[:12], attack, steps=20, binary_search_steps=3)
        again = generate_adversarial(model, X[:12], y[:12], attack, steps=20, binary_search_steps=3)
        np.testing.assert_array_equal(whole.images, again.images)
        part = generate_adversarial(model, X[4:8], y[4:8], attack, steps=20, binary_search_steps=3)
        np.testing.assert_allclose(part.images, whole.images[4:8], rtol=0, atol=1e-12)  # images do not interact
    assert torch.get_num_threads() == threads and torch.are_deterministic_algorithms_enabled() == deterministic


@needs_foolbox
def test_attacks_are_foolboxs_on_float64_inputs(blobs, model):
    """generate_adversarial runs foolbox's FGSM and L2CarliniWagnerAttack, in float64, on the same images."""
    import foolbox

    X, y = blobs
    x, labels = torch.from_numpy(X[:10].astype(np.float64)), torch.from_numpy(y[:10])
    fmodel = foolbox.PyTorchModel(model, bounds=(0, 1), device="cpu")
    _, fgsm, _ = foolbox.attacks.FGSM()(fmodel, x, labels, epsilons=0.1)
    cw = foolbox.attacks.L2CarliniWagnerAttack(binary_search_steps=4, steps=20, stepsize=0.05, confidence=1.0,
                                               abort_early=False)
    raw, _, _ = cw(fmodel, x, labels, epsilons=None)
    assert fgsm.dtype == raw.dtype == torch.float64
    ours = generate_adversarial(model, X[:10], y[:10], "fgsm", epsilon=0.1)
    np.testing.assert_array_equal(ours.images, fgsm.numpy())
    ours = generate_adversarial(model, X[:10], y[:10], "cw", steps=20, stepsize=0.05, binary_search_steps=4,
                                confidence=1.0)
    found = raw.numpy().reshape(10, -1).any(axis=1)  # foolbox returns zeros where it found none
    assert 0 < found.sum() < 10  # 4 searches from c = 1e-3 fool the model on 7 of 10 images
    np.testing.assert_array_equal(ours.images[found], raw.numpy()[found])
    np.testing.assert_array_equal(ours.images[~found], X[:10][~found])  # the original, not foolbox's blank
    np.testing.assert_array_equal(ours.success, found)


def test_missing_foolbox_is_named_with_the_extra_to_install(blobs, model, monkeypatch):
    import sys

    X, y = blobs
    monkeypatch.setitem(sys.modules, "foolbox", None)  # import foolbox now raises ImportError
    with pytest.raises(ImportError, match=r"shapley-research\[attacks\]"):
        generate_adversarial(model, X[:2], y[:2], "fgsm")


@needs_foolbox
def test_another_foolbox_release_is_warned_about(blobs, model, monkeypatch):
    import foolbox

    X, y = blobs
    monkeypatch.setattr(foolbox, "__version__", "3.0.0")
    with pytest.warns(RuntimeWarning, match="foolbox 3.0.0 is installed.*3.3.4"):
        generate_adversarial(model, X[:2], y[:2], "fgsm")


def test_attack_errors_are_clear(blobs, model):
    X, y = blobs
    with pytest.raises(ValueError, match=r"bounds are \[0, 1\]"):
        generate_adversarial(model, X * 255, y)
    with pytest.raises(ValueError, match="model has 3 classes"):
        generate_adversarial(model, X, np.full(len(y), 7))
    with pytest.raises(ValueError, match="attack must be one of"):
        generate_adversarial(model, X, y, "pgd")
    with pytest.raises(ValueError, match="cannot take float64 inputs"):
        generate_adversarial(model, X[:, :2], y)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        generate_adversarial(lambda x: x, X, y)


# --- cache ----------------------------------------------------------------------------------------------------

def test_cache_generates_once_and_regenerates_when_params_or_inputs_change(tmp_path):
    calls = []

    def generate():
        calls.append(1)
        return {"images": np.arange(6, dtype=np.float32).reshape(2, 3), "success": np.array([True, False])}

    path = tmp_path / "sub" / "fgsm.npz"
    params, inputs = {"epsilon": 0.2, "steps": np.int64(3)}, {"X": np.ones((2, 3))}
    first, made = load_or_generate(path, params, generate, inputs=inputs)
    assert made and len(calls) == 1 and path.is_file()
    second, made = load_or_generate(path, {"steps": 3, "epsilon": 0.2}, generate, inputs=inputs)  # same params
    assert not made and len(calls) == 1
    np.testing.assert_array_equal(second["images"], first["images"])
    assert second["success"].dtype == np.bool_
    _, made = load_or_generate(path, {"epsilon": 0.3, "steps": 3}, generate, inputs=inputs)
    assert made and len(calls) == 2
    _, made = load_or_generate(path, {"epsilon": 0.3, "steps": 3}, generate, inputs={"X": np.zeros((2, 3))})
    assert made and len(calls) == 3
    arrays, meta = read_cache(path)
    assert meta["params"] == {"epsilon": 0.3, "steps": 3}
    assert meta["inputs_sha256"] == array_digest({"X": np.zeros((2, 3))})
    assert meta["key"] == cache_key({"epsilon": 0.3, "steps": 3}, meta["inputs_sha256"])
    assert not list(path.parent.glob(".*"))  # no temporary file left behind


def test_cache_recovers_from_a_corrupt_file_and_none_disables_it(tmp_path):
    path = tmp_path / "cw.npz"
    path.write_bytes(b"not a zip file")
    with pytest.warns(RuntimeWarning, match="regenerating"):
        arrays, made = load_or_generate(path, {"a": 1}, lambda: {"x": np.zeros(2)})
    assert made and read_cache(path)[1]["params"] == {"a": 1}
    calls = []
    for _ in range(2):
        load_or_generate(None, {"a": 1}, lambda: calls.append(1) or {"x": np.zeros(2)})
    assert len(calls) == 2


def test_cache_refuses_reserved_names_and_non_json_params(tmp_path):
    with pytest.raises(ValueError, match="must not start with '__'"):
        load_or_generate(tmp_path / "a.npz", {}, lambda: {"__key__": np.zeros(1)})
    with pytest.raises(TypeError, match="JSON"):
        cache_key({"model": object()})
    assert array_digest({"a": np.zeros(2), "b": np.ones(2)}) == array_digest({"b": np.ones(2), "a": np.zeros(2)})
    assert array_digest({"a": np.zeros(2)}) != array_digest({"a": np.zeros(2, dtype=np.float32)})
