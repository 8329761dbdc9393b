"""The machinery every sampling estimator shares (private).

* :mod:`._loop`: the batched sampling loop (Welford merging in batch order,
  and :func:`~._loop.run_sampling`, which wires the units below together);
* :mod:`._batches`: batch sizes, per-batch random streams and plans, and
  running the batches (in this process or joblib's workers);
* :mod:`._stopping`: the stopping rules (budget, standard error, rank
  stability);
* :mod:`._checkpoint`: atomic, resumable checkpoints of the loop's state
  (:class:`~._checkpoint.LoopSnapshot`);
* :mod:`._progress`: the progress bars;
* :mod:`._subsets` and :mod:`._gt_kernels`: random coalitions of given sizes,
  drawn fast (numba);
* :mod:`._without_replacement`: per-size strata drawn without replacement,
  for small N.
"""
