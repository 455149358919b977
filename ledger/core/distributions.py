"""What the statistics ask of scipy, answered once and remembered across processes.

Three questions need a real distribution: a Student-t quantile, a normal
quantile, and the noncentrality at which a rule reaches a given power. scipy is
imported lazily (a hook with no ledger work must not pay for it), no
distribution is hand-written, and every answer is kept: in this process
(``lru_cache``), and in the repository's and the user's cache directories
(:class:`_Answers`), so a later ``register`` or ``conclude`` does not import
scipy to ask again.
The pure statistics that use these answers are in :mod:`ledger.core.stats`.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from ledger.core import caches


class _Answers:
    """scipy's answers remembered across processes: a verb must not import scipy to ask again.

    A gate's thresholds and MDEs take a handful of distinct (quantile, df, power)
    questions, and importing scipy.stats and scipy.integrate to answer them costs
    about a second, more than everything else a ``register`` or ``conclude`` does.
    The answers are one derived cache (:mod:`ledger.core.caches`), kept in two
    files: the repository's cache directory, and the user's cache directory
    (:func:`user_file`), so a new repository, a clone or a fresh work tree does not
    pay that second again for the questions every default gate asks. Both are keyed
    by this program's code and by the installed scipy (its version file's size and
    modification time, read without importing it), so a new scipy or a new formula
    asks again. A missing, corrupt or foreign file is ignored, and one that cannot
    be written only costs speed. Floats go through JSON by their shortest repr,
    which reads back to the same double. Each file keeps the :data:`KEEP` most
    recent answers (the user's would otherwise grow with every ledger); a question
    is a pure function of its arguments, so the one kept is the one scipy gives.
    """

    KEEP = 4096

    def __init__(self) -> None:
        self.files: tuple[Path, ...] = ()
        self.loaded: dict[str, float] | None = None

    def use(self, path: Path) -> None:
        user = user_file()
        files = (path,) if user is None or user == path else (path, user)
        if files != self.files:
            self.files, self.loaded = files, None

    @staticmethod
    def _key() -> str:
        spec = find_spec("scipy")
        origin = spec.origin if spec is not None else None
        try:
            info = os.stat(os.path.join(os.path.dirname(origin), "version.py")) if origin else None
        except OSError:
            info = None
        scipy = f"{info.st_size}:{info.st_mtime_ns}" if info is not None else "-"
        return caches.key("scipy-answers", scipy)

    def _read(self) -> dict[str, float]:
        if self.loaded is None:
            self.loaded = {}
            for file in reversed(self.files):  # the repository's answers last: they win
                answers = caches.load(file, self._key(), dict) or {}
                self.loaded.update((k, v) for k, v in answers.items() if isinstance(v, float))
        return self.loaded

    def get(self, question: str) -> float | None:
        return self._read().get(question)

    def put(self, question: str, answer: float) -> None:
        answers = self._read()
        answers.pop(question, None)
        answers[question] = answer  # the most recent last: what KEEP keeps
        kept = dict(list(answers.items())[-self.KEEP :])
        for file in self.files:
            caches.save(file, self._key(), kept)  # not written: only costs speed


def user_file() -> Path | None:
    """The user's copy of scipy's answers: ``$XDG_CACHE_HOME/git-ledger/stats.json``.

    ``~/.cache`` when ``XDG_CACHE_HOME`` is unset or not absolute (the XDG base
    directory rules), and none without a home.
    """
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.environ.get("HOME", "")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base, "git-ledger", "stats.json")


_ANSWERS = _Answers()


def remember_answers(path: Path) -> None:
    """Keep scipy's answers in ``path`` (the repository's cache) from now on in this process."""
    _ANSWERS.use(path)


def _remembered(fn: Callable[..., float]) -> Callable[..., float]:
    """``fn``'s answers kept across processes (see :class:`_Answers`); args must be plain."""

    @functools.wraps(fn)
    def ask(*args: Any) -> float:
        question = f"{fn.__name__}{args!r}"
        known = _ANSWERS.get(question)
        if known is not None:
            return known
        answer = float(fn(*args))
        if math.isfinite(answer):
            _ANSWERS.put(question, answer)
        return answer

    return ask


@lru_cache(maxsize=1024)
@_remembered
def t_quantile(p: float, df: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(p, df))


@lru_cache(maxsize=1024)
@_remembered
def z_quantile(p: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(p))


@lru_cache(maxsize=1024)
@_remembered
def power_nc(k: float, df: float | None, power: float) -> float:
    """Noncentrality at which the rule "Δ/SE > k" confirms with probability ``power``.

    σ known (df None): Δ/SE is normal. σ estimated with df degrees of freedom:
    Δ/SE is noncentral t, and the SE a reader plugs the MDE into is itself an
    estimate, so the power is averaged over σ's sampling distribution (assurance:
    s/σ ~ sqrt(χ²_df/df)). An MDE read off one sample then holds on average
    instead of only when that sample happened to show the true σ.
    """
    from scipy import integrate, optimize, stats

    if df is None:
        return float(optimize.brentq(lambda nc: float(stats.norm.sf(k - nc)) - power, 0.0, k + 40))

    def assurance(nc: float) -> float:
        def integrand(x: float) -> float:
            return float(stats.nct.sf(k, df, nc * math.sqrt(x / df)) * stats.chi2.pdf(x, df))

        return float(integrate.quad(integrand, 0.0, math.inf, limit=200)[0]) - power

    hi = k + 10.0
    while assurance(hi) < 0 and hi < 1e6:
        hi *= 2
    return float(optimize.brentq(assurance, 0.0, hi, xtol=1e-6))
