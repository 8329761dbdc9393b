"""Permutation sampling: the Monte Carlo baseline (paper, Algorithm 3), and its truncated variant (TMC)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from . import _position_effects
from ._permutation_variants import Contributions, PermutationVariant, check_variant, over_rotations, with_reverses
from ._sampling._driver import Run, Sampler, SamplingOptions, SamplingSpec, drive
from ._sampling._loop import Anchors, MeanState, SamplingOutcome
from ._truncation import append_tally, sample_in_rounds, split_tally, truncated_contributions
from .._validation import check_game
from ..games import GameLike, evaluate_prefixes
from ..result import Finalizer, SamplingRecord, ValuationResult, register_finalizer

__all__ = ["permutation_shapley", "random_permutations", "marginal_contributions"]

_Estimator = TypeVar("_Estimator", bound=Callable[..., Any])


def random_permutations(rng: np.random.Generator, size: int, n_players: int) -> NDArray[np.int64]:
    """``size`` uniform random permutations of ``range(n_players)``, one per row: shape ``(size, n_players)``."""
    return rng.permuted(np.tile(np.arange(n_players), (size, 1)), axis=1)


def marginal_contributions(game: GameLike, permutations: NDArray[np.integer[Any]],
                           empty_utility: float) -> NDArray[np.float64]:
    r"""Marginal contributions :math:`\phi_i = U(P_i^\pi \cup \{i\}) - U(P_i^\pi)`.

    Returns a float64 array of the shape ``(T, N)`` of ``permutations``, indexed by player: row
    ``t`` holds the marginal contribution of each player along permutation ``t``.
    Uses the game's prefix path when it has one (one pass per permutation).
    """
    prefix = evaluate_prefixes(game, permutations)
    gains = np.diff(prefix, axis=1, prepend=empty_utility)
    phi = np.empty_like(gains)
    np.put_along_axis(phi, permutations, gains, axis=1)
    return phi


SAMPLING_PARAMETERS = r"""
    budget (every sampling estimator)
        A ``budget`` must pay for the estimator's fixed evaluations and one
        sample (one permutation, test, unit or coalition; ``msr_banzhaf``: two
        coalitions, one with and one without a player); a smaller one raises a
        ``ValueError`` naming the minimum. Samples are whole units (an
        antithetic pair of permutations costs ``2N``), so a budget can leave
        evaluations unspent: ``info["unspent_evaluations"]`` says how many
        (also when a precision target stopped the run early).

        A ``budget`` that covers every coalition (``2^N`` evaluations, ``2^N - 1``
        with ``empty_utility``; ``N <= 20``) buys the exact values: the game is
        enumerated once (:func:`~shapley_research.exact_shapley`) instead of
        sampled, with ``info["stopped_by"] == "enumeration"``, standard errors 0,
        no sample statistics to merge and no checkpoint written.
    checkpoint : str or os.PathLike, optional
        File holding the run's state. It is written atomically when sampling
        starts (the seed and anchors), every ``checkpoint_interval`` seconds,
        at the end and when the run is interrupted; if it exists, the run
        continues from it (with its seed when ``seed`` is None), giving
        exactly the values of an uninterrupted run. A file from another call or a corrupted one raises
        :class:`~shapley_research.CheckpointError` and is never overwritten.
        A finished run's file can be continued with a larger budget: if it
        ended on a whole batch, to the values of one run of that budget; if
        on a partial batch, its batches stay as they were and whole batches
        follow (the same two calls always give the same bits).
    checkpoint_interval : float, default 60
        Minimum seconds between two writes of the checkpoint.
    target_stderr : float, optional
        Stop as soon as the largest standard error of the values is at most
        this (checked after each batch, from 30 samples on); ``budget`` is
        then a cap and may be ``None`` (no cap). The progress bar estimates
        the evaluations still needed.
    target_rank_correlation : float, optional
        Stop as soon as the ranking of the players is stable: after each
        batch (from 30 samples on), with the current values :math:`v` and
        their standard errors :math:`s` (those of ``target_stderr``), the
        expected Spearman correlation between the estimate and a re-estimate
        of the same precision,

        .. math::

            \bar\rho = \frac1R \sum_{r=1}^{R} \rho_S(v,\; v + s \odot z_r),
            \qquad z_r \sim \mathcal N(0, I),\quad R = 32,

        is at least this, a number in ``(0, 1]`` (e.g. 0.9 to 0.99).
        :math:`\rho_S` is the Pearson correlation of the ranks; a player with
        zero standard error keeps its rank. The :math:`z_r` come from a fixed
        generator keyed by the sample count
        (:func:`shapley_research.estimators._sampling._loop.expected_rank_correlation`), so the
        stop is a function of the samples only: the same for any ``n_jobs``
        and after a resume. ``budget`` is then a cap and may be ``None``.
        With ``target_stderr`` as well, the run stops when either is met.
        ``info["stopped_by"]`` says what stopped the run: ``"budget"``,
        ``"target_stderr"`` or ``"target_rank_correlation"``. The progress
        bar shows the current :math:`\bar\rho`.
