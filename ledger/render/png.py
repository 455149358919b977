"""A plot as PNG: the SVG drawing rasterised by CairoSVG, the optional ``plots`` extra.

SVG is the one renderer (:mod:`ledger.render.svg`): a PNG is the same drawing, so the
two never disagree and a default install carries no plotting library. Without the
extra, a PNG is refused before anything is written (exit 2), with the two ways out;
with the extra but without the cairo library it loads, the environment is at fault
(exit 5). ``currentColor`` (the axes and text) renders black, on a white background.
"""

from __future__ import annotations

from collections.abc import Callable

from ledger.core.errors import BadInput, EnvironmentFailure

EXTRA_HINT = "pip install 'git-ledger[plots]', or write a .svg file"
# The figure is 540 pt wide (7.5 in): 975 px, sharp in a pull request at its own size.
DPI = 130

Rasterise = Callable[[str], bytes]


def rasteriser(out: object) -> Rasterise:
    """SVG text to PNG bytes, or the error that says how to get there (``out`` names the
    file in it). Called before the plot is drawn or anything is written."""
    try:
        import cairosvg
    except ImportError:
        raise BadInput(f"--out {out}: a PNG needs the plots extra", EXTRA_HINT) from None
    except OSError as exc:  # cairocffi found no libcairo to load
        raise EnvironmentFailure(
            f"--out {out}: the plots extra is installed but the cairo library is not ({exc})",
            "install it (Debian/Ubuntu: apt-get install libcairo2; macOS: brew install cairo),"
            " or write a .svg file",
        ) from None

    def to_png(svg: str) -> bytes:
        # Without write_to, svg2png returns the PNG's bytes.
        return bytes(cairosvg.svg2png(bytestring=svg.encode(), dpi=DPI, background_color="white"))

    return to_png
