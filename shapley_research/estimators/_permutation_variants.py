r"""The variants of permutation sampling that :func:`~shapley_research.permutation_shapley` composes.

Each variant is a named unit here or beside the code it shares:

* antithetic pairs, :func:`with_reverses`: a permutation and its reverse,
  averaged;
* rotations, :func:`rotation_of` and :func:`over_rotations`: ``m`` cyclic
  rotations of each permutation by evenly spaced offsets, averaged;
* position adjustment, :func:`~._position_effects.reduce_by_position`: a
  batch reduced to the statistics of the two-way fit;
* truncation, :func:`~._truncation.truncated_contributions` and
  :func:`~._truncation.append_tally`: permutations that stop near ``U(D)``,
  each sample carrying its stop position and evaluations.

:class:`PermutationVariant` is the validated choice of variants of one run:
what a sampling unit costs and is called, the options it records, and the
layout of the state it accumulates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import _position_effects
from ._sampling._loop import default_batch_size
from ._truncation import TALLY, TRUNCATED_BATCHES, _check_truncation
from .._validation import check_bool, check_int

# contributions along permutations, per row: (phi (m, n), stop positions (m,), evaluations made (m,))
Contributions = tuple[np.ndarray, np.ndarray, np.ndarray]


def with_reverses(along: Callable[[np.ndarray], Contributions], permutations: np.ndarray) -> Contributions:
    """Antithetic pairs: ``along`` each permutation and its reverse, contributions and stops averaged over
    the pair, evaluations summed."""
    phi, stops, made = along(np.concatenate([permutations, permutations[:, ::-1]]))
    m = len(permutations)
    return 0.5 * (phi[:m] + phi[m:]), 0.5 * (stops[:m] + stops[m:]), made[:m] + made[m:]


def rotation_of(permutations: np.ndarray, phase: np.ndarray, j: int, rotations: int) -> np.ndarray:
    r"""Rotation ``j`` of ``rotations``: row ``t`` shifted cyclically by :math:`(u_t + \lfloor jN/m \rfloor) \bmod N`
    (``u = phase``), a uniform random permutation whenever the row is."""
    n = permutations.shape[1]
    shift = (phase + j * n // rotations) % n
    return np.take_along_axis(permutations, (shift[:, None] + np.arange(n)) % n, axis=1)


def over_rotations(contributions: Callable[[np.ndarray], Contributions], permutations: np.ndarray,
                   phase: np.ndarray, rotations: int) -> Contributions:
    """``contributions`` along every rotation of ``permutations``: contributions and stops averaged over the
    rotations, evaluations summed. One rotation at a time: memory as for the permutations alone."""
    size, n = permutations.shape
    total, stops_total, made_total = np.zeros((size, n)), np.zeros(size), np.zeros(size, dtype=np.int64)
    for j in range(rotations):
        phi, stops, made = contributions(rotation_of(permutations, phase, j, rotations))
        total += phi
        stops_total += stops
        made_total += made
    return total / rotations, stops_total / rotations, made_total


@dataclass(frozen=True)
class PermutationVariant:
    """Which variants of permutation sampling one run combines (see :func:`check_variant`)."""

    n_players: int
    antithetic: bool = False
    rotations: int = 1
    position_adjustment: bool = False
    truncation: float | None = None

    @property
    def stops_early(self) -> bool:
        """Whether permutations may stop (``truncation > 0``; ``0`` truncates nothing and needs no ``U(D)``)."""
        return bool(self.truncation)

    @property
    def permutations_per_unit(self) -> int:
        """Permutations in one sampling unit: a permutation, a pair, or a group of rotations."""
        return (2 if self.antithetic else 1) * self.rotations

    @property
    def evaluations_per_unit(self) -> int:
        """Evaluations of one unit (with truncation: at most)."""
        return self.permutations_per_unit * self.n_players

    @property
    def unit_name(self) -> str:
        """A unit, in words, for the budget's messages."""
        if self.rotations > 1:
            return f"group of {self.rotations} rotated {'antithetic pairs' if self.antithetic else 'permutations'}"
        return "antithetic pair of permutations" if self.antithetic else "permutation"

    @property
    def progress_unit(self) -> str:
        """A unit, in one word, for the progress bar."""
        return "group" if self.rotations > 1 else "pair" if self.antithetic else "perm"

    def options(self) -> dict:
        """The options recorded in the checkpoint's fingerprint and in ``info``.

        ``rotations``, ``position_adjustment`` and ``truncation`` appear only when used, so that files and
        results of plain runs keep their fingerprint.
        """
        options: dict[str, bool | int | float] = {"antithetic": self.antithetic}
        if self.rotations > 1:
            options["rotations"] = self.rotations
        if self.position_adjustment:
            options["position_adjustment"] = True
        if self.truncation is not None:
            options["truncation"] = self.truncation
        return options

    def position_bins(self) -> tuple[np.ndarray | None, int]:
        """Bins of the positions and their number with ``position_adjustment``; ``(None, 0)`` without."""
        if not self.position_adjustment:
            return None, 0
        return _position_effects.position_bins(self.n_players, self.antithetic)

    def state_dim(self) -> int:
        """Length of a sample: the contributions, or the two-way fit's statistics, and the truncation tally."""
        _, n_bins = self.position_bins()
        dim = 2 * self.n_players * n_bins if self.position_adjustment else self.n_players
        return dim + (TALLY if self.truncation is not None else 0)

    def batch_size(self, batch_size: int | None, n_units: int | None) -> int:
        """``batch_size`` checked, or the default: with truncation and a budget, small enough that the savings
        buy whole batches."""
        if batch_size is not None:
            return check_int(batch_size, "batch_size", minimum=1)
        batch_size = default_batch_size(self.n_players, self.evaluations_per_unit)
        if self.stops_early and n_units is not None:
            batch_size = max(1, min(batch_size, n_units // TRUNCATED_BATCHES))
        return batch_size


def check_variant(game, n_players: int, *, antithetic, rotations, position_adjustment,
                  truncation) -> PermutationVariant:
    """The :class:`PermutationVariant` of ``permutation_shapley``'s arguments, or a ``ValueError``/``TypeError``."""
    antithetic = check_bool(antithetic, "antithetic")
    rotations = check_int(rotations, "rotations", minimum=1)
    if rotations > n_players:
        raise ValueError(f"rotations must be between 1 and n_players={n_players}, got {rotations}.")
    position_adjustment = check_bool(position_adjustment, "position_adjustment")
    if position_adjustment and rotations > 1:
        raise ValueError("position_adjustment and rotations > 1 cannot be combined: both deal with the positions "
                         "players join at (rotations stratify them, the adjustment regresses on them); pick one.")
    truncation = _check_truncation(truncation, game)
    return PermutationVariant(n_players, antithetic, rotations, position_adjustment, truncation)
