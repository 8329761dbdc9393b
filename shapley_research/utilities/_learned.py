r"""Data Utility Learning: a regression model of a game's utility, valued in its place (Wang, Yang & Jia, 2022).

Training a model on every coalition an estimator asks for is what makes data
valuation expensive. Data Utility Learning spends a modest number :math:`m` of
real evaluations :math:`(S_t, U(S_t))`, fits a regressor :math:`\hat U` from a
coalition's indicator vector :math:`x_S \in \{0, 1\}^N` to its utility,

.. math::

    \hat U = \operatorname*{arg\,min}_{f \in \mathcal F} \sum_{t=1}^{m} \bigl(f(x_{S_t}) - U(S_t)\bigr)^2,

and lets any estimator value the data on the *learned* game :math:`\hat U`,
whose evaluations cost one prediction each (Wang, Yang & Jia, "Improving
Cooperative Game Theory-based Data Valuation via Data Utility Learning", ICLR
2022 workshop; pyDVL's ``DataUtilityLearning``).

The two phases are explicit here: :func:`learn_utility` evaluates the real
game on its sample (in fixed chunks, in parallel with ``n_jobs``) and returns
a :class:`LearnedUtility`, a plain game whose ``evaluate`` is the regressor's
prediction. pyDVL's wrapper instead answers its first calls from the real
utility and later ones from the model, which makes what an estimator sees
depend on the order its (possibly parallel) calls arrive in; here the sample,
the fit and so every value are functions of the seed alone, bit for bit, for
any ``n_jobs``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._ordered import ordered_map
from .._threads import Pinned, pinned_threads
from .._validation import (check_choice, check_float, check_game, check_int, check_masks, check_n_jobs, check_progress,
                           check_seed, check_utilities)
from ..games import Game, GameLike, content_digest
from ._model_data import fresh_copy, unseeded_random_states

__all__ = ["learn_utility", "LearnedUtility", "UtilityFit", "default_utility_regressor", "sample_coalitions",
           "COALITION_DISTRIBUTIONS"]

#: The distributions of the training coalitions :func:`sample_coalitions` draws.
COALITION_DISTRIBUTIONS = ("uniform", "size_uniform", "shapley_kernel")
Distribution = Literal["uniform", "size_uniform", "shapley_kernel"]
#: Most draws of distinct coalitions tried per coalition wanted before giving up (the game is nearly exhausted).
_DRAW_ROUNDS = 64


def default_utility_regressor() -> Any:
    r"""The default regressor of :func:`learn_utility`: an MLP on the indicator vector, targets standardised.

    ``MLPRegressor(hidden_layer_sizes=(64,), alpha=1e-3, learning_rate_init=1e-3, max_iter=2000,
    early_stopping=False)`` inside a ``TransformedTargetRegressor`` that standardises the utilities
    (:math:`(U - \bar U) / s_U`): a utility such as a test accuracy varies by a few hundredths between
    coalitions, a scale at which the MLP's default initialisation and tolerance would stop at a
    nearly constant function. Its ``random_state`` is left unset: :func:`learn_utility` seeds it from
    its own seed. Chosen by measurement (``benchmarks/results/data_utility_learning.md``): against
    ``RidgeCV`` (an additive utility) its held-out :math:`R^2` grew with the sample (0.90 against 0.29
    on the KNN game at 25 N real evaluations) and its Shapley values were closer to the exact ones from
    10 N on; ridge, which cannot represent a utility's dependence on coalition size, did better only at
    2-5 N.
    """
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.neural_network import MLPRegressor
    from sklearn.preprocessing import StandardScaler

    mlp = MLPRegressor(hidden_layer_sizes=(64,), alpha=1e-3, learning_rate_init=1e-3, max_iter=2000)
    return TransformedTargetRegressor(regressor=mlp, transformer=StandardScaler())


@dataclass(frozen=True)
class UtilityFit:
    r"""How well the learned utility predicts real utilities it was not fitted on.

    What :attr:`LearnedUtility.fit_quality` holds.

    The regressor is fitted on the sample's training part and scored on its
    held-out part :math:`V`, before the final fit on the whole sample:

    .. math::

        R^2 = 1 - \frac{\sum_{t \in V} (\hat U(S_t) - U(S_t))^2}{\sum_{t \in V} (U(S_t) - \bar U_V)^2},
        \qquad \mathrm{RMSE} = \sqrt{\tfrac{1}{|V|} \textstyle\sum_{t \in V} (\hat U(S_t) - U(S_t))^2}.

    Attributes
    ----------
    r2 : float
        :math:`R^2` on the held-out coalitions (1: perfect; 0: no better than
        their mean; NaN if their utilities are all equal).
    rmse : float
        Root mean squared error on them, in the utility's units.
    std : float
        Standard deviation of their utilities (the RMSE of predicting their mean).
    n_train, n_validation : int
        Coalitions fitted on, and held out, for this score.
    """

    r2: float
    rmse: float
    std: float
    n_train: int
    n_validation: int


class LearnedUtility(Game):
    r"""A game whose utility is a regressor's prediction from the coalition's indicator vector.

    .. math::

        \hat U(S) = f(x_S), \qquad x_S = (1[1 \in S], \dots, 1[N \in S]) \in \{0, 1\}^N,

    with :math:`f` fitted by least squares on real utilities :math:`(S_t, U(S_t))_{t \le m}`.
    Usually made by :func:`learn_utility`, which draws and evaluates the
    sample; built directly, it fits ``regressor`` on given coalitions and
    utilities (e.g. ones logged by an earlier run).

    Parameters
    ----------
    masks : array-like of bool, shape (m, n_players)
        The training coalitions, at least 2 (0/1 integers accepted).
    utilities : array-like of float, shape (m,)
        Their real utilities, finite.
    regressor : scikit-learn style regressor, optional
        An unfitted object with ``fit(X, y)`` and ``predict(X)``; a fresh copy
        is fitted (``sklearn.base.clone``). Default
        :func:`default_utility_regressor`. A ``random_state`` left at ``None``
        (its own or a pipeline step's) is set from ``seed``.
    validation_fraction : float, default 0.2
        Share of the coalitions held out for :attr:`fit_quality`, in ``[0, 1)``
        (``0``: no score, ``fit_quality`` is None); at least one coalition on each
        side otherwise. The final regressor is fitted on all of them.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the held-out split and of an unset ``random_state``.

    Attributes
    ----------
    regressor_ : object
        The regressor fitted on every coalition: what :meth:`evaluate` predicts with.
    masks_, utilities_ : ndarray
        The training coalitions (bool, ``(m, N)``) and their real utilities.
    validation_ : ndarray of bool, shape (m,)
        The coalitions held out for :attr:`fit_quality` (all False without one).
    fit_quality : UtilityFit or None
        The held-out score.
    n_real_evaluations : int
        Real utilities the sample cost (``m`` here; :func:`learn_utility` sets
        the evaluations it made): compare methods at equal numbers of these.
    seed : int
        The resolved seed.
    """

    independent_rows = False  # a batched prediction may round a row differently with other rows around it

    def __init__(self, masks: ArrayLike, utilities: ArrayLike, regressor: Any = None, *,
                 validation_fraction: float = 0.2, seed: int | np.random.SeedSequence | None = None) -> None:
        masks_array = np.asarray(masks)
        if masks_array.ndim != 2 or masks_array.shape[0] < 2 or masks_array.shape[1] < 1:
            raise ValueError(f"masks must be a 2-D array of at least 2 coalitions of at least 1 player, got shape "
                             f"{masks_array.shape}.")
        self.masks_ = check_masks(masks_array, masks_array.shape[1])
        self.n_players = self.masks_.shape[1]
        self.utilities_ = check_utilities(utilities, self.masks_.shape[0], source="utilities")
        fraction = _check_validation_fraction(validation_fraction)
        self.seed = check_seed(seed)
        template = _checked_regressor(regressor)
        self.validation_ = _held_out(self.masks_.shape[0], fraction, self.seed)
        self.n_real_evaluations = int(self.masks_.shape[0])
        self.fit_quality = self._score(template) if self.validation_.any() else None
        self.regressor_ = self._fitted(template, np.ones(self.masks_.shape[0], dtype=bool))

    def _fitted(self, template: Any, rows: NDArray[np.bool_]) -> Any:
        """A fresh copy of ``template``, its unset random states seeded, fitted on the coalitions ``rows``."""
        model = fresh_copy(template)
        unset = unseeded_random_states(model)
        if unset:
            state = int(np.random.SeedSequence(self.seed, spawn_key=(1,)).generate_state(1)[0])
            model.set_params(**{key: state for key in unset})
        with pinned_threads():  # one BLAS thread: the same fit wherever it runs
            model.fit(self.masks_[rows].astype(np.float64), self.utilities_[rows])
        return model

    def _score(self, template: Any) -> UtilityFit:
        """The held-out score of a fit on the other coalitions (:class:`UtilityFit`)."""
        model = self._fitted(template, ~self.validation_)
        truth = self.utilities_[self.validation_]
        with pinned_threads():
            predicted = check_utilities(model.predict(self.masks_[self.validation_].astype(np.float64)),
                                        truth.size, source=f"{type(model).__name__}.predict")
        sse = float(np.sum((predicted - truth) ** 2))
        sst = float(np.sum((truth - truth.mean()) ** 2))
        return UtilityFit(r2=1.0 - sse / sst if sst > 0 else float("nan"), rmse=float(np.sqrt(sse / truth.size)),
                          std=float(truth.std()), n_train=int((~self.validation_).sum()),
                          n_validation=int(truth.size))

    def _evaluate(self, masks: NDArray[np.bool_]) -> ArrayLike:
        return np.asarray(self.regressor_.predict(masks.astype(np.float64)), dtype=np.float64).reshape(-1)

    def fingerprint(self) -> str:
        """A digest of the sample, the split and the regressor's parameters: what defines the learned utility."""
        params = self.regressor_.get_params(deep=True) if hasattr(self.regressor_, "get_params") else {}
        return content_digest(type(self).__name__, self.masks_, self.utilities_, self.validation_, self.seed,
                              type(self.regressor_).__qualname__, repr(sorted((k, repr(v)) for k, v in params.items())))

    def __repr__(self) -> str:
        score = "" if self.fit_quality is None else f", held-out R^2={self.fit_quality.r2:.3f}"
        return (f"LearnedUtility(n_players={self.n_players}, n_real_evaluations={self.n_real_evaluations}, "
                f"regressor={type(self.regressor_).__name__}{score})")


def _checked_regressor(regressor: Any) -> Any:
    """``regressor``, or the default one; a ``TypeError`` naming the argument if it cannot fit and predict."""
    if regressor is None:
        return default_utility_regressor()
    if isinstance(regressor, type):
        raise TypeError(f"regressor must be an estimator instance, got the class {regressor.__name__}: pass "
                        f"{regressor.__name__}().")
    missing = [name for name in ("fit", "predict") if not callable(getattr(regressor, name, None))]
    if missing:
        raise TypeError(f"regressor must have fit(X, y) and predict(X) (a scikit-learn style regressor); "
                        f"{type(regressor).__name__} lacks {' and '.join(missing)}.")
    return regressor


def _held_out(m: int, fraction: float, seed: int) -> NDArray[np.bool_]:
    """``round(fraction m)`` coalitions chosen at random (at least 1 and at most ``m - 1``; none if 0)."""
    held = np.zeros(m, dtype=bool)
    if fraction == 0.0:
        return held
    count = min(max(int(round(fraction * m)), 1), m - 1)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2,)))
    held[rng.choice(m, size=count, replace=False)] = True
    return held


