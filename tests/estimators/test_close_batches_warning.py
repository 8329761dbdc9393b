"""Closing the batches past a stop drops joblib's warning, even while a worker thread collects its own.

``warnings.catch_warnings`` saves and restores the process-wide filters, so a worker thread leaving its own
(ModelUtility's warning tally, under joblib's threading backend) used to undo the filter set to drop joblib's
"tasks ... have been cancelled": CI saw the warning once.
"""

import threading
import warnings

import pytest

from shapley_research._warnings import collected_warnings
from shapley_research.estimators._sampling._batches import close_batches


class _ResultsClosedWhileAWorkerLeavesItsCollection:
    """A results iterator whose close() lets a worker thread end its warning collection, then warns as joblib."""

    def __init__(self, worker_may_leave: threading.Event, worker_left: threading.Event):
        self.worker_may_leave, self.worker_left = worker_may_leave, worker_left

    def __iter__(self):
        return self

    def __next__(self):
        raise StopIteration

    def close(self):
        self.worker_may_leave.set()
        assert self.worker_left.wait(10)
        warnings.warn("4 tasks which were still being processed by the workers have been cancelled.", stacklevel=2)


@pytest.mark.parametrize("context", [collected_warnings, warnings.catch_warnings],
                         ids=["its-own-collection", "a-plain-catch_warnings"])
def test_joblibs_warning_is_dropped_when_a_worker_thread_leaves_a_warnings_context_meanwhile(recwarn, context):
    """A worker thread leaves its own collection (ModelUtility's tally), or a plain ``catch_warnings()`` entered
    before the stop (scikit-learn's joblib wrapper runs each task in one), during ``close``: either used to
    restore the warning state it saw on entry."""
    entered, may_leave, left = threading.Event(), threading.Event(), threading.Event()

    def worker():
        with context():
            entered.set()
            may_leave.wait(10)
        left.set()

    thread = threading.Thread(target=worker)
    thread.start()
    assert entered.wait(10)
    close_batches(_ResultsClosedWhileAWorkerLeavesItsCollection(may_leave, left))
    thread.join(10)
    assert not [str(w.message) for w in recwarn.list if "cancelled" in str(w.message)]


def test_a_recording_catch_warnings_inside_a_collection_still_records():
    """A model's own ``catch_warnings(record=True)`` (scikit-learn's PowerTransformer, say) sees its warnings;
    the collection counts only the rest."""
    import numpy as np

    with collected_warnings() as tally:
        warnings.warn("collected", UserWarning, stacklevel=1)
        with warnings.catch_warnings(record=True) as recorded:
            warnings.simplefilter("always")
            warnings.warn("recorded", UserWarning, stacklevel=1)
        with np.testing.suppress_warnings() as suppressed:
            caught = suppressed.record(UserWarning, "suppressed")
            warnings.warn("suppressed", UserWarning, stacklevel=1)
    assert [str(w.message) for w in recorded] == ["recorded"]
    assert [str(w.message) for w in caught] == ["suppressed"]
    assert [text for _, name, text in tally.kinds if name == "UserWarning"] == ["collected"]
