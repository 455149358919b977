"""Reports: a GitHub-flavoured markdown comment, and HTML that opens cleanly in headless Chromium."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from tests.helpers import fingerprint, noisy_results, once, sealed, session_root

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("LEDGER_ARTIFACTS", ROOT / ".artifacts"))
GATES = ("recent", "older", "stress")
CONFIG = "".join(
    f'[gates.{g}]\nmetric = "score"\nnoise_floor = 0.5\nunit = "pts"\n[gates.{g}.metrics]\nscore = "$.score"\n\n'
    for g in GATES
) + (
    # older/stress keep V1 as their best (later moves are within noise); drift, which counts
    # from the best whatever reflections came between, is not what this fixture is about.
    "[triggers]\ndrift_versions = 20\n"
)


def cli(cwd: Path, *args: str) -> int:
    """The CLI in this process: this fixture makes ~150 transitions."""
    from ledger.cli.app import cli as group
    from ledger.core.errors import LedgerError

    with contextlib.redirect_stdout(io.StringIO()):
        try:
            code = group.main(
                args=["-C", str(cwd), *args], prog_name="git-ledger", standalone_mode=False
            )
        except LedgerError as exc:
            raise AssertionError(f"git ledger {' '.join(args)}: {exc.one_line()}") from None
    return code if isinstance(code, int) else 0


def _measure(repo: Path, vid: str, means: dict[str, float], tmp: Path) -> None:
    for gate, mean in means.items():
        for seed, path in enumerate(
            noisy_results(tmp, mean, 0.4, [1, 2, 3], f"{vid}-{gate}"), start=1
        ):
            cli(repo, "record", vid, "--gate", gate, "--seed", str(seed), str(path))


@pytest.fixture(scope="module")
def big_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eleven versions over three gates, a refutation streak and its reflection, an
    override, and a two-cell matrix: built once per session (tests.helpers.once), a copy
    per module. Built before any test's seal, so in a seal of its own (tests.helpers.sealed)."""
    with sealed(tmp_path_factory):
        built = once(session_root(tmp_path_factory.getbasetemp()) / "report", _big_ledger)
    root = tmp_path_factory.mktemp("report")
    repo = root / "repo"
    shutil.copytree(built / "repo", repo, symlinks=True)
    # The matrix's cells' work trees came along: point them and the copy at each other
    # (never the built one's, which the other copies start from).
    links = [*repo.glob(".git/worktrees/*/gitdir"), *repo.glob(".ledger/worktrees/*/.git")]
    assert links, "the matrix's cells have work trees"
    for link in links:
        link.write_text(link.read_text().replace(str(built / "repo"), str(repo)))
    return repo


def _big_ledger(root: Path) -> None:
    repo, tmp = root / "repo", root / "in"
    repo.mkdir()
    tmp.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "ledger.toml").write_text(CONFIG)
    cli(repo, "init")
    plan = [  # (verdict, mean per gate, extra args)
        ("confirmed", {"recent": 10.0, "older": 20.0, "stress": 5.0}, ()),
        ("confirmed", {"recent": 12.0, "older": 20.1, "stress": 5.1}, ()),
        ("refuted", {"recent": 12.1, "older": 19.9, "stress": 5.0}, ()),
        ("refuted", {"recent": 11.9, "older": 20.0, "stress": 4.9}, ()),
        ("refuted", {"recent": 12.0, "older": 20.2, "stress": 5.0}, ()),
    ]
    for i, (verdict, means, extra) in enumerate(plan, start=1):
        cli(
            repo,
            "register",
            f"V{i}",
            "--bet",
            f"Bet number {i}",
            "--gate",
            "recent",
            "--files",
            "m.py",
            "--falsifier",
            "no gain",
        )
        _measure(repo, f"V{i}", means, tmp)
        cli(repo, "conclude", f"V{i}", "--verdict", verdict, "--next", "go on", *extra)
    cli(repo, "reflect")
    path = repo / "training_log/REFLECTION_V5.md"
    text = path.read_text()
    for title in (
        "Eval stability",
        "Variance estimate",
        "Subsystem audit",
        "Revert-and-branch option",
        "Untouched dimensions",
        "Observability-gap audit",
    ):
        text = text.replace(f"## {title}\n", f"## {title}\n\nLooked at {title.lower()}.\n")
    # Issue 26: the tripwire's reflection decides about its target gate.
    text = text.replace(
        "## Target audit\n", "## Target audit\n\nTypical of its regime: keep as target\n"
    )
    path.write_text(text)
    cli(repo, "reflect", "V5", "--commit")
    later = [
        ("confirmed", {"recent": 14.0, "older": 20.0, "stress": 5.5}, ("--cites", "REFLECTION_V5")),
        (
            "confirmed",
            {"recent": 14.2, "older": 20.1, "stress": 5.5},
            ("--override", "shipped for the demo"),
        ),
        ("inconclusive", {"recent": 14.1, "older": 21.5, "stress": 5.2}, ()),
        ("confirmed", {"recent": 16.0, "older": 21.4, "stress": 6.0}, ()),
        ("refuted", {"recent": 15.8, "older": 21.3, "stress": 6.1}, ()),
    ]
    for i, (verdict, means, extra) in enumerate(later, start=6):
        register_extra = extra if extra and extra[0] == "--cites" else ()
        conclude_extra = extra if extra and extra[0] == "--override" else ()
        cli(
            repo,
            "register",
            f"V{i}",
            "--bet",
            f"Bet number {i}",
            "--gate",
            "recent",
            "--files",
            "m.py",
            "--falsifier",
            "no gain",
            *register_extra,
        )
        _measure(repo, f"V{i}", means, tmp)
        cli(repo, "conclude", f"V{i}", "--verdict", verdict, "--next", "go on", *conclude_extra)
    spec = tmp / "cells.toml"
    spec.write_text(
        "".join(
            f'[cells.{c}]\nbet = "Cell {c}"\ngate = "recent"\nfalsifier = "none"\n' for c in "AB"
        )
    )
    cli(repo, "matrix", "new", "V11", "--spec", str(spec))
    for cell, mean in (("A", 18.5), ("B", 16.1)):
        worktree = next((repo / ".ledger/worktrees").glob(f"v11-{cell.lower()}-*"))
        _measure(worktree, f"V11.{cell}", {"recent": mean}, tmp)
    cli(repo, "matrix", "conclude", "V11", "--winner", "A")