def sample_coalitions(n_players: int, size: int, distribution: Distribution = "size_uniform",
                      seed: int | np.random.SeedSequence | None = None) -> NDArray[np.bool_]:
    r"""``size`` distinct coalitions of ``n_players``, drawn from ``distribution``, the first two the empty and full.

    The empty coalition and the grand coalition :math:`D` come first (every
    Shapley estimate rests on :math:`U(D) - U(\emptyset)`, which efficiency
    shares out); the others are drawn i.i.d., and a coalition drawn again is
    skipped, so that no real evaluation is spent twice. A coalition's size
    :math:`s` is drawn first, then a uniform subset of that size:

    * ``"uniform"``: every player in with probability 1/2, i.e. uniform over
      all :math:`2^N` coalitions (the distribution MSR Banzhaf samples);
      sizes binomial, concentrated within :math:`\sqrt N` of :math:`N/2`;
    * ``"size_uniform"``: :math:`s` uniform on :math:`\{1, \dots, N-1\}`, the
      sizes at which permutation sampling evaluates (every size weighs alike
      in the Shapley value);
    * ``"shapley_kernel"``: :math:`P(s) \propto 1/(s (N - s))` on
      :math:`\{1, \dots, N-1\}`, the Shapley kernel's size distribution
      (KernelSHAP's), heavier at small and large sizes.

    Parameters
    ----------
    n_players : int
        :math:`N`, at least 1.
    size : int
        Coalitions wanted, at least 2 and at most :math:`2^N`.
    distribution : {"uniform", "size_uniform", "shapley_kernel"}, default "size_uniform"
    seed : int or numpy.random.SeedSequence, optional

    Returns
    -------
    ndarray of bool, shape (size, n_players)
        One coalition per row, all distinct (fewer than ``size`` rows only if
        the distribution's support, every coalition but the two first for the
        sized ones, holds fewer).
    """
    n = check_int(n_players, "n_players", minimum=1)
    wanted = _check_sample_size(size, n)
    kind = check_choice(distribution, "distribution", COALITION_DISTRIBUTIONS)
    rng = np.random.default_rng(np.random.SeedSequence(check_seed(seed), spawn_key=(0,)))
    chosen = [np.zeros(n, dtype=bool), np.ones(n, dtype=bool)][:wanted]
    seen = {np.packbits(row).tobytes() for row in chosen}
    for _ in range(_DRAW_ROUNDS):
        if len(chosen) >= wanted:
            break
        for row in _draw(rng, kind, n, max(wanted - len(chosen), 16)):
            key = np.packbits(row).tobytes()
            if key not in seen and len(chosen) < wanted:
                seen.add(key)
                chosen.append(row)
    return np.array(chosen, dtype=bool).reshape(len(chosen), n)


