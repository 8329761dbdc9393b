"""The machinery every sampling estimator shares (private).

* :mod:`._loop`: the batched sampling loop (per-batch random streams, Welford
  merging, stopping by budget or precision, joblib parallelism);
* :mod:`._checkpoint`: atomic, resumable checkpoints of the loop's state;
* :mod:`._subsets` and :mod:`._gt_kernels`: random coalitions of given sizes,
  drawn fast (numba);
* :mod:`._without_replacement`: per-size strata drawn without replacement,
  for small N.
"""
