"""Issue 26: `fields-diff` counts the divergent rows and fields and lists the first
few, not only the first."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import ledger


def _files(tmp_path: Path) -> tuple[Path, Path]:
    trades = [{"cycle": i, "symbol": f"S{i}", "pnl": float(i), "qty": 1} for i in range(20)]
    drifted = [dict(t) for t in trades]
    for i in (3, 7, 11):  # three rows drift, the last one in two fields
        drifted[i]["pnl"] += 0.5
    drifted[11]["qty"] = 2
    drifted.append({"cycle": 20, "symbol": "S20", "pnl": 1.0, "qty": 1})  # one row more
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"total": 1.0, "trades": trades}))
    b.write_text(json.dumps({"total": 2.0, "trades": drifted}))
    return a, b


def test_fields_diff_counts_rows_and_fields_and_lists_the_first_few(tmp_path: Path) -> None:
    a, b = _files(tmp_path)
    out = ledger(tmp_path, "fields-diff", str(a), str(b), "--json")
    assert out.code == 1
    data = out.json()
    assert data["first_divergence"]["path"] == "$.total"  # unchanged
    # total, three pnl, one qty, one added row: six fields in four rows of trades.
    assert data["divergent_fields"] == 6 and data["divergent_rows"] == 4
    assert [d["path"] for d in data["divergences"]] == [
        "$.total",
        "$.trades[3].pnl",
        "$.trades[7].pnl",
        "$.trades[11].pnl",
        "$.trades[11].qty",
        "$.trades[20]",
    ]
    text = ledger(tmp_path, "fields-diff", str(a), str(b)).out
    assert "6 divergent field(s) in 4 row(s)" in text
    assert "$.trades[11].qty: 1 != 2" in text


def test_fields_diff_lists_at_most_ten_and_counts_by_key(tmp_path: Path) -> None:
    rows = [{"id": i, "v": 0} for i in range(30)]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(rows))
    b.write_text(json.dumps([{"id": 99, "v": 0}] + [{"id": i, "v": 1} for i in range(30)]))
    data = ledger(tmp_path, "fields-diff", str(a), str(b), "--key", "id", "--json").json()
    assert data["divergent_fields"] == 31 and data["divergent_rows"] == 31
    assert len(data["divergences"]) == 10
    assert data["divergences"][0]["path"] == "$[id=0].v"
    same = ledger(tmp_path, "fields-diff", str(a), str(a), "--json").json()
    assert same["identical"] and same["divergent_fields"] == 0 and same["divergences"] == []
