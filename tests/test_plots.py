"""The report's SVG plots, written without matplotlib: well formed at any size, every
point kept, axis labels thinned past a few dozen versions, round ticks."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

from hypothesis import assume, given
from hypothesis import strategies as st

from ledger.render import plots
from ledger.render.svg import MAX_TICK_LABELS, label_every, nice_ticks, tick_labels

NS = "{http://www.w3.org/2000/svg}"
VERDICTS = ("confirmed", "refuted", "inconclusive", "open")


def _points(count: int) -> list[dict[str, object]]:
    return [
        {
            "id": f"V{i + 1}",
            "mean": 10.0 + math.sin(i / 7) + i / 100,
            "sd": 0.3 if i % 5 else None,
            "n": 3 if i % 11 else 1,
            "verdict": VERDICTS[i % 4],
            "override": i % 97 == 3,
            "matrix": None,
        }
        for i in range(count)
    ]


def _parse(svg: str) -> ET.Element:
    assert not re.search(r"\b(nan|inf)\b", svg), "a coordinate is not a number"
    return ET.fromstring(svg)  # noqa: S314 - our own output, checked for well-formedness


def _by_id(root: ET.Element) -> dict[str, ET.Element]:
    return {e.get("id", ""): e for e in root.iter() if e.get("id")}


def test_gate_plot_at_1000_versions_keeps_every_point_and_thins_the_labels() -> None:
    points = _points(1000)
    baseline = {"mean": 12.0, "sigma": 0.2, "version": "V500"}
    svg = plots.gate_svg("recent", "score", "pts", points, baseline, ["V40", "V999"], "V700")
    root = _parse(svg)
    found = _by_id(root)
    for artist in ("trajectory", "errorbars", "baseline", "noise-band", "overrides", "phase"):
        assert artist in found, artist
    assert {"reflection-V40", "reflection-V999"} <= set(found)
    tips = [
        t.text or "" for verdict in VERDICTS for t in found[f"verdict-{verdict}"].iter(f"{NS}title")
    ]
    assert sorted(t.split(":")[0] for t in tips) == sorted(str(p["id"]) for p in points)
    labels = [t.text for t in found["xticks"].iter(f"{NS}text")]
    assert 1 < len(labels) <= MAX_TICK_LABELS and labels[0] == "V1"
    assert len(found["trajectory"].get("points", "").split()) == 1000
    assert len(found["overrides"]) == sum(1 for p in points if p["override"])


def test_gate_plot_of_one_version_without_spread_or_baseline() -> None:
    one = [{"id": "V1", "mean": 3.0, "sd": None, "n": 1, "verdict": "open", "override": False}]
    found = _by_id(_parse(plots.gate_svg("g", "loss", "", one, None, [], None)))
    assert "trajectory" in found and "verdict-open" in found
    assert "baseline" not in found and "noise-band" not in found


def test_few_versions_label_every_version_and_many_label_every_kth() -> None:
    assert [label_every(n) for n in (1, MAX_TICK_LABELS)] == [1, 1]
    for count in (MAX_TICK_LABELS + 1, 100, 1000, 60_000):
        step = label_every(count)
        assert re.fullmatch(r"[125]0*", str(step)), step
        rounder = step * 2 // 5 if str(step)[0] == "5" else step // 2  # the round step below
        assert math.ceil(count / step) <= MAX_TICK_LABELS < math.ceil(count / rounder)


def test_bar_and_line_plots_are_well_formed() -> None:
    bars = _parse(
        plots.bars_plot(
            "matrix-V3",
            "matrix V3: Δ per cell",
            ["V3.A", "V3.B", "V3.C"],
            [2.5, -0.75, 0.0],
            "Δ",
            0.0,
            "baseline",
            ["#2e9e44", "#8a8f98", "#8a8f98"],
        )
    )
    found = _by_id(bars)
    rects = list(found["bars-matrix-V3"])
    assert len(rects) == 3 and all(float(r.get("height", "-1")) >= 0 for r in rects)
    assert "reference" in found and "legend" in found
    line = _by_id(
        _parse(plots.line_plot("batches", "pass ratio", [0.2, 0.5, 0.9], "r", 0.8, "bar"))
    )
    assert "series-batches" in line and "bar" in line


@given(
    st.floats(-1e9, 1e9, allow_nan=False),
    st.floats(1e-6, 1e9, allow_nan=False),
)
def test_ticks_are_round_evenly_spaced_and_inside_the_range(lo: float, span: float) -> None:
    assume(span > abs(lo) * 1e-6)  # a span a float can tell from its ends
    hi = lo + span
    ticks, decimals = nice_ticks(lo, hi)
    assert 2 <= len(ticks) <= 8, ticks
    assert all(lo - span * 1e-6 <= t <= hi + span * 1e-6 for t in ticks)
    step = ticks[1] - ticks[0]
    mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9)
    assert any(math.isclose(mantissa, m, rel_tol=1e-6) for m in (1, 2, 2.5, 5, 10)), step
    assert decimals >= 0


@given(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.integers(-15, 9),
    st.floats(1.0, 9.99),
)
def test_every_tick_of_a_scale_reads_differently(lo: float, exponent: int, mantissa: float) -> None:
    """Latencies in seconds, error rates, counts: at any scale whose span a float can
    tell apart (at most 10^6 times smaller than its ends), no two tick labels agree
    (a tolerance test once printed every tick of a 5e-8 step as "0")."""
    span = mantissa * 10.0**exponent
    assume(span > abs(lo) * 1e-6)
    ticks, decimals = nice_ticks(lo, lo + span)
    labels = tick_labels(ticks, decimals)
    assert len(set(labels)) == len(labels), labels


def test_a_tiny_scale_is_labelled_with_its_digits() -> None:
    ticks, decimals = nice_ticks(2.0e-7, 4.2e-7)
    assert tick_labels(ticks, decimals)[:2] == ["0.00000020", "0.00000025"]


def test_a_small_span_far_from_zero_is_labelled_apart() -> None:
    """Found by the property above: 6.1035e-05 in steps of 1e-11."""
    ticks, decimals = nice_ticks(6.103515625e-05, 6.103515625e-05 + 7e-11)
    labels = tick_labels(ticks, decimals)
    assert len(set(labels)) == len(labels) == len(ticks), labels


finite = st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False)


@given(
    st.lists(st.tuples(finite, st.none() | st.floats(0, 1e300)), min_size=1, max_size=40),
    st.none() | st.tuples(finite, st.floats(0, 1e300)),
)
def test_gate_plot_is_well_formed_for_any_finite_series(
    series: list[tuple[float, float | None]], best: tuple[float, float] | None
) -> None:
    points = [
        {"id": f"V{i}", "mean": m, "sd": sd, "n": 3, "verdict": "open", "override": False}
        for i, (m, sd) in enumerate(series, start=1)
    ]
    baseline = {"mean": best[0], "sigma": best[1], "version": "V1"} if best else None
    found = _by_id(_parse(plots.gate_svg("g", "m", "u", points, baseline, [], None)))
    assert len(found["verdict-open"]) == len(points)
