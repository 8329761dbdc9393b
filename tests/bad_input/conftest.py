"""Bad input across the public API, tried systematically (issue 6).

Every case is one row of a table: a public callable, one bad input, and what
must happen. Either a ``ValueError`` or ``TypeError`` whose message names the
argument (``pytest.raises(..., match=...)``), or, where the library documents a
convention for the input (one point or one class for KNN, ``K > N``), that
convention, asserted. A bad *parameter* must also fail before the game is
evaluated at all (checked with a counting game): validation is at the boundary.
A game that raises must see its own exception come out, never swallowed.
The tables are split by what they feed: games to the estimators
(``test_bad_games.py``), budgets and parameters to the estimators, masks and
coalitions to games, data to every data-taking callable, parameters to the
utilities, and the influence function, the Neyman allocation and the bounds;
their shared toys are in ``_cases.py``.

No case may hang: every test here runs under a per-test timeout (pytest-timeout's
marker when the plugin is installed, else a ``SIGALRM`` fixture).

The corrupted-checkpoint case of the issue is covered with the checkpoints.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

PER_TEST_SECONDS = 20
HERE = Path(__file__).resolve().parent

try:
    import pytest_timeout  # noqa: F401
except ImportError:  # pragma: no cover - the plugin is a test dependency
    if hasattr(signal, "SIGALRM"):
        @pytest.fixture(autouse=True)
        def _no_hang():
            def on_alarm(signum, frame):
                raise TimeoutError(f"a bad-input case ran over {PER_TEST_SECONDS} s: a hang?")

            previous = signal.signal(signal.SIGALRM, on_alarm)
            signal.alarm(PER_TEST_SECONDS)
            try:
                yield
            finally:
                signal.alarm(0)
                signal.signal(signal.SIGALRM, previous)
else:
    def pytest_collection_modifyitems(items):
        for item in items:
            if HERE in Path(item.path).resolve().parents:
                item.add_marker(pytest.mark.timeout(PER_TEST_SECONDS, method="signal"))
