"""Compiled evaluation of the games with exact values (numba, ``cache=True``).

The games that measure estimators at thousands of players must cost about
``O(N)`` per coalition, so the estimators, not the games, dominate the time:

* KNN utility: a coalition's ``K`` nearest members for a test point are its
  ``K`` smallest ranks in that point's neighbour order. A large coalition
  finds them by walking the order (about ``K N / |S|`` steps), a small one by
  selecting among its members' ranks (``|S|`` steps); each row takes the
  cheaper, so a coalition costs ``O(N + T min(|S|, K N / |S|))`` for ``T``
  test points, never the ``O(T N)`` of a dense pass. Along a permutation the
  ``K`` nearest of every test point are kept in a sorted list: adding a
  player costs ``O(T K)``.
* Sum of unanimity games: a coalition visits the terms of its small side
  (its members, or its non-members when it holds more than half the
  players): ``O(N)`` for the scan plus the small side's terms. Along a
  permutation a term is complete from the position of its last member on,
  so a permutation costs ``O(N + sum |A_j|)``.

Match counts are integers, so every path gives bit-identical KNN utilities.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numpy.typing import NDArray


@numba.njit(cache=True, nogil=True)
def knn_match_counts(masks: NDArray[np.bool_], order: NDArray[np.integer[Any]],
                     rank_by_player: NDArray[np.integer[Any]], match_by_player: NDArray[np.integer[Any]],
                     k: int) -> NDArray[np.int64]:
    """Per coalition, the number of (test point, neighbour) pairs among the ``K`` nearest with the test label.

    ``order[t]`` lists the players by distance to test point ``t``;
    ``rank_by_player[i, t]`` is player ``i``'s position there and
    ``match_by_player[i, t]`` whether player ``i`` carries test point ``t``'s
    label (player-major, so a member's row is read in one sweep). Shapes:
    ``masks`` ``(m, N)`` (C-contiguous), ``order`` ``(T, N)``, the two
    ``by_player`` arrays ``(N, T)``; returns ``(m,)`` counts.
    """
    m, n = masks.shape
    n_test = order.shape[0]
    counts = np.zeros(m, dtype=np.int64)
    members = np.empty(n, dtype=np.int64)
    best = np.empty((n_test, k), dtype=np.int64)  # per test point, the K smallest ranks so far, sorted
    kth = np.empty(n_test, dtype=np.int64)  # best[:, k - 1], read once per candidate
    cells = masks.view(np.uint8)
    for r in range(m):
        size = 0
        for i in range(n):  # branch-free: write always, advance on a member
            members[size] = i
            size += cells[r, i]
        if size == 0:
            continue
        take = min(k, size)
        total = 0
        if size * size <= k * n:  # small coalition: select among the members' ranks
            best[:, :] = n  # sentinel ranks, beyond every player
            kth[:] = n
            for j in range(size):
                player = members[j]
                for t in range(n_test):
                    position = rank_by_player[player, t]
                    if position < kth[t]:  # insert into the sorted list, dropping its largest
                        slot = k - 1
                        while slot > 0 and best[t, slot - 1] > position:
                            best[t, slot] = best[t, slot - 1]
                            slot -= 1
                        best[t, slot] = position
                        kth[t] = best[t, k - 1]
            for t in range(n_test):
                for j in range(take):
                    total += match_by_player[order[t, best[t, j]], t]
        else:  # large coalition: walk the neighbour order until K members are found
            for t in range(n_test):
                found = 0
                position = 0
                while found < take:
                    player = order[t, position]
                    inside = cells[r, player]
                    found += inside
                    total += inside * match_by_player[player, t]
                    position += 1
        counts[r] = total
    return counts


@numba.njit(cache=True, nogil=True)
def knn_prefix_match_counts(permutations: NDArray[np.integer[Any]], rank_by_player: NDArray[np.integer[Any]],
                            match_by_player: NDArray[np.integer[Any]], k: int) -> NDArray[np.int64]:
    """Match counts of every prefix of every permutation, one pass per permutation.

    ``permutations`` ``(m, N)``, the ``by_player`` arrays ``(N, T)`` as in
    :func:`knn_match_counts`; returns ``(m, N)`` counts.
    """
    m, n = permutations.shape
    n_test = rank_by_player.shape[1]
    counts = np.zeros((m, n), dtype=np.int64)
    best = np.empty((n_test, k), dtype=np.int64)  # ranks of each test point's K nearest so far, sorted
    best_match = np.empty((n_test, k), dtype=np.int64)
    for r in range(m):
        total = 0
        for step in range(n):
            player = permutations[r, step]
            filled = min(step, k)
            for t in range(n_test):
                position = rank_by_player[player, t]
                if filled == k:
                    if position >= best[t, k - 1]:
                        continue
                    total -= best_match[t, k - 1]
                    slot = k - 1
                else:
                    slot = filled
                while slot > 0 and best[t, slot - 1] > position:
                    best[t, slot] = best[t, slot - 1]
                    best_match[t, slot] = best_match[t, slot - 1]
                    slot -= 1
                best[t, slot] = position
                best_match[t, slot] = match_by_player[player, t]
                total += match_by_player[player, t]
            counts[r, step] = total
    return counts


@numba.njit(cache=True, nogil=True)
def unanimity_utilities(masks: NDArray[np.bool_], sizes: NDArray[np.int64], coefficients: NDArray[np.float64],
                        term_starts: NDArray[np.int64], terms: NDArray[np.int64]) -> NDArray[np.float64]:
    """``U(S) = sum_j c_j 1[A_j subset of S]``, from the small side of each coalition.

    ``terms[term_starts[i]:term_starts[i + 1]]`` lists the terms containing
    player ``i``. A small coalition adds the terms all of whose members it
    meets; a large one subtracts from the total the terms its complement
    touches. Either way only the small side's terms are visited.
    """
    m, n = masks.shape
    out = np.zeros(m)
    total = coefficients.sum()
    side = np.empty(n, dtype=np.int64)
    stamp = np.full(coefficients.size, -1, dtype=np.int64)  # row that last touched a term
    hits = np.zeros(coefficients.size, dtype=np.int64)
    cells = masks.view(np.uint8)
    for r in range(m):
        size = 0
        for i in range(n):
            size += cells[r, i]
        small = 2 * size <= n  # the side listed: members if small, else non-members
        wanted = np.uint8(small)
        count = 0
        for i in range(n):  # branch-free: write always, advance on a match
            side[count] = i
            count += cells[r, i] == wanted
        value = 0.0 if small else total
        for p in range(count):
            player = side[p]
            for q in range(term_starts[player], term_starts[player + 1]):
                j = terms[q]
                if stamp[j] != r:
                    stamp[j] = r
                    hits[j] = 0
                    if not small:  # the complement touches term j: it is incomplete
                        value -= coefficients[j]
                hits[j] += 1
                if small and hits[j] == sizes[j]:
                    value += coefficients[j]
        out[r] = value
    return out


@numba.njit(cache=True, nogil=True)
def unanimity_prefix_utilities(permutations: NDArray[np.int64], members: NDArray[np.int64], starts: NDArray[np.int64],
                               coefficients: NDArray[np.float64]) -> NDArray[np.float64]:
    """Utilities of every prefix: term ``j`` joins at the position of its last member."""
    m, n = permutations.shape
    out = np.empty((m, n))
    position = np.empty(n, dtype=np.int64)
    gained = np.empty(n)
    for r in range(m):
        for step in range(n):
            position[permutations[r, step]] = step
        gained[:] = 0.0
        for j in range(coefficients.size):
            last = 0
            for p in range(starts[j], starts[j + 1]):
                last = max(last, position[members[p]])
            gained[last] += coefficients[j]
        total = 0.0
        for step in range(n):
            total += gained[step]
            out[r, step] = total
    return out
