"""L2 logistic regression utility (binary and multinomial), many coalitions at once.

:class:`LogisticRegressionUtility` fits scikit-learn's ``LogisticRegression``
objective on a batch of coalitions with the batched Newton or L-BFGS solver,
warm-started from the full-data solution (on the CPU's L-BFGS path, a
prefix that follows its previous prefix in a call from that one's:
``chain_prefixes``), and scores the fits like
:class:`~shapley_research.ModelUtility`; its one-pass prefix paths
live in :mod:`._online_prefix` and :mod:`._warm_prefix` (the mathematics is in
:mod:`shapley_research.utilities.learners`).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Literal, Sequence, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._model_data import clipped_mean_log_probability, constant_frequencies, degenerate_rows
from .._options import resolve_prefix_path
from ..._device import fast_float64
from ..._validation import (check_bool, check_bool_or_auto, check_choice, check_float, check_int, check_permutations,
                             check_weights)
from ._array import Array, ArrayBackend
from ._base import _CHUNK_BYTES, _BatchedLearner, _check_features_like, _chunks
from ._binary import _BinaryChunk
from ._lbfgs import _lbfgs
from ._lbfgs_rows import PrefixLinks, lbfgs_own_rows
from ._newton import _newton
from ._online_prefix import online_prefix_utilities
from ._precondition import (ClassBlocks, DiagonalInverse, LowRankInverse, class_blocks, hessian_eigen,
                            low_rank_inverse)
from ._scalers import data_hessian_diagonal, diagonal_preconditioner
from ._softmax import NEG_LOGIT, _data_hessian, _SoftmaxChunk, _SoftmaxData
from ._warm_prefix import exact_prefix_utilities

if TYPE_CHECKING:
    from .._options import DegeneratePolicy, PrefixPath
    import torch

DEVICE_FIT_CAP = 65_536  # most coalitions a device's chunk fits together, memory permitting
PRECONDITION_MAX_PARAMS = 4096  # largest K q whose full-data Hessian L-BFGS is preconditioned by
#: Smallest ``tol`` at which mixed precision trusts ``float32``'s gradient test (its rounding: ~1e-6 relative).
FLOAT32_MIN_TOL = 1e-5


class LogisticRegressionUtility(_BatchedLearner):
    r"""L2 logistic regression utility (binary and multinomial), many coalitions at once.

    ``U(S)`` is the ``metric`` on the test set of
    ``LogisticRegression(C=C, fit_intercept=fit_intercept)`` (L2 penalty,
    lbfgs-type solvers) fitted on ``S``: the minimiser of
    :math:`C\sum_{i\in S}\ell_i + \frac12\sum_k\|w_k\|^2`, binary for coalitions
    with two classes, multinomial over the present classes otherwise (see
    :mod:`shapley_research.utilities.learners`). Solved to ``tol`` per coalition, tighter than
    scikit-learn's default ``1e-4``. Measured against scikit-learn's newton-cg
    at ``tol=1e-12`` on iris: at the default ``tol=1e-6`` coefficients agree
    to about 1e-5 relative and probabilities to about 1e-4; at ``tol=1e-10``
    to about 1e-8 and 1e-7 (the tests check 1e-6 for Newton, 1e-4 for L-BFGS).

    Parameters
    ----------
    X_train, y_train, X_test, y_test : arrays
        Training points (the players) and the fixed test set. Labels may be any
        sortable values; test labels absent from training count as errors.
    metric : {"accuracy", "neg_log_loss"}, default "accuracy"
    C : float, default 1.0
        Inverse penalty strength, finite and ``> 0``.
    fit_intercept : bool, default True
    tol : float, default 1e-6
        Stop a coalition when :math:`\|\nabla f\|_\infty \le \text{tol}\,C\,|S|`
        (or when the objective stops decreasing, at rounding level).
    max_iter : int, default 500
        Iteration cap per coalition (a ``ConvergenceWarning``, once per game, says how
        many hit it; ``last_fit_info_["n_not_converged"]`` counts them in each batch).
    solver : {"auto", "newton", "lbfgs"}, default "auto"
        Batched Newton or L-BFGS (:mod:`shapley_research.utilities.learners`);
        ``"auto"``: Newton up to ``newton_max_params`` unknowns.
    newton_max_params : int, default 160
        ``"auto"`` uses Newton when a fit's Newton system has at most this
        many unknowns (:attr:`n_params`).
    degenerate, default_utility, min_samples
        Degenerate coalitions (empty, one class, fewer than ``min_samples``
        points) as in :class:`~shapley_research.ModelUtility` (Notes);
        ``degenerate`` may be a :class:`~shapley_research.DegeneratePolicy`
        holding all three.
    batch_size : int, optional
        Most coalitions (or permutations) trained together. Default: as many as
        about 48 MiB of working memory holds, at most 4,096 (on a device, a
        third of its total memory, at most 65,536, so one card plans the same
        chunks on every run); a ``batch_size`` replaces that cap, above or
        below it, within the memory bound. Where a GPU's free memory is short
        of the plan, chunks shrink with a ``RuntimeWarning``.
    prefix_refit_ratio : float or None, default 1.5
        One-pass path: prefixes of sizes ``ceil(ratio^i)`` are refitted exactly
        (``None``: only when the prefix's classes change).
    prefix_steps : int, default 3
        One-pass path: most chord steps per joining point.
    warm_start : bool, default True
        Start every fit from the full-data solution (fitted once, on the numpy
        path whatever the device), and precondition L-BFGS by the full-data
        Hessian scaled to ``|S|/N``.
    chain_prefixes : bool, default True
        With ``warm_start``, on the CPU's compiled L-BFGS (more than two classes), a coalition adding one
        point to the one before it in a call (the next prefix of a permutation) starts from that one's
        solution: 2-3x fewer iterations on 10-class digits. Each fit still meets ``tol``, and depends on
        the rows before it in the call (never on chunks, ``n_jobs`` or the machine). ``False``: every fit
        a function of its coalition alone (``ModelUtility(cache=True)`` sets it).
    prefix_path : {"online", "exact"} or PrefixPath, default "online"
        What :meth:`evaluate_prefixes` computes (a :class:`~shapley_research.PrefixPath`
        holds it with ``prefix_refit_ratio`` and ``prefix_steps``: then leave those out). ``"online"``: one pass of
        chord steps, an approximation of refitting (fast). ``"exact"``: every
        prefix fitted to ``tol`` like :meth:`evaluate`, warm-started from the
        previous prefix (:mod:`shapley_research.utilities.learners._warm_prefix`); the learner then
        has ``exact_prefixes = True``, so ``permutation_shapley`` values equal
        those from refitting every prefix (to the solver tolerance).
    device : None, "auto", str or torch.device, default None
        Where the solvers run. ``None``: numpy on this CPU (the path of every
        committed result). A torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``,
        a ``torch.device``): the same objective, solvers, warm start,
        convergence test and degenerate-coalition convention, written once
        for both array libraries (:mod:`._array`), in torch on that device;
        chunks of coalitions then take a share of the device's memory.
        ``"auto"``: ``"cuda"`` when torch sees a GPU, else ``None``. On a
        device, :meth:`evaluate_prefixes` refits every prefix exactly in
        batches (the one-pass paths are numpy's), so ``exact_prefixes`` is
        true. Needs torch (``pip install "shapley-research[torch]"``).
    dtype : {"float64", "float32"}, default "float64"
        Floating-point type of the solvers. ``float32`` halves the memory and
        is several times faster on most GPUs; keep ``tol`` above about 1e-4
        with it (rounding at float32's 1e-7 limits the gradient test).
    mixed_precision : bool or "auto", default "auto"
        On a torch device with ``dtype="float64"``, L-BFGS iterates in ``float32`` first (half the memory
        traffic; ``exp`` several times faster), then restarts in ``float64`` from there until the ``float64``
        gradient meets ``tol``: the same convergence test as a ``float64`` run, met in ``float64`` (most
        coalitions need zero or one ``float64`` step). It pays where ``float64`` is slow (1.2x on torch's CPU
        device) and costs where it is fast (1.02-1.35x slower on an H200). ``"auto"``: ``False`` on GPUs with
        full-rate ``float64`` (compute capability 6.0, 7.0, 8.0, 9.0: P100, V100, A100, H100/H200), else
        ``True``. Newton is unaffected. On the CPU (``device=None``) L-BFGS runs coalition by coalition on
        each coalition's own rows in compiled ``float64`` loops, whatever this says (a ``float32`` phase
        saved 0-15% there); its iterates are those of the torch path with ``mixed_precision=False`` to
        rounding (its low-rank preconditioner is applied in ``float32``).
    scalers : sequence of scikit-learn scalers, default ()
        ``StandardScaler``, ``MinMaxScaler`` (``clip=False``) or
        ``MaxAbsScaler`` instances, fitted on each coalition before the model,
        as ``make_pipeline(*scalers, LogisticRegression(C))`` does: solved as a
        per-coalition diagonal penalty on the original features
        (:mod:`._scalers`), the same minimiser. Shifting scalers need
        ``fit_intercept=True``; :meth:`evaluate_prefixes` then refits every
        prefix, and ``prefix_path="exact"`` is refused. Coefficients from
        :meth:`fit_subsets` are in the original features.

    Attributes
    ----------
    classes_ : ndarray
        Sorted training labels.
    n_fits : int
        Models trained by :meth:`evaluate` and :meth:`evaluate_prefixes`
        (non-degenerate coalitions; each prefix counts one).
    last_fit_info_ : dict
        Solver, mean and max iterations, coalitions not converged, of the last batch fitted.
    last_prefix_info_ : dict
        For ``prefix_path="exact"``, counts of the last :meth:`evaluate_prefixes`:
        ``passes`` (objective passes over a prefix per permutation), ``refits``
        (batched fits when the classes change), ``fallbacks`` (batched fits of
        prefixes the warm steps did not converge), ``hessians`` (inverted).
    """

    _DEFINING = _BatchedLearner._DEFINING + ("C", "tol", "max_iter", "solver", "chain_prefixes")

    def __init__(self, X_train: ArrayLike, y_train: ArrayLike, X_test: ArrayLike, y_test: ArrayLike,
                 metric: str = "accuracy", *, C: float = 1.0, fit_intercept: bool = True, tol: float = 1e-6,
                 max_iter: int = 500, solver: Literal["auto", "newton", "lbfgs"] = "auto",
                 newton_max_params: int = 160,
                 degenerate: Literal["constant", "default", "raise"] | DegeneratePolicy = "constant",
                 default_utility: float | None = None, min_samples: int = 1, batch_size: int | None = None,
                 prefix_refit_ratio: float | None = 1.5, prefix_steps: int = 3, warm_start: bool = True,
                 prefix_path: Literal["online", "exact"] | PrefixPath = "online",
                 device: str | torch.device | None = None,
                 dtype: Literal["float64", "float32"] = "float64", mixed_precision: bool | Literal["auto"] = "auto",
                 scalers: Sequence[Any] = (), chain_prefixes: bool = True) -> None:
        self._setup(X_train, y_train, X_test, y_test, metric, fit_intercept, degenerate, default_utility,
                    min_samples, batch_size, "classification")
        self.C = check_float(C, "C", minimum=0.0, strict=True)
        self.tol = check_float(tol, "tol", minimum=0.0, strict=True)
        self.max_iter = check_int(max_iter, "max_iter", minimum=1)
        self.newton_max_params = check_int(newton_max_params, "newton_max_params", minimum=1)
        self.solver = check_choice(solver, "solver", ("auto", "newton", "lbfgs"))
        self.prefix_path, self.prefix_refit_ratio, self.prefix_steps = resolve_prefix_path(
            prefix_path, prefix_refit_ratio, prefix_steps)
        self.prefix_tol = 100 * self.tol
        self.warm_start = check_bool(warm_start, "warm_start")
        self.chain_prefixes = check_bool(chain_prefixes, "chain_prefixes")
        # an exact prefix path lets ModelUtility and the estimators rely on evaluate_prefixes
        self.exact_prefixes = self.prefix_path == "exact"
        self._set_scaling(scalers)
        if self.scaling is not None and self.prefix_path == "exact":
            raise ValueError("prefix_path='exact' cannot be combined with scalers: the one-pass path knows no "
                             "per-coalition scalers (evaluate_prefixes refits every prefix exactly instead).")
        self._set_backend(device, dtype)
        self.mixed_precision = check_bool_or_auto(mixed_precision, "mixed_precision")
        self.last_prefix_info_: dict[str, int] = {}
        self.classes_ = self.targets.classes
        self.last_fit_info_: dict[str, Any] = {}

    _BACKEND_CACHES = ("_data", "_data32", "_full_theta", "_full_hessian", "_hessian_diagonal")

    @property
    def n_params(self) -> int:
        """Unknowns of one Newton fit: ``q`` for two classes (the binary objective), ``n_classes * q`` otherwise."""
        K = self.targets.n_classes
        return self.design.q if K == 2 else K * self.design.q

    def _use_newton(self) -> bool:
        # "auto" also needs the (N, q^2) per-point outer products of the Hessian product to stay small
        small = self.n_players * self.design.q**2 * 8 <= 2 * _CHUNK_BYTES
        return self.solver == "newton" or (self.solver == "auto" and small and self.n_params <= self.newton_max_params)

    # -- fitting ------------------------------------------------------------------------------
    def _row_bytes(self) -> float:
        """Working memory of one coalition in a chunk (logit-sized arrays, history, Hessian)."""
        K, q, N = self.targets.n_classes, self.design.q, self.n_players
        per = 8 * (7 * K * N + 2 * N + 24 * K * q)
        if self._use_newton():
            per += 8 * (K * K * (N + q * q) + 4 * (K * q) ** 2)
        return per

    def _preconditioner(self, chunk: _SoftmaxChunk) -> LowRankInverse | DiagonalInverse | None:
        """L-BFGS's initial inverse Hessian for a chunk (:func:`._precondition.low_rank_inverse`).

        ``None`` without ``warm_start`` and above :data:`PRECONDITION_MAX_PARAMS`
        unknowns, where the ``(Kq)^2`` Hessian and its eigendecomposition would
        cost more than the fits (raw MNIST pixels: ``Kq = 7,850``); L-BFGS then
        starts from ``gamma I``. With a pipeline's ``scalers`` the per-coalition
        penalties :math:`r_S` differ from :math:`I` by orders of magnitude where
        a feature is rare or constant in ``S`` (on digits with ``StandardScaler``
        the low-rank one took 211 iterations on average and left 2 of 40
        coalitions unconverged in 500): a diagonal one that carries :math:`r_S`
        is used instead (:func:`~._scalers.diagonal_preconditioner`). Works in
        the chunk's backend (``float32`` iterations get ``float32`` vectors).
        """
        if self.warm_start and self.scaling is not None:
            if getattr(self, "_hessian_diagonal", None) is None:
                self._hessian_diagonal = data_hessian_diagonal(self._softmax_data.X, self._warm_start())
            backend = chunk.data.backend  # the float32 phase of mixed precision gets float32 arrays
            return diagonal_preconditioner(backend.asarray(self._hessian_diagonal), chunk, self.n_players, backend)
        if not self.warm_start or self.targets.n_classes * self.design.q > PRECONDITION_MAX_PARAMS:
            return None
        eigenvalues, vectors, blocks = self._full_curvature(chunk.data.backend)
        return low_rank_inverse(eigenvalues, vectors, chunk, self.n_players, blocks)

    def _full_curvature(self, backend: ArrayBackend) -> tuple[Array, Array, ClassBlocks]:
        """The full-data Hessian at the warm start, in ``backend``: its eigenpairs and its class blocks.

        Computed once in the learner's own backend from one set of full-data
        probabilities (:func:`._precondition.hessian_eigen`,
        :func:`._precondition.class_blocks`); copies for another float type are
        kept beside them.
        """
        own, xp = self._backend, self._backend.xp
        # built locally and published whole (a new dict for a new float type): threads sharing the learner
        # never see one half made, nor lose a type another thread added
        curvature = getattr(self, "_full_hessian", None)
        if curvature is None:
            X = self._softmax_data.X
            Z = self._warm_start() @ xp.permute_dims(X, (1, 0))  # (K, N); every class is present in D
            P = xp.exp(Z - xp.max(Z, axis=0, keepdims=True))
            P /= xp.sum(P, axis=0, keepdims=True)
            curvature = {own.dtype_name: (*hessian_eigen(_data_hessian(X, P), own), class_blocks(X, P, own))}
            self._full_hessian = curvature
        if backend.dtype_name not in curvature:
            eigenvalues, vectors, blocks = curvature[own.dtype_name]
            curvature = {**curvature, backend.dtype_name: (
                backend.asarray(eigenvalues), backend.asarray(vectors),
                ClassBlocks(backend.asarray(blocks.vectors), backend.asarray(blocks.eigenvalues)))}
            self._full_hessian = curvature
        return curvature[backend.dtype_name]

    def _warm_start(self) -> np.ndarray:
        """Start of every fit: the full-data solution when ``warm_start`` (fitted once), else 0.

        Published only once fitted: threads sharing the learner (joblib's
        threading backend) that find it unset fit it too, to the same bits,
        and none starts from a half-made one.
        """
        K, q = self.targets.n_classes, self.design.q
        backend = self._backend
        if not self.warm_start:
            return backend.zeros((K, q))
        if getattr(self, "_full_theta", None) is None:
            full = np.ones((1, self.n_players), dtype=bool)
            counts = self.targets.class_counts(full)
            theta = backend.zeros((K, q))
            if not degenerate_rows(full, self.targets, self.min_samples, counts)[0]:
                # every backend starts from the numpy path's fit (one problem is launch-bound on a device)
                solver = self if backend.is_numpy else self._on_numpy()
                theta = backend.asarray(solver._fit_thetas(full, counts, theta0=solver._backend.zeros((1, K, q)),
                                                           precondition=False, start=True)[0])
            self._full_theta = theta
        return self._full_theta

    @property
    def _softmax_data(self) -> _SoftmaxData:
        if getattr(self, "_data", None) is None:
            self._data = _SoftmaxData(self.design, self.targets, self._backend)
        return self._data

    @property
    def _mixed(self) -> bool:
        """``float32`` iterations before ``float64`` ones: L-BFGS with ``mixed_precision`` in ``float64`` on a device.

        Not on the CPU's compiled ``float64`` loops (:mod:`._lbfgs_rows`), where it saved 0-15%, nor, by
        default, on a GPU whose ``float64`` is fast (:func:`~..._device.fast_float64`).
        """
        wanted = not fast_float64(self.device) if self.mixed_precision == "auto" else self.mixed_precision
        return bool(wanted) and self.dtype == "float64" and not self._backend.is_numpy

    @property
    def _softmax_data32(self) -> _SoftmaxData:
        """The chunks' shared data in ``float32`` on the learner's device, for the first L-BFGS phase."""
        if getattr(self, "_data32", None) is None:
            self._data32 = _SoftmaxData(self.design, self.targets, ArrayBackend(self.device, "float32"))
        return self._data32

    def _fit_thetas(self, masks: np.ndarray, counts: np.ndarray, theta0: Array = None,
                    precondition: bool = True, chain: bool = False, start: bool = False) -> Array:
        """Centred parameters (m, K, q), in the backend, of non-degenerate coalitions, fitted chunk by chunk.

        ``masks`` are masks or integer sample weights (m, N) and ``counts`` the
        (weighted) class counts (m, K), both numpy; ``theta0`` a backend array.
        ``chain``: rows that add one point to the row before start from its
        solution, where :meth:`_links` allows it.
        """
        m = masks.shape[0]
        K, q = self.targets.n_classes, self.design.q
        backend = self._backend
        if theta0 is None:
            theta0 = self._warm_start()
        theta = backend.zeros((m, K, q)) + theta0
        iterations = backend.zeros((m,), "int")
        converged = backend.ones((m,), "bool")
        fit = self._newton_chunk if self._use_newton() else functools.partial(self._lbfgs_chunk,
                                                                              precondition=precondition)
        linked, links = self._links(masks) if chain else None, None
        # a device's launch-bound L-BFGS gains from its largest chunks (docs/guides/gpu.md, "Chunks")
        for rows in _chunks(m, self._chunk_size(self._row_bytes(), device_cap=DEVICE_FIT_CAP)):
            if linked is None:
                theta[rows], iterations[rows], converged[rows] = fit(masks[rows], counts[rows], theta[rows])
                continue
            links = PrefixLinks(linked[rows], None if links is None else links.previous)  # L-BFGS: _links says
            theta[rows], iterations[rows], converged[rows] = self._lbfgs_chunk(masks[rows], counts[rows], theta[rows],
                                                                               precondition, links)
        self._record_fit(backend.to_numpy(iterations), backend.to_numpy(converged), start)
        return theta

    @property
    def _chains(self) -> bool:  # fits chain along prefixes: chain_prefixes on the CPU's compiled L-BFGS
        own_rows = self._backend.is_numpy and self._backend.dtype_name == "float64" and not self._mixed
        return self.chain_prefixes and self.warm_start and own_rows and not self._use_newton()

    def _links(self, masks: np.ndarray) -> NDArray[np.bool_] | None:
        linked = PrefixLinks.of(masks) if self._chains else None  # rows chained to the row before
        return linked if linked is not None and linked.any() else None

    def _newton_chunk(self, masks: np.ndarray, counts: np.ndarray, theta: Array) -> tuple[Array, Array, Array]:
        """Newton on one chunk (over all ``N`` rows, mask weights): ``(theta, iterations, converged)``."""
        penalty = self._coalition_penalty(masks)  # None: the shared penalty
        if self.targets.n_classes == 2:  # every fitted coalition holds both classes: the binary objective
            binary = _BinaryChunk.from_masks(self._softmax_data, masks, self.C, penalty)
            v, iterations, converged = _newton(binary, _BinaryChunk.binary_parameters(theta), self.tol,
                                               self.max_iter)
            return _BinaryChunk.softmax_parameters(v), iterations, converged  # centred intercepts already
        chunk = _SoftmaxChunk.from_masks(self._softmax_data, masks, counts, self.C, penalty)
        theta, iterations, converged = _newton(chunk, theta * chunk.present[:, :, None], self.tol, self.max_iter)
        return self._centred(theta, chunk.present), iterations, converged

    def _lbfgs_chunk(self, masks: np.ndarray, counts: np.ndarray, theta: Array,
                     precondition: bool, links: PrefixLinks | None = None) -> tuple[Array, Array, Array]:
        """L-BFGS on one chunk: ``(theta, iterations, converged)``.

        With ``mixed_precision`` (and ``dtype="float64"``) the iterations run in
        ``float32`` first, at half the memory traffic, until the coalition meets
        ``tol`` or its line search stalls at ``float32`` rounding. L-BFGS then
        continues in ``float64`` from there, until ``tol`` is met in ``float64``,
        for the coalitions that stalled, and for all of them when ``tol`` is
        below :data:`FLOAT32_MIN_TOL`, where ``float32``'s own gradient test is
        not to be trusted. ``links`` (the compiled CPU path only) chains rows along prefixes.
        """
        penalty = self._coalition_penalty(masks)  # None: the shared penalty
        chunk = _SoftmaxChunk.from_masks(self._softmax_data, masks, counts, self.C, penalty)
        theta = theta * chunk.present[:, :, None]

        def solve(part: _SoftmaxChunk, start: Array, strict: bool = False) -> tuple[Array, Array, Array]:
            # float64 on the CPU: coalition by coalition on their own rows (linked along prefixes); else chunk-wide
            backend = part.data.backend
            own_rows = backend.is_numpy and backend.dtype_name == "float64"
            run = functools.partial(lbfgs_own_rows, links=links) if own_rows else _lbfgs
            return run(part, start, self.tol, self.max_iter, strict=strict,
                       precondition=self._preconditioner(part) if precondition else None)

        if not self._mixed:  # links come only here (:attr:`_chains`)
            theta, iterations, converged = solve(chunk, theta)
            return self._centred(theta, chunk.present), iterations, converged
        rough = _SoftmaxChunk.from_masks(self._softmax_data32, masks, counts, self.C, penalty)
        theta32, iterations, converged = solve(rough, rough.data.backend.asarray(theta), strict=True)
        theta = self._backend.asarray(theta32)
        rows = self._backend.arange(len(chunk))
        if self.tol >= FLOAT32_MIN_TOL:  # float32's gradient test holds: refine only the coalitions that stalled
            rows = rows[~self._backend.asarray(converged, "bool")]
        if rows.shape[0]:
            theta[rows], more, converged[rows] = solve(chunk.take(rows), theta[rows])
            iterations[rows] += more
        return self._centred(theta, chunk.present), iterations, converged

    def _centred(self, theta: Array, present: Array) -> Array:
        """``theta`` with the intercepts of present classes centred, as scikit-learn's are (in place)."""
        if self.design.fit_intercept:
            backend, xp = self._backend, self._backend.xp
            b = theta[:, :, -1]
            present = backend.asarray(present)
            b -= present * xp.sum(b * present, axis=1, keepdims=True) / xp.sum(present, axis=1, keepdims=True)
            theta[:, :, -1] = b
        return theta

    def _record_fit(self, iterations: np.ndarray, converged: np.ndarray, start: bool = False) -> None:
        """``last_fit_info_`` of a batch, and a ``ConvergenceWarning`` when coalitions (or the ``start``) hit
        ``max_iter``."""
        m = iterations.shape[0]
        self.last_fit_info_ = {"n_iter_max": int(iterations.max(initial=0)),
                               "n_iter_mean": float(iterations.mean()) if m else 0.0,
                               "n_not_converged": int((~converged).sum()),
                               "solver": "newton" if self._use_newton() else "lbfgs"}
        if not converged.all():
            from sklearn.exceptions import ConvergenceWarning

            short = f"did not reach tol={self.tol} in max_iter={self.max_iter} iterations"
            message = (f"the full-data fit every coalition starts from (warm_start) {short}; each coalition still "
                       "iterates to tol from where it stopped; scaled features (StandardScaler) converge faster."
                       if start else f"{int((~converged).sum())} of {m} coalitions {short}; raise max_iter.")
            self._warned.warn(f"LogisticRegressionUtility: {message}", ConvergenceWarning,
                              "start" if start else "coalitions", stacklevel=4)

    def _test_logits(self, theta: Array, present: Array, X: Array) -> Array:
        """Logits (B, K, n) of parameters ``theta`` on rows ``X`` (both backend), absent classes at ``NEG_LOGIT``."""
        backend, xp = self._backend, self._backend.xp
        offset = xp.where(backend.asarray(present, "bool"), backend.scalar(0.0), backend.scalar(NEG_LOGIT))
        return theta @ xp.permute_dims(X, (1, 0)) + offset[:, :, None]

    @property
    def _test_rows(self) -> tuple[Array, Array]:
        """The centred test design and the test labels' class indices, in the backend."""
        if getattr(self, "_test_backend", None) is None:
            self._test_backend = (self._backend.asarray(self.design.test),
                                  self._backend.asarray(self.targets.y_test_index, "int"))
        return self._test_backend

    def _score_thetas(self, theta: Array, present: np.ndarray) -> NDArray[np.float64]:
        """Test metric (numpy, m) of backend parameters ``theta`` (m, K, q) with classes ``present`` (m, K)."""
        backend, xp = self._backend, self._backend.xp
        values = np.empty(theta.shape[0])
        K, n_test = self.targets.n_classes, len(self.y_test)
        X_test, y_index = self._test_rows
        for s in _chunks(theta.shape[0], self._chunk_size(8 * 4 * K * n_test)):
            Z = self._test_logits(theta[s], present[s], X_test)
            if self.metric == "accuracy":
                values[s] = backend.to_numpy(xp.mean(backend.asarray(xp.argmax(Z, axis=1) == y_index), axis=1))
                continue
            zmax = xp.max(Z, axis=1)
            lse = zmax + xp.log(xp.sum(xp.exp(Z - zmax[:, None, :]), axis=1))
            z_true = xp.take_along_axis(Z, backend.maximum(y_index, 0)[None, None, :], axis=1)[:, 0, :]
            log_p = xp.where(y_index >= 0, z_true - lse, backend.scalar(-np.inf))
            values[s] = clipped_mean_log_probability(backend.to_numpy(log_p))
        return values

    def _fitted_utilities(self, masks: NDArray[np.bool_], counts: NDArray[np.float64] | None) -> NDArray[np.float64]:
        class_counts = cast(NDArray[np.float64], counts)  # always counted for classification
        return self._score_thetas(self._fit_thetas(masks, class_counts, chain=True), class_counts > 0)

    def fit_subsets(self, masks: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Fitted ``(coef, intercept)`` of each coalition, in scikit-learn's layout.

        ``masks`` (m, N) are boolean masks or integer sample weights (bootstrap
        counts: ``LogisticRegression().fit(X, y, sample_weight=w)``).

        Binary problems (two training classes): ``coef`` (m, d), ``intercept``
        (m,), as ``LogisticRegression.coef_[0]``/``intercept_[0]``. Otherwise
        ``coef`` (m, K, d) and ``intercept`` (m, K) over :attr:`classes_`, with
        zeros for classes absent from the coalition; for a coalition with
        exactly two classes ``c0 < c1``, scikit-learn's binary ``coef_`` is
        ``coef[c1] - coef[c0]`` (and likewise the intercept). Degenerate
        coalitions give NaN rows.
        """
        masks = check_weights(masks, self.n_players, "masks")
        counts = self.targets.class_counts(masks)
        fit = ~degenerate_rows(masks, self.targets, self.min_samples, counts)
        K, q = self.targets.n_classes, self.design.q
        theta = np.full((masks.shape[0], K, q), np.nan)
        if fit.any():
            theta[fit] = self._backend.to_numpy(self._fit_thetas(masks[fit], counts[fit], chain=True))
        coef, intercept = self.design.to_original(theta)
        if K == 2:
            return coef[:, 1] - coef[:, 0], intercept[:, 1] - intercept[:, 0]
        return coef, intercept

    def predict_proba(self, masks: ArrayLike, X: ArrayLike | None = None) -> NDArray[np.float64]:
        """Class probabilities (m, n, K) over :attr:`classes_` on ``X`` (default: the test set).

        ``masks`` (m, N) are boolean masks or integer sample weights
        (bootstrap counts). Classes absent from a coalition get probability 0.
        Degenerate coalitions give the constant model's probabilities (class
        frequencies of ``S``, weighted; the prior for the empty set).
        """
        masks = check_weights(masks, self.n_players, "masks")
        X = self.design.test if X is None else _check_features_like(X, self.design)
        counts = self.targets.class_counts(masks)
        fit = ~degenerate_rows(masks, self.targets, self.min_samples, counts)
        out = np.repeat(constant_frequencies(counts, self.targets)[:, None, :], X.shape[0], axis=1)
        if fit.any():
            backend, xp = self._backend, self._backend.xp
            theta = self._fit_thetas(masks[fit], counts[fit], chain=True)
            Z = self._test_logits(theta, counts[fit] > 0, backend.asarray(X))
            Z -= xp.max(Z, axis=1, keepdims=True)
            E = xp.exp(Z)
            out[fit] = backend.to_numpy(E / xp.sum(E, axis=1, keepdims=True)).transpose(0, 2, 1)
        return out

    def predict(self, masks: ArrayLike, X: ArrayLike | None = None) -> np.ndarray:
        """Predicted labels (m, n) on ``X`` (default: the test set) of each coalition's model.

        ``masks`` as in :meth:`predict_proba` (masks or integer sample
        weights); the label of largest probability, the first class on ties.
        """
        return self.classes_[np.argmax(self.predict_proba(masks, X), axis=2)]

    # -- one pass along permutations ----------------------------------------------------------
    def evaluate_prefixes(self, permutations: ArrayLike) -> NDArray[np.float64]:
        """Prefix utilities (m, n) in one pass per permutation: exact or an online approximation.

        With ``prefix_path="exact"`` every prefix is fitted to ``tol`` (the
        convergence test of :meth:`evaluate`), warm-started from the previous
        prefix's solution with quasi-Newton steps over the prefix's rows only
        (:mod:`shapley_research.utilities.learners._warm_prefix`); where fits chain along prefixes
        (``chain_prefixes``), by :meth:`evaluate` of the prefix masks instead (3.7x faster on MNIST
        PCA-50). The values agree with :meth:`evaluate` on the prefix masks to the solver tolerance. The rest
        of this docstring is about the default ``prefix_path="online"``.

        What it computes (:mod:`shapley_research.utilities.learners`): when point ``k`` joins the prefix,
        one quasi-Newton step on the prefix objective from the previous
        prefix's parameters, ``theta -= (k_ref / k) H_ref^{-1} grad f_k(theta)``,
        with the exact gradient of the whole prefix and the Hessian ``H_ref``
        of the last exact refit (at size ``k_ref``) rescaled to the prefix size.
        Exact refits (warm-started, to ``tol``, with their exact Hessian) happen
        when the prefix's set of classes changes and when it has grown by
        ``prefix_refit_ratio`` since the last refit. Degenerate prefixes follow
        the degenerate convention. Because the gradient is exact, errors of
        earlier steps are corrected by later ones; the parameters trail the
        refitted ones by a fraction of one point's influence. Measured
        differences to exact refits are in ``benchmarks/utility_throughput.py``
        and the tests; use :meth:`evaluate` on prefix masks for exact values.
        """
        n = self.n_players
        permutations = check_permutations(permutations, n)
        if self.device is not None or self.scaling is not None or (self.exact_prefixes and self._chains):
            return self._device_prefixes(permutations)
        m = permutations.shape[0]
        K, q = self.targets.n_classes, self.design.q
        P = K * q
        values = np.empty((m, n))
        degenerate = self._prefix_degenerate(permutations)
        if self.exact_prefixes:
            info = {"passes": 0, "refits": 0, "fallbacks": 0, "hessians": 0}
            # per permutation: its reordered rows, its inverse Hessian (float32), secant pairs
            per_perm_bytes = 8 * (n * (q + K) + P * P // 2 + 10 * P) + 8 * 4 * K * len(self.y_test)
            for s in _chunks(m, self._chunk_size(per_perm_bytes, cap=64)):
                values[s], counts = exact_prefix_utilities(self, permutations[s], degenerate[s])
                info = {key: info[key] + counts[key] for key in info}
            self.last_prefix_info_ = info
        else:
            inverse_size = P * P if self._use_newton() else K * q * q
            per_perm_bytes = 8 * (2 * inverse_size + 4 * P + 8 * n * K + 4 * K * len(self.y_test))
            for s in _chunks(m, self._chunk_size(per_perm_bytes, cap=256)):
                values[s] = online_prefix_utilities(self, permutations[s], degenerate[s])
        if degenerate.any():
            values[degenerate] = self._prefix_degenerate_utilities(permutations, degenerate)
        self.n_fits += int((~degenerate).sum())
        return values

    def _refit_sizes(self, n: int) -> np.ndarray:
        """Prefix sizes refitted exactly in every permutation: ``ceil(ratio^i)``, shared so refits batch."""
        if self.prefix_refit_ratio is None:
            return np.zeros(0, dtype=int)
        count = int(np.ceil(np.log(n) / np.log(self.prefix_refit_ratio))) + 2
        return np.unique(np.ceil(self.prefix_refit_ratio ** np.arange(count) - 1e-9).astype(int))

    def __repr__(self) -> str:
        return (f"LogisticRegressionUtility(n_players={self.n_players}, n_classes={self.targets.n_classes}, "
                f"C={self.C}, metric={self.metric!r}"
                + ("" if self.device is None else f", device={str(self.device)!r}, dtype={self.dtype!r}") + ")")
