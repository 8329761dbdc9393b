"""The machinery every sampling estimator shares (private).

* :mod:`._driver`: the one driver of every sampling estimator
  (:func:`~._driver.drive`): an estimator is a :class:`~._driver.SamplingSpec`
  (how a batch is drawn and reduced, the state, the budget's units, the final
  step), and its shared options one :class:`~._driver.SamplingOptions`;
* :mod:`._loop`: the batched sampling loop (Welford merging in batch order,
  and :func:`~._loop.run_sampling`, which wires the units below together);
* :mod:`._batches`: batch sizes, per-batch random streams and plans, and
  running the batches (in this process or joblib's workers);
* :mod:`._stopping`: the stopping rules (budget, standard error, rank
  stability);
* :mod:`._checkpoint`: atomic, resumable checkpoints of the loop's state
  (:class:`~._checkpoint.LoopSnapshot`);
* :mod:`._replay`: the within-batch log next to a checkpoint, which keeps
  the utilities of the batch under way for a resumed run to replay;
* :mod:`._progress`: the progress bars;
* :mod:`._subsets` and :mod:`._gt_kernels`: random coalitions of given sizes,
  drawn fast (numba);
* :mod:`._without_replacement`: per-size strata drawn without replacement,
  for small N.
"""