def _tables(markdown: str) -> list[list[str]]:
    tables, current = [], []
    for line in markdown.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables + ([current] if current else [])


def _cells(row: str) -> int:
    return len(re.split(r"(?<!\\)\|", row.strip())) - 2


def test_markdown_report_is_valid_gfm_with_a_watermark_and_overrides(big_ledger: Path) -> None:
    out = big_ledger.parent / "report.md"
    cli(big_ledger, "report", "--format", "md", "--out", str(out))
    text = out.read_text()
    assert text.startswith("<!-- git-ledger:report -->\n")
    tables = _tables(text)
    assert len(tables) >= 3
    for table in tables:
        width = _cells(table[0])
        assert re.fullmatch(r"\|(---\|)+", table[1]) and _cells(table[1]) == width
        assert all(_cells(row) == width for row in table[2:]), table
    assert (
        "### Overrides used" in text
        and "**V7**: concluded against the statistics: shipped for the demo" in text
    )
    assert "confirmed (override)" in text
    again = big_ledger.parent / "again.md"
    cli(big_ledger, "report", "--format", "md", "--out", str(again))
    assert again.read_text() == text, "stable: a re-run updates the same comment"
    later = big_ledger.parent / "since.md"
    cli(big_ledger, "report", "--format", "md", "--since", "V8", "--out", str(later))
    assert "Overrides used" not in later.read_text() and "| V7 |" not in later.read_text()


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: .ci/run installs it (apt-get install chromium)")
        pytest.skip("chromium is not installed here; .ci/run installs it for CI")
    return found


