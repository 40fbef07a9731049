""" "Did you mean" hints for misspelt names, within a fixed amount of work per validation.

A similarity ratio (``difflib.SequenceMatcher``) can cost up to the product of the two lengths,
and an invalid definition can hold thousands of unknown names and a hundred thousand candidates:
computed for each, hints made one 120 KB submit take 33 s. A ``Suggester`` belongs to one
validation; it remembers each hint it computed and stops looking (the hint is then empty) once
``MAX_SUGGESTION_WORK`` characters have been compared. The cost is counted, never timed, so the
same definition always gets the same report.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from shared.limits import MAX_SUGGESTION_WORK

CUTOFF = 0.6
"""Least similarity (``SequenceMatcher.ratio``) of a suggested name."""


class Suggester:
    """The hints of one validation and the comparison work it has left."""

    def __init__(self, work: int = MAX_SUGGESTION_WORK) -> None:
        self.left = work
        self._hints: dict[tuple[str, int], tuple[str, Sequence[str]]] = {}

    def hint(self, word: str, candidates: Sequence[str]) -> str:
        """``; did you mean 'x'?`` when a candidate is close to ``word``, else empty (also when
        the work is spent). Asking again for the same word and candidates costs nothing."""
        key = (word, id(candidates))
        found = self._hints.get(key)
        if found is None:
            close = self._closest(word, candidates)
            found = (f"; did you mean {close!r}?" if close is not None else "", candidates)
            self._hints[key] = found  # (keeps `candidates` alive, so its id stays unique)
        return found[0]

    def _pay(self, cost: int) -> bool:
        if cost > self.left:
            self.left = 0
            return False
        self.left -= cost
        return True

    def _closest(self, word: str, candidates: Sequence[str]) -> str | None:
        if not self._pay(len(word)):
            return None
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(word)  # (the side difflib indexes once)
        best: str | None = None
        best_ratio = CUTOFF
        for candidate in candidates:
            if not self._pay(len(word) + len(candidate)):
                break
            matcher.set_seq1(candidate)
            if matcher.real_quick_ratio() < best_ratio or matcher.quick_ratio() < best_ratio:
                continue
            if not self._pay(len(word) * len(candidate)):
                break
            ratio = matcher.ratio()
            if ratio > best_ratio or (ratio == best_ratio and best is None):
                best, best_ratio = candidate, ratio
        return best
