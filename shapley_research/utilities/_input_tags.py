"""What a scikit-learn model's tags say it takes, checked against features given to it as they are.

A model fitted per coalition on sparse features or on a DataFrame with missing values fails on every
coalition when it cannot take them; scikit-learn's input tags say so before any fit.
"""

from __future__ import annotations

from typing import Any

from .._validation import is_frame, is_sparse


def _trusted_input_tags(model: Any) -> Any:
    """scikit-learn's input tags of the estimator that receives the features, where they describe it; else None.

    That estimator is a Pipeline's first step (its own tags mix its steps': ``allow_nan`` is the last
    one's), else the model. Trusted only for one of scikit-learn's own estimators with no estimator inside
    (a user's class keeps the default tags, ``sparse=False`` and ``allow_nan=False``, whatever it takes; a
    ColumnTransformer's tags do not say what its transformers take), and only with scikit-learn's
    ``get_tags`` (1.6 and later).
    """
    while type(model).__name__ == "Pipeline" and hasattr(model, "steps"):
        steps = [step for _, step in model.steps if step not in (None, "passthrough")]
        if not steps:
            return None
        model = steps[0]
    if not type(model).__module__.startswith("sklearn.") or not hasattr(model, "get_params"):
        return None
    if any(hasattr(value, "fit") for value in model.get_params(deep=True).values()):
        return None
    try:
        from sklearn.utils import get_tags
    except ImportError:  # pragma: no cover - scikit-learn < 1.6
        return None
    return get_tags(model).input_tags


def refuse_unsupported_features(model: Any, X_train: Any, X_test: Any = None) -> None:
    """Features given as they are that a scikit-learn model's tags say it cannot take: refused now.

    Sparse features for a model of dense input only (``TypeError``), and DataFrames with missing values for
    a model that does not accept them (``ValueError``): otherwise every coalition's fit would fail on its
    first call. Only where the tags describe the model (:func:`_trusted_input_tags`).
    """
    given = (("X_train", X_train), ("X_test", X_test))
    sparse = [name for name, X in given if is_sparse(X)]
    missing = [name for name, X in given if is_frame(X) and not is_sparse(X) and bool(X.isna().to_numpy().any())]
    tags = _trusted_input_tags(model) if sparse or missing else None
    if tags is None:
        return
    if sparse and not tags.sparse:
        raise TypeError(f"{' and '.join(sparse)} {'is' if len(sparse) == 1 else 'are'} sparse, but "
                        f"{type(model).__name__} takes dense input only (scikit-learn's tags say so): pass "
                        "X.toarray(), or a model that accepts sparse features (a Pipeline's StandardScaler "
                        "needs with_mean=False).")
    if missing and not tags.allow_nan:
        raise ValueError(f"{' and '.join(missing)} {'has' if len(missing) == 1 else 'have'} missing values, but "
                         f"{type(model).__name__} does not accept them (scikit-learn's tags say so): impute them "
                         "in the model, e.g. make_pipeline(SimpleImputer(), model), or use a model that takes "
                         "them (HistGradientBoostingClassifier).")


def model_takes_nan(model: Any) -> bool:
    """Whether scikit-learn's tags say the estimator receiving the features takes missing values (NaN)."""
    tags = _trusted_input_tags(model)
    return tags is not None and bool(tags.allow_nan)
