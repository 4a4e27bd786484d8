"""Every --json document is RFC 8259 JSON (issue 34): no NaN or Infinity, which Python's json
writes by default and strict parsers (JavaScript's JSON.parse, jq, Go, Rust) refuse."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT

EX = ROOT / "configs" / "examples"


def strict(text: str):
    """``json.loads`` that refuses the NaN, Infinity and -Infinity RFC 8259 does not have."""

    def refuse(name: str):
        raise ValueError(f"{name} is not JSON (RFC 8259)")

    return json.loads(text, parse_constant=refuse)


COMMANDS = [
    *(["rank", EX / f"{ex}.parquet", "--gpu", g] for ex in ("conv1d", "matmul", "vecadd") for g in ("k80", "h100")),
    *(["evaluate", EX / f"{ex}.parquet", "--gpu", "k80"] for ex in ("conv1d", "matmul", "vecadd")),
    ["evaluate", EX / "conv1d.parquet", "--gpu", "k80", "--place", "in=T,mask=T"],
    *(["info", EX / f"{ex}.parquet"] for ex in ("conv1d", "matmul", "vecadd")),
    ["gpus"],
    ["gpus", "k80"],
    ["gpus", "RTX 3080"],
    ["model", "mwp-cwp", "--kernel", EX / "hong-kim-table2.toml"],
    ["model", "gpuperf", "--counters", EX / "vecadd-rtx3080.ncu.csv"],
    ["model", "gpuperf", "--gpu", "k80", "--trace", EX / "conv1d.parquet"],
    ["model", "mwp-cwp", "--gpu", "k80", "--trace", EX / "matmul.parquet"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(str(x).replace(str(EX) + "/", "") for x in a))
def test_json_is_strict_json(run_cli, argv):
    code, out, err = run_cli(*argv, "--json")
    assert code == 0, err
    strict(out)


def test_a_change_from_zero_is_null_not_infinity(run_cli):
    """conv1d's in=T,mask=T moves 14,336 addressing instructions out of a sample that has none:
    a relative change from 0 is undefined (was Infinity, with the wrong sign); the values stay."""
    code, out, err = run_cli("rank", EX / "conv1d.parquet", "--gpu", "k80", "--json")
    assert code == 0, err
    doc = strict(out)
    events = [e for p in doc["ranking"] for e in p["moved"]]
    undefined = [e for e in events if e["sample"] == 0]
    assert undefined and all(e["change"] is None for e in undefined)
    assert all(e["change"] == (e["target"] - e["sample"]) / abs(e["sample"]) for e in events if e["sample"])
    first = next(p for p in doc["ranking"] if p["label"] == "in=T,mask=T")["moved"][0]
    assert first == {"event": "addressing instructions", "sample": 0.0, "target": -14336.0, "change": None}


def test_the_writer_refuses_a_non_finite_number(capsys):
    from placement.commands._output import print_json

    with pytest.raises(ValueError, match=r"ranking\[0\]\.moved\[1\]\.change is not a finite number"):
        print_json({"ranking": [{"moved": [{"change": 1.0}, {"change": float("inf")}]}]})
    assert capsys.readouterr().out == ""  # nothing half-printed