""".lstrip("\n")


def documents_sampling_options(estimator: _Estimator, exact: str = "exact_shapley") -> _Estimator:
    """Put :data:`SAMPLING_PARAMETERS` where ``estimator``'s docstring says ``{sampling}``.

    ``exact`` names the function whose values an enumerating budget buys.
    """
    if estimator.__doc__:  # None under python -OO
        text = SAMPLING_PARAMETERS.replace("exact_shapley", exact)
        estimator.__doc__ = estimator.__doc__.replace("{sampling}", text)
    return estimator


@documents_sampling_options
def permutation_shapley(game: GameLike, budget: int | None, seed: int | np.random.SeedSequence | None = None, *,
                        antithetic: bool = False, rotations: int = 1,
                        position_adjustment: bool = False, truncation: float | None = None,
                        batch_size: int | None = None,
                        n_jobs: int | None = None, progress: bool | None = None, empty_utility: float | None = None,
                        target_stderr: float | None = None,
                        target_rank_correlation: float | None = None,
                        checkpoint: str | os.PathLike[str] | None = None,
                        checkpoint_interval: float = 60.0) -> ValuationResult:
    r"""Shapley values by permutation sampling (Maleki et al.; paper Algorithm 3).

    For uniform random permutations :math:`\pi_t`, the marginal contributions
    :math:`\phi^t_i = U(P_i^{\pi_t} \cup \{i\}) - U(P_i^{\pi_t})` are unbiased
    for :math:`s_i`, and :math:`\hat s_i = \frac1T \sum_t \phi^t_i`. Each
    permutation costs ``N`` utility evaluations (the prefixes
    ``{pi_1}, ..., {pi_1..pi_N}``), computed in one pass when the game offers
    ``evaluate_prefixes``; ``U(empty)`` is evaluated once. Every permutation
    satisfies efficiency exactly: ``sum(phi^t) = U(D) - U(empty)``.

    Parameters
    ----------
    game : GameLike
        Object with ``n_players`` and ``evaluate(masks)`` (and optionally
        ``evaluate_prefixes(permutations)``).
    budget : int or None
        Utility evaluations allowed: ``T = (budget - 1) // N`` permutations are
        drawn (``// (2N)`` pairs with ``antithetic``, ``// (mN)`` groups with
        ``rotations=m``; with ``truncation``, as many as the evaluations
        actually made allow, see there). Must afford at least one.
        ``None`` (no cap) only with a ``target_stderr`` or
        ``target_rank_correlation``.
    seed : int or numpy.random.SeedSequence, optional
        Seed of the random streams; ``None`` draws one (kept on the result).
    antithetic : bool, default False
        Pair every permutation with its reverse and average the pair, a
        control variate that cuts the variance on most games. The standard
        error is then computed over pairs.
    rotations : int, default 1
        Stratify the positions: every drawn permutation :math:`\pi` is used in
        ``m = rotations`` cyclic rotations, by evenly spaced offsets
        :math:`r_j = (u + \lfloor jN/m \rfloor) \bmod N` with a uniform random
        phase :math:`u` (each rotation, and its reverse with ``antithetic``,
        is a uniform random permutation, so the estimate stays unbiased). A
        player then takes ``m`` positions spread evenly over ``0..N-1``
        instead of one, which removes the part of the variance due to *where*
        it joins: on games whose marginal contributions depend mostly on the
        coalition size (KNN utilities, learning curves) this pays off; with
        ``m = N`` a symmetric game's values come out exact. Costs ``m N``
        evaluations per sampling unit (``2 m N`` with ``antithetic``); the
        standard error is computed over units. Between 1 and ``N``. The
        rotations of one group share the cyclic order of the players, so on
        games driven by interactions among a few points (unanimity terms)
        a large ``m`` adds variance; 4 to 16 suits most data-valuation games
        (on the KNN benchmark, 16 with ``antithetic`` reached the error of
        antithetic sampling alone with about 0.6x the evaluations; on a sum
        of 3-player unanimity games it did worse).
    position_adjustment : bool, default False
        Regression adjustment for the position at which each player joins:
        fit the additive model
        :math:`\Delta_{i,t} \approx \alpha_i + h_{b(k_{i,t})}` (a player
        effect plus an effect of the bin of its position ``k``; single
        positions near both ends, geometrically wider bins toward the
        middle, ``O(log N)`` bins) to all samples by least squares, and
        return :math:`\hat\alpha_i + \frac1N\sum_k \hat h_{b(k)}`. The
        part of the variance due to where a player joins, common to all
        players, is estimated from all of them at once, at no extra
        evaluation. Efficiency still holds exactly; the estimate is
        consistent, with an :math:`O(1/T)` bias from fitting on the same
        samples (see :mod:`shapley_research.estimators._position_effects`),
        and a null player's value is no longer exactly 0 (its share of the
        fitted position effects' noise). With
        ``antithetic``, on the benchmarks it reached the error of antithetic
        sampling alone with about half the evaluations (0.45-0.5x on a
        linear + sqrt(size) + unanimity game and on MNIST KNN). Not with
        ``rotations`` (which stratify the positions instead). State:
        ``4 N B`` floats.
    truncation : float, optional
        Truncated Monte Carlo (Ghorbani and Zou, ICML 2019), a number ``t``
        in ``[0, 1)``: a permutation stops being evaluated at the first
        prefix :math:`P` with :math:`|U(D) - U(P)| < t\,|U(D)|` (the empty
        prefix included), and the players after it get marginal contribution
        0. :math:`U(D)` is evaluated once, as an anchor (the last prefix of
        a permutation, :math:`D`, is then never evaluated). **The values are
        biased**: a player after the stop gets 0 where its marginal
        contribution :math:`U(P \cup \{i\}) - U(P)` need not be 0 (noise
        of a learner near saturation, or a real effect), so the estimate
        converges to the mean *truncated* contribution, not to :math:`s_i`;
        the standard error measures only the sampling noise around that. The
        bias vanishes on games whose utility stays put once within the
        tolerance of :math:`U(D)` (e.g. a game that saturates exactly).
        Efficiency becomes :math:`\sum_i \phi^t_i = U(P_{stop}) - U(\emptyset)`,
        within :math:`t\,|U(D)|` of :math:`U(D) - U(\emptyset)`. The prefixes
        of the permutations still running are evaluated a chunk of positions
        at a time (about 9 calls of ``game.evaluate`` per batch, see
        :func:`prefix_chunks`), so a permutation that stops at position ``k``
        costs at most about ``1.5 k`` evaluations. The budget counts the
        evaluations made: the run samples in rounds, each of the whole
        batches the evaluations left pay for at the full cost of ``N`` per
        permutation (one final partial batch when no whole batch is paid
        for), until no further permutation is; so savings buy more
        permutations, the budget is never exceeded, and the number of
        permutations in every batch stays ``batch_size`` (the rounds are
        reckoned from the evaluations of whole batches, a function of the
        seed: identical for any ``n_jobs`` and after a resume).
        ``info["truncation"]`` is ``t``, ``info["mean_truncation_position"]``
        the mean number of leading players per permutation whose
        contribution was computed (``N``: none truncated), and
        ``info["evaluations_saved"]`` the prefix evaluations not made, next
        to ``N`` per permutation (the anchor costs one more per run).
        ``t = 0`` truncates nothing: plain permutation sampling with these
        entries (no anchor; the same values and evaluations as
        ``truncation=None``). Combines with ``antithetic`` (each permutation
        of a pair stops on its own), ``rotations`` and
        ``position_adjustment`` (consistent for the mean truncated
        contribution). With ``t > 0`` not on a game with
        ``evaluate_prefixes``: its one pass computes every prefix, the
        evaluations truncation exists to skip.
    batch_size : int, optional
        Sampling units (permutations, pairs or groups of rotations) per
        batch; by default about ``2**22`` mask cells. Results depend on it
        (it fixes the seed streams), never on ``n_jobs``. With
        ``truncation > 0`` and a budget, the default is at most ``T / 32``
        (``T`` the units the budget pays for at full cost, at least 1): the
        savings buy whole batches, and only what the last, partial batch
        saves is left unspent (at most about a 32nd of the budget). That
        default depends on the budget, so pass ``batch_size`` to continue a
        checkpoint with another budget.
    n_jobs : int, optional
        Parallel batches through joblib (``None`` or 1: sequential; -1: all
        cores). ``joblib.parallel_config(backend="dask")`` runs them on a Dask
        cluster.
    progress : bool, optional
        Show progress, counted in utility evaluations with their rate and the
        time left: ``None`` (default) shows a live bar on an interactive
        terminal and in a notebook, and in a log (stderr redirected to a file
        or a pipe) one plain line every 30 s once a run has lasted that long;
        ``True`` shows it from the start everywhere; ``False`` never. The bar
        moves after every batch and, with ``n_jobs`` of ``None`` or 1, as a
        game that fits per coalition reports rows
        (:func:`~shapley_research.games.report_evaluated`); batches
        run by workers move it once each. It never changes a number.
    empty_utility : float, optional
        Use this value as ``U(empty)`` instead of evaluating it.
{sampling}
    Returns
    -------
    ValuationResult
        With the running standard error of each value in ``stderr``; runs with
        different seeds combine with :func:`~shapley_research.merge_results`.
    """
    n = check_game(game)
    variant = check_variant(game, n, antithetic=antithetic, rotations=rotations,
                            position_adjustment=position_adjustment, truncation=truncation)
    options = SamplingOptions.checked(
        game, "permutation_shapley", batch_size=batch_size, n_jobs=n_jobs, progress=progress,
        empty_utility=empty_utility, target_stderr=target_stderr, target_rank_correlation=target_rank_correlation,
        checkpoint=checkpoint, checkpoint_interval=checkpoint_interval)
    return drive(PermutationSpec.of(variant), game, budget, seed, options)


@dataclass(frozen=True, kw_only=True)
class PermutationSpec(SamplingSpec):
    """:func:`permutation_shapley` for :func:`~._sampling._driver.drive`: a unit is a permutation, an antithetic
    pair or a group of rotations (:class:`PermutationVariant`); truncated runs sample in rounds."""

    variant: PermutationVariant

    @classmethod
    def of(cls, variant: PermutationVariant) -> PermutationSpec:
        """The specification of a run of ``variant``."""
        return cls(method="permutation", n_players=variant.n_players, dim=variant.state_dim(),
                   per_unit=variant.evaluations_per_unit, unit_name=variant.unit_name,
                   desc="permutation sampling" if variant.truncation is None else "truncated permutation sampling",
                   progress_unit=variant.progress_unit, needs_full=variant.stops_early, variant=variant)

    def batch_size(self, batch_size: int | None, n_units: int | None) -> int:
        return self.variant.batch_size(batch_size, n_units)

    def fingerprint_options(self, n_units: int | None) -> dict:
        return self.variant.options()

    def enumeration_info(self, empty_utility: float | None) -> dict:
        options = self.variant.options()
        return {"options": options, **options}

    def start(self, game: GameLike, run: Run, anchors: Anchors | None) -> Sampler:
        variant, anchors = self.variant, cast(Anchors, anchors)  # U(empty) is always needed
        options = variant.options()
        info = {"options": options, **options, "batch_size": run.batch_size, "empty_utility": anchors.empty,
                **({"full_utility": anchors.full} if variant.stops_early else {}),
                **({"n_players": self.n_players} if variant.position_adjustment or variant.truncation is not None
                   else {})}
        record = SamplingRecord(PermutationFinalizer(variant), options, empty_utility=anchors.empty,
                                full_utility=anchors.full if variant.stops_early else None, seeds=(run.entropy,))
        return Sampler(PermutationBatches(game, variant, anchors), info, record,
                       estimates_of=_judged_estimates(variant, record))

    def loop(self, sampler: Sampler, run: Run, n_units: int | None, budget: object,
             **sampling: Any) -> SamplingOutcome:
        if self.variant.truncation is None:
            return super().loop(sampler, run, n_units, budget, **sampling)
        # the savings of truncated permutations buy more of them
        return sample_in_rounds(sampler.sample_batch, budget=None if n_units is None else budget,
                                fixed=self.fixed(run.options.empty_utility), per_unit=self.per_unit,
                                checkpoint=run.checkpoint, **sampling)

    def samples(self, state: MeanState) -> int:
        return state.count * self.variant.permutations_per_unit


class PermutationBatches:
    """The ``sample_batch`` of :func:`run_sampling` for a :class:`PermutationVariant` of ``game``.

    Draws ``size`` sampling units (a permutation, an antithetic pair or a group of rotations) and returns
    their samples, the contributions averaged over the unit (with position adjustment with their positions'
    bins, a :class:`~._position_effects.PositionBatch` that merges as the two-way fit's statistics, with
    truncation each followed by its tally), and the evaluations made.
    """

    def __init__(self, game: GameLike, variant: PermutationVariant, anchors: Anchors) -> None:
        self.game, self.variant, self.anchors = game, variant, anchors
        self.bins, self.n_bins = variant.position_bins()

    def along(self, permutations: np.ndarray) -> Contributions:
        """Contributions along ``permutations``, how many leading players got one, and the evaluations, per row."""
        variant, anchors = self.variant, self.anchors
        if variant.stops_early:
            return truncated_contributions(self.game, permutations, anchors.empty, anchors.full,
                                           cast(float, variant.truncation) * abs(anchors.full))  # set: stops_early
        every = np.full(len(permutations), variant.n_players)
        return marginal_contributions(self.game, permutations, anchors.empty), every, every

    def contributions(self, permutations: np.ndarray) -> Contributions:
        """As :meth:`along`, over antithetic pairs with ``antithetic``."""
        if not self.variant.antithetic:
            return self.along(permutations)
        return with_reverses(self.along, permutations)

    def __call__(self, rng: np.random.Generator, size: int) -> tuple[np.ndarray | _position_effects.PositionBatch,
                                                                       int]:
        variant = self.variant
        phi: np.ndarray | _position_effects.PositionBatch
        permutations = random_permutations(rng, size, variant.n_players)
        if variant.rotations == 1:
            phi, stops, made = self.contributions(permutations)
            if variant.position_adjustment:
                bins = cast(np.ndarray, self.bins)  # not None with position_adjustment
                phi = _position_effects.reduce_by_position(phi, permutations, bins, self.n_bins)
        else:
            phase = rng.integers(variant.n_players, size=size)
            phi, stops, made = over_rotations(self.contributions, permutations, phase, variant.rotations)
        if variant.truncation is not None:
            phi = append_tally(phi, stops, made)
        return phi, int(made.sum())


def _judged_estimates(variant: PermutationVariant, record: SamplingRecord):
    """What the stopping targets judge: the values (position-adjusted: the fit; truncated: without the tally),
    not the mean of the statistics; ``None``: the mean itself."""
    if variant.truncation is not None:
        return lambda state: record.estimates(state)[:2]
    if variant.position_adjustment:
        bins, n_bins = variant.position_bins()
        adjusted_bins = cast(np.ndarray, bins)  # not None with position_adjustment
        return lambda state: _position_effects.fit(state, adjusted_bins, n_bins)
    return None


@register_finalizer("permutation")
@dataclass(frozen=True)
class PermutationFinalizer(Finalizer):
    """The final step of :func:`permutation_shapley`: the values are the mean marginal contributions
    (position-adjusted: the two-way fit).

    A truncated run's state ends with :data:`~._truncation.TALLY` coordinates, the mean stop
    position and evaluations per sample, reported in ``info``.
    """

    variant: PermutationVariant

    def finalize(self, state: MeanState, record: SamplingRecord) -> tuple[np.ndarray, np.ndarray, dict]:
        variant, updates = self.variant, dict[str, Any]()
        if variant.truncation is not None:
            state, updates = split_tally(state, variant.evaluations_per_unit)
        if variant.position_adjustment:
            bins, n_bins = variant.position_bins()
            values, stderr = _position_effects.fit(state, cast(np.ndarray, bins), n_bins)
            return values, stderr, updates
        return state.mean.copy(), state.stderr, updates
