"""A candidate's measurements as given on the command line: a number, repeats of one
(``101,99,103``: stored per value, the measurement is their mean) or ``N/A: why``.

A memory, a time or a rate cannot be negative: one that is, is a typo or a broken
probe, and bad input (exit 2) rather than a number a promotion could read.
"""

from __future__ import annotations

import re
from typing import Any

from ledger.core.errors import BadInput
from ledger.core.model.config import CampaignTable, LedgerConfig

NA_PREFIX = "N/A:"
# Names of quantities that are never negative: memory, time, rate.
NON_NEGATIVE = re.compile(
    r"(mem|bytes|_[kmgt]i?b$|^[kmgt]i?b_|time|latency|duration|seconds|_m?s$|speed|throughput|"
    r"_per_s|qps|tps)",
    re.IGNORECASE,
)


def _number(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise BadInput(
            f"measurement '{name}' is {text!r}: not a number nor '{NA_PREFIX} reason'",
            f"e.g. --measure {name}=101.5 or --measure {name}=101,99,103 (repeats)",
        ) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise BadInput(f"measurement '{name}' is not finite")
    if value < 0 and NON_NEGATIVE.search(name):
        raise BadInput(
            f"measurement '{name}' is {value:g}: a memory, time or rate is never negative",
            "measure it again; a probe that cannot measure says 'N/A: why'",
        )
    return value


def parse_values(name: str, raw: str | None) -> float | str | list[float]:
    """A number, repeats (a list of two or more), or ``N/A: why``; else bad input."""
    if raw is None or not raw.strip():
        raise BadInput(
            f"measurement '{name}' is missing",
            f'give --{name.replace("_", "-")} X, or "{NA_PREFIX} why it could not be measured"',
        )
    text = raw.strip()
    if text.upper().startswith(NA_PREFIX):
        reason = text[len(NA_PREFIX) :].strip()
        if not reason:
            raise BadInput(
                f"measurement '{name}' says N/A without a reason",
                f'"{NA_PREFIX} collection failed"',
            )
        return f"{NA_PREFIX} {reason}"
    if "," in text:
        parts = [p.strip() for p in text.split(",")]
        if any(not p for p in parts):
            raise BadInput(
                f"measurement '{name}' has an empty repeat in {text!r}", "e.g. 101,99,103"
            )
        return [_number(name, p) for p in parts]
    return _number(name, text)


def parse_measurement(name: str, raw: str | None) -> float | str:
    """A number (repeats: their mean), or an explanation beginning ``N/A:``."""
    value = parse_values(name, raw)
    return sum(value) / len(value) if isinstance(value, list) else value


def _given(
    config: LedgerConfig, measures: tuple[str, ...], aliases: dict[str, str | None]
) -> dict[str, str]:
    names = (config.campaign or CampaignTable()).measurements
    given: dict[str, str] = {}
    for item in measures:
        raw_name, sep, value = item.partition("=")
        name = raw_name.strip()
        if not sep or not name:
            raise BadInput(f"--measure {item!r} is not NAME=VALUE", "e.g. --measure speed=101.5")
        if name not in names:
            raise BadInput(
                f"--measure {name}: not a measurement of this campaign",
                f"[campaign] measurements are {', '.join(names)}",
            )
        if name in given:
            raise BadInput(f"--measure {name} is given twice")
        given[name] = value
    for alias, alias_value in aliases.items():
        if alias_value is None:
            continue
        if alias not in names:
            raise BadInput(
                f"--{alias.replace('_', '-')}: not a measurement of this campaign",
                f"[campaign] measurements are {', '.join(names)}; use --measure NAME=VALUE",
            )
        if alias in given:
            raise BadInput(f"{alias} is given twice (--measure and --{alias.replace('_', '-')})")
        given[alias] = alias_value
    return {name: given.get(name, "") for name in names}


def parse_repeats(
    config: LedgerConfig, measures: tuple[str, ...], aliases: dict[str, str | None]
) -> tuple[dict[str, float | str], dict[str, list[float]]]:
    """Every configured measurement (repeats: their mean) and each one's repeats."""
    numbers: dict[str, float | str] = {}
    repeats: dict[str, list[float]] = {}
    for name, raw in _given(config, measures, aliases).items():
        value = parse_values(name, raw)
        if isinstance(value, list):
            repeats[name] = value
            numbers[name] = sum(value) / len(value)
        else:
            numbers[name] = value
    return numbers, repeats


def parse_measures(
    config: LedgerConfig, measures: tuple[str, ...], aliases: dict[str, str | None]
) -> dict[str, float | str]:
    """Every configured measurement from ``--measure NAME=VALUE`` (and the four alias
    flags); an unknown name, a repeated one or a missing one is bad input."""
    return parse_repeats(config, measures, aliases)[0]


def describe(data: dict[str, Any]) -> str:
    """One line of a stored judgement: n, σ, Δ, the threshold and the verdict."""
    sigma = data.get("sigma")
    threshold = data.get("threshold")
    text = (
        f"n={data.get('n')} vs head {str(data.get('head', ''))[:10]} n={data.get('n_head')}, "
        f"σ={'none' if sigma is None else format(sigma, '.4g')}, "
        f"Δ={data.get('delta', 0.0):+.4g}, "
        f"threshold={'none' if threshold is None else format(threshold, '.4g')}: "
        f"{data.get('outcome')}"
    )
    return text + (
        " (diagnostic only: single values, no noise floor)" if data.get("diagnostic") else ""
    )
