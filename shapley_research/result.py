"""The one result type returned by every estimator."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ValuationResult"]


@dataclass
class ValuationResult:
    """Values of the players of a game, with how they were obtained.

    Attributes
    ----------
    values : ndarray of shape (n_players,)
        Estimated (or exact) Shapley values.
    n_evaluations : int
        Utility evaluations actually made (coalitions whose utility was
        computed), including fixed ones such as ``U(D)`` and ``U(empty)``.
    method : str
        Name of the estimator, e.g. ``"permutation"`` or ``"group_testing[improved]"``.
    seed : int or None
        Entropy of the random streams; passing it as ``seed`` repeats the run.
        ``None`` for deterministic methods.
    wall_time : float
        Seconds spent in the estimator.
    stderr : ndarray of shape (n_players,) or None
        Standard error of each value where the method gives one.
    n_samples : int
        Monte Carlo samples drawn (permutations or tests); 0 for exact methods.
    info : dict
        Method-specific details (recovery status, epsilon used, ...).
    """

    values: np.ndarray
    n_evaluations: int
    method: str
    seed: int | None = None
    wall_time: float = 0.0
    stderr: np.ndarray | None = None
    n_samples: int = 0
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        self.values = np.asarray(self.values, dtype=float)
        if self.stderr is not None:
            self.stderr = np.asarray(self.stderr, dtype=float)

    @property
    def n_players(self) -> int:
        return self.values.shape[0]

    def __len__(self) -> int:
        return self.n_players

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)

    def ranking(self) -> np.ndarray:
        """Player indices from most to least valuable (ties by index)."""
        return np.argsort(-self.values, kind="stable")

    def to_dataframe(self):
        """Tidy table: one row per player with value and standard error."""
        import pandas as pd

        frame = pd.DataFrame({"player": np.arange(self.n_players), "value": self.values})
        if self.stderr is not None:
            frame["stderr"] = self.stderr
        frame["method"] = self.method
        return frame

    def __repr__(self) -> str:
        head = np.array2string(self.values[:5], precision=4, separator=", ")
        more = ", ..." if self.n_players > 5 else ""
        return (f"ValuationResult(method={self.method!r}, n_players={self.n_players}, "
                f"n_evaluations={self.n_evaluations}, values={head[:-1]}{more}], "
                f"wall_time={self.wall_time:.3g}s)")