def _draw(rng: np.random.Generator, kind: str, n: int, count: int) -> NDArray[np.bool_]:
    """``count`` i.i.d. coalitions of ``kind`` (duplicates possible)."""
    if kind == "uniform":
        raw = rng.integers(0, 256, size=(count, (n + 7) // 8), dtype=np.uint8)
        return np.unpackbits(raw, axis=1, count=n).view(bool)
    if n < 2:  # no size strictly between 0 and N
        return np.zeros((0, n), dtype=bool)
    sizes = np.arange(1, n)
    weights = np.ones(n - 1) if kind == "size_uniform" else 1.0 / (sizes * (n - sizes))
    drawn = rng.choice(sizes, size=count, p=weights / weights.sum())
    ranks = np.argsort(np.argsort(rng.random((count, n)), axis=1), axis=1)  # a uniform permutation per row
    return ranks < drawn[:, None]


def _check_sample_size(size: object, n: int) -> int:
    wanted = check_int(size, "n_samples", minimum=2)
    if n < 63 and wanted > 2**n:
        raise ValueError(f"n_samples={wanted} exceeds the 2^{n} = {2**n} coalitions of the game: evaluate them all "
                         f"(exact_shapley) instead of learning the utility.")
    return wanted


def _check_validation_fraction(validation_fraction: object) -> float:
    fraction = check_float(validation_fraction, "validation_fraction", minimum=0.0)
    if fraction >= 1.0:
        raise ValueError(f"validation_fraction must be in [0, 1), got {validation_fraction!r}.")
    return fraction


def learn_utility(game: GameLike, n_samples: int, regressor: Any = None, *,
                  distribution: Distribution = "size_uniform", validation_fraction: float = 0.2,
                  seed: int | np.random.SeedSequence | None = None, n_jobs: int | None = None,
                  chunk_size: int = 256, progress: bool | None = None) -> LearnedUtility:
    r"""Data Utility Learning: evaluate ``game`` on ``n_samples`` coalitions, and fit a model of its utility.

    Draws ``n_samples`` distinct coalitions :math:`S_1, \dots, S_m`
    (:func:`sample_coalitions`: the empty and full coalitions, then
    ``distribution``), evaluates the real utilities :math:`U(S_t)` through
    ``game.evaluate`` in chunks of ``chunk_size`` (joblib's workers with
    ``n_jobs``), and fits ``regressor`` from the indicator vectors to them
    (:class:`LearnedUtility`). Value the data with any estimator on the
    returned game: its evaluations are predictions, so a large budget costs
    little, and the values converge to those of :math:`\hat U`, which differ
    from :math:`U`'s by what the regressor gets wrong (:attr:`LearnedUtility.fit_quality`).

    Every number is a function of ``seed`` alone: the coalitions are drawn
    before any evaluation, the chunks do not depend on ``n_jobs``, each
    chunk runs on one BLAS thread, and the regressor is fitted here.

    Parameters
    ----------
    game : GameLike
        The real game (e.g. a :class:`~shapley_research.ModelUtility`).
    n_samples : int
        Real utility evaluations to spend, at least 2 (with a held-out part,
        at least 3) and at most :math:`2^N`.
    regressor : scikit-learn style regressor, optional
        Default :func:`default_utility_regressor`; e.g. ``Ridge()`` gives an
        additive :math:`\hat U`, whose Shapley and Banzhaf values are its
        coefficients.
    distribution : {"size_uniform", "uniform", "shapley_kernel"}, default "size_uniform"
        The training coalitions' distribution (:func:`sample_coalitions`).
        ``"size_uniform"`` spreads them over sizes as the Shapley value weighs
        them; ``"uniform"`` concentrates them around :math:`N/2`, where the
        Banzhaf value looks. None was best everywhere in a trial with the
        default MLP (KNN game N = 200, airport game N = 100, 2-10 N real
        evaluations, 2 seeds): ``"uniform"`` gave the lowest Shapley error on
        KNN (0.49-0.69 against the default's 0.54-1.04), ``"shapley_kernel"``
        on the airport game at 10 N (0.43-0.55 against 0.59) but about twice
        the others' error at 2-3 N on both; the default sits between.
    validation_fraction : float, default 0.2
        Share of the sample held out to score the fit (:class:`UtilityFit`)
        before the final fit on all of it; ``0`` skips the score.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the coalitions, the split and an unset ``random_state`` of
        the regressor; ``None`` draws one (kept as ``.seed``).
    n_jobs : int or None
        Chunks evaluated in parallel by joblib (``None``: in this process).
        Never changes a number.
    chunk_size : int, default 256
        Coalitions per call of ``game.evaluate``.
    progress : bool or None
        A progress bar over the real evaluations (``None``: on a terminal).

    Returns
    -------
    LearnedUtility
        With ``n_real_evaluations`` the coalitions evaluated.
    """
    n = check_game(game)
    wanted = _check_sample_size(n_samples, n)
    kind = check_choice(distribution, "distribution", COALITION_DISTRIBUTIONS)
    fraction = _check_validation_fraction(validation_fraction)
    if fraction > 0 and wanted < 3:
        raise ValueError(f"n_samples={wanted} leaves no coalition to fit on beside a held-out one: pass at least 3, "
                         "or validation_fraction=0.")
    template = _checked_regressor(regressor)
    jobs, step, shown = check_n_jobs(n_jobs), check_int(chunk_size, "chunk_size", minimum=1), check_progress(progress)
    resolved = check_seed(seed)
    masks = sample_coalitions(n, wanted, kind, resolved)  # type: ignore[arg-type]
    utilities = _real_utilities(game, masks, step, jobs, shown)
    return LearnedUtility(masks, utilities, template, validation_fraction=fraction, seed=resolved)


def _real_utilities(game: GameLike, masks: NDArray[np.bool_], chunk_size: int, n_jobs: int | None,
                    progress: bool | None) -> NDArray[np.float64]:
    """``game``'s utilities of ``masks``, ``chunk_size`` rows per call, in order, with a bar over the rows."""
    from tqdm.auto import tqdm

    starts = range(0, masks.shape[0], chunk_size)
    calls = ((masks[lo:lo + chunk_size],) for lo in starts)
    out = np.empty(masks.shape[0])
    bar = tqdm(total=masks.shape[0], desc="learn_utility: real evaluations", unit="eval", leave=False,
               disable=None if progress is None else not progress)
    try:
        for lo, values in zip(starts, ordered_map(Pinned(game.evaluate), calls, n_jobs)):
            rows = min(chunk_size, masks.shape[0] - lo)
            out[lo:lo + rows] = check_utilities(values, rows, source=f"{type(game).__name__}.evaluate")
            bar.update(rows)
    finally:
        bar.close()
    return out