def test_html_report_opens_in_headless_chromium_with_a_plot_per_gate(
    big_ledger: Path, tmp_path: Path
) -> None:
    browser = _chromium()
    out = tmp_path / "report.html"
    cli(big_ledger, "report", "--format", "html", "--out", str(out))
    html = out.read_text()
    # Self-contained: nothing is loaded from anywhere (namespace URIs are only names).
    assert not re.search(
        r"""(src|href)\s*=\s*["']?(https?:|//)|url\(\s*["']?(https?:|//)|@import""", html
    )
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr",
        "--v=0",
    ]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", out.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line]
    assert console == [], console
    assert f'data-plots="{len(GATES) + 1}"' in dom.stdout, (
        "the page's script ran and saw every plot"
    )
    for section in ("versions", "baseline", "plots", "matrix-V11", "overrides"):
        assert f'id="{section}"' in dom.stdout, section
    for gate in GATES:
        figure = dom.stdout.split(f'id="plot-{gate}"')[1].split("</figure>")[0]
        assert "<svg" in figure and 'id="baseline"' in figure and 'id="noise-band"' in figure, gate
        assert "reflection" in figure
    # Issue 29: versions side by side (compare's table: a row per version, every metric
    # with mean ± sd (n)), and the matrix chart's threshold line beside its baseline.
    compare = dom.stdout.split('id="compare"')[1].split("</section>")[0]
    rows = re.findall(r"<tr><td>(V\d+[.A-Z]*)</td>", compare)
    assert rows[:10] == [f"V{i}" for i in range(1, 11)], rows
    assert "score mean ± sd (n)" in compare and "(n=3)" in compare
    assert "(paired)" in compare
    matrix = dom.stdout.split('id="matrix-V11"')[1].split("</section>")[0]
    threshold = re.search(r'<line id="threshold"[^>]*y1="([\d.]+)"', matrix)
    baseline = re.search(r'<line id="reference"[^>]*y1="([\d.]+)"', matrix)
    assert threshold is not None and baseline is not None, matrix[:2000]
    assert float(threshold.group(1)) < float(baseline.group(1))  # above Δ = 0 (higher is better)
    assert "threshold +" in matrix
    assert 'id="reflections"' in dom.stdout and "Looked at eval stability." in dom.stdout
    assert 'id="metrics"' in dom.stdout
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report.png"
    subprocess.run(
        [browser, *flags, "--window-size=1100,2600", f"--screenshot={shot}", out.as_uri()],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000


def test_html_report_is_one_file_with_a_drawn_plot_per_gate_and_no_matplotlib(
    big_ledger: Path, tmp_path: Path
) -> None:
    """The properties the fast report rests on: plots are inline SVG written directly
    (matplotlib is not even imported), well formed, one per gate with every artist the
    report promises and one marker per measured version; nothing is fetched."""
    import sys
    import xml.etree.ElementTree as ET

    out, data = tmp_path / "report.html", tmp_path / "report.json"
    argv = ["-C", str(big_ledger), "report", "--format", "html", "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "ledger", *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()}
    assert "ledger.render.plots" in imported
    assert "matplotlib" not in imported and "cairosvg" not in imported
    cli(big_ledger, "report", "--format", "json", "--out", str(data))
    series = json.loads(data.read_text())["series"]
    html = out.read_text()
    # The bench's test of self-containedness: every src/href is a fragment or a data: URI.
    assert re.findall(r"""(?:src|href)\s*=\s*["'](?!data:|#)([^"']+)""", html) == []
    assert html.count("<svg") == len(GATES) + 1  # a plot per gate and the matrix's bars
    for gate in GATES:
        figure = html.split(f'id="plot-{gate}"')[1].split("</figure>")[0]
        svg = ET.fromstring(  # noqa: S314 - our own output, checked for well-formedness
            figure[figure.index("<svg") : figure.index("</svg>") + 6]
        )
        ids = {e.get("id") for e in svg.iter()}
        for artist in ("trajectory", "errorbars", "baseline", "noise-band", "overrides"):
            assert artist in ids, (gate, artist)
        assert {"verdict-confirmed", "verdict-refuted", "reflection-V5"} <= ids, gate
        tips = [
            t.text or ""
            for g in svg.iter()
            if (g.get("id") or "").startswith("verdict-")
            for t in g.iter("{http://www.w3.org/2000/svg}title")
        ]
        assert sorted(t.split(":")[0] for t in tips) == sorted(p["id"] for p in series[gate])


def test_plot_writes_one_figure(big_ledger: Path, tmp_path: Path) -> None:
    """A .svg is the drawing; a .png is the same drawing rasterised (the plots extra,
    part of the test extra) at 130 dpi: the 540 pt figure is 975 px wide."""
    png, svg = tmp_path / "recent.png", tmp_path / "older.svg"
    cli(big_ledger, "plot", "--gate", "recent", "--out", str(png))
    cli(big_ledger, "plot", "--gate", "older", "--out", str(svg))
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk comes first
    assert width == 975 and 0 < height < width
    assert 'id="baseline"' in svg.read_text()


# `git ledger` as installed without the plots extra: CairoSVG cannot be imported (a None
# in sys.modules is how Python marks a module that is not there to import).
WITHOUT_PLOTS_EXTRA = (
    "import sys; sys.modules['cairosvg'] = None; from ledger.__main__ import main; sys.exit(main())"
)


def test_plot_png_without_the_plots_extra_exits_2_with_the_hint_and_writes_nothing(
    big_ledger: Path, tmp_path: Path
) -> None:
    import sys

    before = fingerprint(big_ledger)
    figures = tmp_path / "figures"
    argv = [sys.executable, "-c", WITHOUT_PLOTS_EXTRA, "-C", str(big_ledger), "plot"]
    refused = subprocess.run(
        [*argv, "--gate", "recent", "--out", str(figures / "recent.png")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "plots extra" in lines[0], lines
    assert "pip install 'git-ledger[plots]'" in lines[0] and ".svg" in lines[0], lines
    assert not figures.exists(), "nothing written, not even the directory"
    assert fingerprint(big_ledger) == before
    drawn = subprocess.run(
        [*argv, "--gate", "recent", "--out", str(figures / "recent.svg")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert drawn.returncode == 0, drawn.stderr
    assert 'id="baseline"' in (figures / "recent.svg").read_text()


def test_html_report_is_stable(big_ledger: Path, tmp_path: Path) -> None:
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    cli(big_ledger, "report", "--format", "html", "--out", str(first))
    cli(big_ledger, "report", "--format", "html", "--out", str(second))
    assert first.read_bytes() == second.read_bytes()


def test_report_json_and_diff_md(big_ledger: Path) -> None:
    out = big_ledger.parent / "report.json"
    cli(big_ledger, "report", "--format", "json", "--out", str(out))
    data = json.loads(out.read_text())
    assert len(data["versions"]) >= 10 and set(data["series"]) == set(GATES)
    assert data["overrides"] == [{"id": "V7", "reason": "shipped for the demo"}]
