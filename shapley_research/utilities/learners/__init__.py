r"""Batched learners: train many coalitions at once, score them like :class:`ModelUtility`.

Both games value training points by the test score of a linear model fitted
on the coalition, with the metrics and the degenerate-coalition convention
of :class:`~shapley_research.ModelUtility` (its Notes), and they minimise exactly scikit-learn's
objectives, so their utilities agree with ``ModelUtility(Ridge(alpha))`` and
``ModelUtility(LogisticRegression(C))``.

Notation: :math:`\tilde x_i = (x_i - \bar x, 1)` is the training point
centred by the training mean with an intercept column appended (``q = d + 1``
entries; without an intercept, ``\tilde x_i = x_i`` and ``q = d``). Since the
intercept is not penalised, centring is an exact reparametrisation (the
intercept absorbs :math:`\bar x^\top w`); it only improves conditioning.

:class:`RidgeUtility`
    ``Ridge(alpha)`` minimises :math:`\|y_S - X_S w - b\|^2 + \alpha\|w\|^2`.
    With :math:`R = \operatorname{diag}(\alpha, \dots, \alpha, 0)` the solution
    of coalition ``S`` (mask :math:`m`) solves the normal equations

    .. math:: \Bigl(R + \sum_i m_i \tilde x_i \tilde x_i^\top\Bigr)\theta = \sum_i m_i y_i \tilde x_i .

    For a batch of ``B`` coalitions the Gram matrices are one matrix product
    ``masks @ O`` with ``O`` the ``(N, q(q+1)/2)`` packed per-point outer
    products (``O(B N q^2)`` flops in one BLAS call), followed by one batched
    ``np.linalg.solve`` on ``(B, q, q)``. Along a permutation the inverse is
    updated by Sherman-Morrison, :math:`A_{k}^{-1} = A_{k-1}^{-1} -
    \frac{u u^\top}{1 + \tilde x^\top u}`, :math:`u = A_{k-1}^{-1}\tilde x`
    (``O(q^2)`` per prefix, exact; the inverse is recomputed every
    ``refresh_every`` points to stop rounding drift).

:class:`LogisticRegressionUtility`
    ``LogisticRegression(C)`` minimises :math:`C\sum_{i \in S}\ell_i(\theta) +
    \frac12\sum_k \|w_k\|^2` (intercepts unpenalised). With the classes
    :math:`\mathcal K_S` present in ``S``, :math:`\ell_i = \log\sum_{k \in
    \mathcal K_S} e^{z_{ik}} - z_{i y_i}`, :math:`z_{ik} = \theta_k^\top \tilde
    x_i`: a coalition with three or more classes gets the multinomial model
    over its classes, as scikit-learn fits. A coalition with exactly two classes
    gets scikit-learn's *binary* model :math:`C\sum_i \log(1 + e^{-s_i v^\top
    \tilde x_i}) + \frac12\|v\|^2`; it is computed in the same softmax code as
    the symmetric two-class softmax with :math:`C/2`, whose minimiser is
    :math:`\theta_{c_1} = -\theta_{c_0} = v/2` (the loss depends on
    :math:`\theta_{c_1} - \theta_{c_0}` only and the penalty then splits
    evenly), so predictions and probabilities are identical. Intercepts are
    kept centred (they sum to zero over present classes, as in scikit-learn).

    Solvers (batched over coalitions, each with its own convergence test
    :math:`\|\nabla f\|_\infty \le \text{tol}\cdot C\cdot|S|`, which is
    scikit-learn's ``gtol`` on its normalised objective, and an iteration cap):

    * ``"newton"``: Newton's method with the full softmax Hessian
      :math:`\sum_i m_i(\operatorname{diag} p_i - p_i p_i^\top) \otimes \tilde x_i\tilde x_i^\top`,
      built for a whole chunk by one product ``(B K^2, N) @ (N, q^2)`` of
      class-pair weights with the per-point outer products; ``(B, Kq, Kq)``
      batched LU solves (the null direction of the intercepts is made
      harmless by a rank-one term that does not change the step); a full step
      evaluated together with the next gradient, backtracking only where the
      Armijo test fails. Quadratic convergence: 3-5 iterations from the warm
      start, but ``O(K^2 N q^2)`` per iteration. On two-class problems it
      runs on the binary objective in :math:`v` instead (``_binary``): the
      same steps and convergence test (the symmetric softmax iterates are
      :math:`\pm v/2`), with ``q`` unknowns instead of ``2q``: a quarter of
      the Hessian product and an eighth of its factorisation;
    * ``"lbfgs"``: limited-memory BFGS (10 pairs, two-loop recursion) with
      backtracking Armijo steps: ``O(K N q)`` per iteration, for models with
      many parameters (MNIST after PCA: ``K q = 510``), where one Hessian costs
      more than a whole fit. Its initial inverse Hessian is the full-data
      Hessian scaled to the coalition, :math:`(C\frac{|S|}{N} H_D + I)^{-1}`
      through one eigendecomposition of :math:`H_D` (a random coalition's
      curvature is on average :math:`|S|/N` of the whole set's): about three
      times fewer iterations on MNIST. Applied through the leading
      eigenvectors a coalition needs; where it would need more than ``q``
      (features plus intercept), the class-diagonal blocks of the same matrix
      take its place, inverted class by class: cheaper to apply there, and as
      few iterations or fewer (``_precondition``). On a CPU each coalition runs alone on
      its own :math:`|S|` rows in compiled loops (``_lbfgs_rows``): no Python
      call per iteration and nothing over zero-weight rows, the same iterates
      to rounding; on a torch device the whole chunk iterates together;
    * ``"auto"``: Newton when its system has at most ``newton_max_params``
      unknowns (``q`` for two classes, ``K q`` otherwise), else L-BFGS.

    Warm start: every fit starts from the full-data solution (fitted once,
    like :math:`H_D`).
    Every product runs over all ``N`` rows with the mask as weights, so a chunk
    of coalitions costs a few large BLAS calls per iteration; converged
    coalitions leave the chunk.

    A ``Pipeline`` of scalers (``StandardScaler``, ``MinMaxScaler``,
    ``MaxAbsScaler``) and one of these models is the same model with a
    *per-coalition diagonal penalty* on the original features
    (:mod:`._scalers`): the solvers take one penalty row per coalition
    instead of the shared :math:`(1, \dots, 1, 0)`.

    One pass along a permutation (:meth:`LogisticRegressionUtility.evaluate_prefixes`)
    is an *approximation* of refitting every prefix, the paper's
    "incrementally trainable" model (Section 4.1). When point ``k`` joins the
    prefix ``S_k``, up to ``prefix_steps`` damped quasi-Newton (chord) steps
    on the prefix objective :math:`f_k` start from the previous prefix's
    parameters:

    .. math:: \theta \leftarrow \theta - t\,\frac{k_{\text{ref}}}{k}\,H_{\text{ref}}^{-1}\nabla f_k(\theta),

    with the exact gradient of the whole prefix, :math:`H_{\text{ref}}` the
    Hessian at the last exact refit (size :math:`k_{\text{ref}}`, rescaled to
    the prefix size; its class-diagonal blocks when Newton is not used, a
    preconditioner that provably contracts because twice it dominates the
    Hessian), and :math:`t` from Armijo backtracking (a stale Hessian
    overshoots on small, nearly separable prefixes). Steps stop once
    :math:`\|\nabla f_k\|_\infty \le 100\,\text{tol}\,C\,k`. The prefix is
    refitted exactly (warm-started, to ``tol``) at the sizes
    :math:`\lceil r^i\rceil` for ``r = prefix_refit_ratio`` (shared by all
    permutations, so refits are batched) and whenever its set of classes
    changes. Because each step uses the exact gradient, errors left by one
    step are corrected by the next; the tests and the benchmark report the
    distance to exact refits.

    With ``prefix_path="exact"`` the pass is exact instead
    (:mod:`shapley_research.utilities.learners._warm_prefix`): every prefix is iterated to the
    convergence test of :meth:`LogisticRegressionUtility.evaluate`, from the
    previous prefix's solution, by L-BFGS steps over the prefix's rows whose
    secant pairs carry over between prefixes, on top of the rescaled inverse
    Hessian of a recent prefix.

Layout
------
Private modules, from the bottom up: ``_base`` (centred design matrices and
the base class of both learners: data checks, degenerate coalitions, the
evaluate flow), ``_ridge`` (:class:`RidgeUtility`), ``_softmax`` (a chunk of
coalitions and its penalised softmax objective, gradient and Hessian),
``_binary`` (the binary objective Newton uses on two-class problems),
``_line_search`` (batched Armijo backtracking), ``_newton`` and ``_lbfgs``
(the batched solvers), ``_precondition`` (L-BFGS's initial inverse Hessians,
as data), ``_lbfgs_rows`` (L-BFGS coalition by coalition on own rows, compiled:
the CPU path), ``_online_prefix`` and ``_warm_prefix`` (the online
and the exact one-pass prefix paths), ``_logistic``
(:class:`LogisticRegressionUtility`), ``_cost`` (the predicted seconds per
coalition that ``fast="auto"`` routes by) and ``_routing`` (which scikit-learn
models :class:`~shapley_research.ModelUtility` may route here, and whether it does), with
``_scalers`` (a pipeline's per-coalition scalers as per-coalition penalties).
"""

from __future__ import annotations

from ._logistic import LogisticRegressionUtility
from ._ridge import RidgeUtility
from ._cost import RouteDecision, route_by_cost
from ._routing import check_fast, final_estimator, learner_for, route_decision, unsupported_reason
from ._scalers import CoalitionScaling, ScalerStep, is_pipeline, scaler_step
from ._softmax import NEG_LOGIT  # noqa: F401  (the logit of absent classes; was a module constant here)

__all__ = ["LogisticRegressionUtility", "RidgeUtility", "unsupported_reason", "learner_for", "route_decision",
           "check_fast", "route_by_cost", "RouteDecision", "is_pipeline", "final_estimator", "CoalitionScaling",
           "ScalerStep", "scaler_step"]
