r"""Influence-function heuristics: L2-regularised logistic regression (paper Section 4.5) and torch models.

Two estimators replace model re-training by the influence function of Koh &
Liang (2017):

* :func:`largest_s_influence` (*largest-S influence*): one model trained on the
  whole training set ``I``; the marginal contribution of every point to its
  largest coalition, :math:`U(I) - U(I \setminus \{i\})`, from the influence of
  removing it, rescaled by the constant :math:`C_U` of the paper's Theorem 6 so
  that the values sum to :math:`U(I) - U(\emptyset)`.
  :func:`largest_s_influence_general` does the same for any smooth model given
  its per-sample gradients, Hessian and test-utility gradient.
* :func:`all_s_influence` (*all-S influence*): the Shapley value written by
  coalition size,

  .. math::

      s_i = \frac1N \sum_{k=0}^{N-1} \mathbb E\bigl[X_i^k\bigr], \qquad
      X_i^k = U(S \cup \{i\}) - U(S),\; S \text{ uniform among the size-}k
      \text{ subsets of } I \setminus \{i\},

  estimated by stratified sampling over the sizes ``k`` (Neyman allocation
  after a pilot round). Each sampled coalition costs one model fit; the
  marginal contributions of all players to it follow from influence updates of
  that one fitted model.

:func:`torch_influence` gives Koh & Liang's influence values of the model of a
:class:`~shapley_research.TorchModelUtility` (any small torch module, its
Hessian explicit, or its inverse by conjugate gradients, LiSSA or Arnoldi); the rest of this page is the
logistic machinery.

The model
---------
:class:`LogisticObjective` is exactly scikit-learn's
``LogisticRegression(C=C)`` (L2 penalty, ``l1_ratio=0``), written for
parameters :math:`\theta` (weights :math:`w`, unpenalised intercept :math:`b`)
and a training subset :math:`S`:

.. math::

    F_S(\theta) = C \sum_{j \in S} \ell(z_j, \theta) + \tfrac12 \lVert w \rVert^2 .

For two classes (labels coded :math:`y \in \{-1, +1\}`, positive class =
the larger label, as in scikit-learn) :math:`\ell = \log(1 + e^{-y\,
\tilde x^\top \theta})` with :math:`\tilde x = (x, 1)`; for :math:`K \ge 3`
classes it is the softmax cross-entropy with one weight row and intercept per
class (scikit-learn's multinomial model). Per-sample gradient and Hessian are

.. math::

    \nabla \ell = r \otimes \tilde x, \qquad \nabla^2 \ell = A \otimes \tilde x \tilde x^\top,

with residual :math:`r = \sigma(\tilde x^\top\theta) - [y = +1]` and curvature
:math:`A = \sigma(\tilde x^\top\theta)\,\sigma(-\tilde x^\top\theta)` (binary),
or :math:`r = p - e_y`, :math:`A = \operatorname{diag}(p) - p p^\top` (softmax).
Dividing :math:`F` by :math:`C` gives the paper's closed form: the Hessian is
:math:`\sum_j \sigma\sigma\, \tilde x_j \tilde x_j^\top + I_w / C`, where the
identity acts on the weights only.

The influence update
--------------------
Adding (:math:`s = +1`) or removing (:math:`s = -1`) a point :math:`z` changes
the objective to :math:`F' = F + s\,C\,\ell(z, \cdot)`. One Newton step on
:math:`F'` from the fitted :math:`\hat\theta` (where :math:`\nabla F = 0`) is

.. math::

    \Delta\theta = -\bigl(H + s\,C \nabla^2\ell(z, \hat\theta)\bigr)^{-1}
                   s\,C\, \nabla\ell(z, \hat\theta)
    \qquad (\texttt{approximation="newton"}),

and the classic influence function replaces the updated Hessian by the
Hessian :math:`H` of :math:`F` itself (``approximation="influence"``, the
formula of the paper and of Koh & Liang):
:math:`\Delta\theta = -s\, H^{-1} C \nabla\ell(z, \hat\theta)`. For removal
this is :math:`+H^{-1} C \nabla \ell`, the paper's
:math:`-(\sum_i \sigma\sigma x_i x_i^\top)^{-1}\sigma(-y x^\top\theta)\,y\,x`
with the regularisation term added. Because :math:`\nabla^2\ell` has rank
:math:`K' \le K`, the Newton step costs the same as the influence step
(push-through identity):
:math:`(H + U B U^\top)^{-1} U = H^{-1} U (I + B\,U^\top H^{-1} U)^{-1}` with
:math:`U = I_{K'} \otimes \tilde x`, :math:`B = s\,C A`; for binary models it
is the influence step divided by :math:`1 + s\,C\,\sigma\sigma\,\tilde x^\top
H^{-1} \tilde x` (one minus/plus the leverage).

The utility change then is either linear,
:math:`\Delta U \approx \nabla U_{\text{test}}(\hat\theta)^\top \Delta\theta`
(``utility_change="linear"``, the paper's first-order rule), or the test
utility evaluated at the updated parameters,
:math:`U_{\text{test}}(\hat\theta + \Delta\theta) - U_{\text{test}}(\hat\theta)`
(``utility_change="evaluate"``): exact in the utility, needed for accuracy.

Test utilities
--------------
``"neg_log_loss"``: minus the mean test cross-entropy (the paper's runtime
experiment). ``"accuracy"``: the test accuracy, with a tie between ``t``
classes credited ``1/t`` (so the uninformed model scores ``1/K``). Accuracy is
piecewise constant in :math:`\theta`, so its *linear* change uses the
gradient of the smooth surrogate "expected accuracy" (the mean predicted
probability of the true class, :math:`\frac1T\sum_t p_{y_t}(x_t)`, equal to
the accuracy of the model's randomised predictions); ``"evaluate"`` uses the
true accuracy.

Degenerate subsets (a fixed convention)
---------------------------------------
A training subset that lacks one of the ``K`` classes (in particular the empty
set and every single point) cannot be fitted: the unpenalised intercept of a
missing class diverges and the test log-loss becomes infinite. Such a subset
gets the *uninformed model* :math:`\theta = 0` (uniform prediction), so
:math:`U(S) = U_0 := U_{\text{test}}(0)`: :math:`-\log K` for
``"neg_log_loss"``, :math:`1/K` for ``"accuracy"``. This is also
:math:`U(\emptyset)`. Consequences: :math:`X_i^0 = U(\{i\}) - U(\emptyset) = 0`
for every ``i`` (the ``k = 0`` stratum is known exactly and never sampled),
and a marginal contribution between two degenerate subsets is exactly ``0``.
Adding a point to a degenerate subset that completes the classes is
approximated by one Newton step of the completed objective from
:math:`\theta = 0` (or the influence step with the Hessian at ``0``).

Layout
------
Private modules: ``_objective`` (:class:`LogisticObjective`: the model, its
derivatives, the test utilities and the influence updates), ``_marginals``
(marginal contributions of players to one fitted base set), ``_largest_s``
(:func:`largest_s_influence`, :func:`largest_s_influence_general`),
``_allocation`` (:func:`neyman_allocation` and the per-stratum statistics),
``_all_s`` (:func:`all_s_influence`), ``_torch_influence`` (:func:`torch_influence`) and
``_hessian_solvers`` (its LiSSA and Arnoldi solvers).
"""

from __future__ import annotations

from ._all_s import all_s_influence
from ._allocation import neyman_allocation
from ._largest_s import largest_s_influence, largest_s_influence_general
from ._objective import LogisticObjective
from ._torch_influence import torch_influence

# importable from here as when this package was one module: the option tuples
from ._allocation import PRIOR_SETS  # noqa: F401
from ._marginals import UTILITY_CHANGES  # noqa: F401
from ._objective import APPROXIMATIONS, UTILITIES  # noqa: F401

__all__ = [
    "LogisticObjective", "largest_s_influence", "largest_s_influence_general", "all_s_influence",
    "neyman_allocation", "torch_influence",
]
