"""nvprof counters (gpuperfpredict format) -> kernel parameters and spec-row GPUs; `placement model --counters`."""

import json
from pathlib import Path

import pytest

from placement.cli import main
from placement.models.counters import gpu_from_spec, read_counters
from placement.occupancy import occupancy

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "gpuperfpredict" / "Apps-Gpus"

GTX680 = {"compute_version": "3", "gpu_name": "GTX-680", "max_clock_rate": "1058", "num_of_cores": "1536",
          "L2": "0.5", "bus": "256", "memory_clock": "3004", "bandwith": "192,256"}  # fmt: skip


def test_spec_row_kepler():
    g = gpu_from_spec(GTX680)
    assert g.arch == "kepler" and g.compute_capability == (3, 0)
    assert g.compute.sms == 8 and g.compute.clock_mhz == 1058 and g.memory.bandwidth_gbs == pytest.approx(192.256)
    assert g.compute.max_regs_per_thread == 63 and g.compute.regs_per_sm == 65536
    assert occupancy(g, 64, 10).blocks_per_sm == 16


def test_spec_row_bandwidth_from_bus_and_maxwell():
    spec = dict(GTX680, compute_version="5.2", gpu_name="GTX-980", num_of_cores="2048", max_clock_rate="1216",
                bandwith="", memory_clock="3505")  # fmt: skip
    g = gpu_from_spec(spec)
    assert g.arch == "maxwell" and g.compute.sms == 16 and g.compute.max_blocks_per_sm == 32
    assert g.memory.bandwidth_gbs == pytest.approx(256 / 8 * 3505 * 2 / 1000)


def test_spec_row_unknown_arch():
    with pytest.raises(ValueError, match="compute capability"):
        gpu_from_spec(dict(GTX680, compute_version="2.0"))  # Fermi: not in the catalog


def _csv(name):
    p = DATA / name
    if not p.exists():
        pytest.skip(f"{p} is absent (real data lives in ../shared/data, not in a fresh clone)")
    return p


def test_vectoradd_row_params():
    rows = read_counters(_csv("vectorAdd-GTX-680.csv"))
    r = rows[5]
    k = r.params
    assert r.input_size == 4194304 and r.measured_s == pytest.approx(0.000439072)
    assert k.threads_per_block == 64 and k.blocks == 65536
    assert k.coal_mem_insts == 3 and k.uncoal_mem_insts == 0  # 2 loads + 1 store, one transaction each
    assert k.store_insts == 1  # gst_request per warp
    assert k.comp_insts == 18 - 3
    assert k.data_bytes == (1048583 + 524288) * 32


def test_missing_counters_reported():
    rows = read_counters(_csv("matMul_gpu_uncoalesced-GTX-680.csv"))
    missing = [r for r in rows if r.params is None]
    assert missing and all(r.missing for r in missing)


def test_cli_counters_json(capsys):
    assert main(["model", "mwp-cwp", "--counters", str(_csv("vectorAdd-Tesla-K40.csv")), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["rows"]) == 207 and doc["mape"] > 0
    r = doc["rows"][0]
    assert {"kernel", "input_size", "predicted_s", "measured_s", "error_pct"} <= set(r)
    assert r["kernel"] == "vectorAdd" and r["machine"] == "Tesla-K40"


def test_cli_counters_with_gpu(capsys):
    assert main(["model", "gpuperf", "--gpu", "k80", "--counters", str(_csv("vectorAdd-Tesla-K40.csv"))]) == 0
    out = capsys.readouterr().out
    assert "MAPE" in out.splitlines()[-1]


def test_cli_counters_bad_file(tmp_path, capsys):
    p = tmp_path / "x.csv"
    p.write_text("a,b\n1,2\n")
    assert main(["model", "bsp", "--counters", str(p)]) == 2
    assert "Input.Size" in capsys.readouterr().err


def test_unparsable_counters_file_one_line(tmp_path, capsys):
    p = tmp_path / "ragged.csv"
    p.write_text("a\nb\nc,d,e,f\n")  # pandas: "Error tokenizing data ... saw 4\n", with a newline
    assert main(["model", "mwp-cwp", "--counters", str(p)]) == 2
    err = capsys.readouterr().err
    assert f"{p}: not a CSV file" in err and err.count("\n") == 1


def test_maxwell_naming_and_units():
    """GTX-980 (cc 5.2) files: global_load / global_store and the texture-side L2 counters; the unified
    cache's lookups (8 a request for vectorAdd) are two a sector, its 50 % hit rate serves nothing."""
    from placement.models.counters import unified_hit_ratio

    rows = read_counters(_csv("vectorAdd-GTX-980.csv"))
    assert sum(r.params is not None for r in rows) > 0.9 * len(rows)
    r = next(r for r in rows if r.params is not None and r.input_size >= 1e7)
    k = r.params
    assert unified_hit_ratio(r.raw) == pytest.approx(0.0, abs=1e-6)
    assert k.l1_hit_ratio == pytest.approx(0.0, abs=1e-6)
    assert k.uncoal_per_mw == pytest.approx(4.0) and k.uncoal_mem_insts == pytest.approx(3.0)  # 4 sectors a request
    assert k.store_insts == pytest.approx(1.0)
    assert unified_hit_ratio({"l1_hit_rate": 94.8}) == pytest.approx(0.896)
    assert unified_hit_ratio({"l1_hit_rate": 8.3}) == 0.0


def test_maxwell_matmul_is_no_longer_read_as_uncoalesced(capsys):
    """The issue's report: MWP-CWP predicted the GTX-980's matMul_gpu 3-5x too slow."""
    assert main(["model", "mwp-cwp", "--counters", str(_csv("matMul_gpu-GTX-980.csv")), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    errs = sorted(abs(r["error_pct"]) for r in doc["rows"] if r["error_pct"] is not None)
    assert doc["predicted_rows"] >= 80 and errs[len(errs) // 2] < 25.0


@pytest.mark.parametrize(
    "edit, words",
    [
        # a row cut short: its last fields were read as blank counters and the row predicted as if whole
        (lambda h, r: (h, r[: r.rindex(",")]), "line 2: {n} fields, the header has {m}"),
        # a second Duration: pandas named it Duration.1 and the first won
        (lambda h, r: (h + ",Duration", r + ",1.0"), "column 'Duration' named twice in the header"),
    ],
)
def test_counters_rows_that_do_not_match_their_header(tmp_path, run_cli, edit, words):
    from expect import one_line

    src = _csv("vectorAdd-GTX-680.csv").read_text().splitlines()
    header, row = edit(src[0], src[1])
    p = tmp_path / "c.csv"
    p.write_text(header + "\n" + row + "\n")
    import csv

    m, n = (len(next(csv.reader([x]))) for x in (header, row))
    one_line(*run_cli("model", "gpuperf", "--counters", p), f"{p}", words.format(n=n, m=m))
    # nvprof's own repeated Context column is not one the models read: the file as recorded is read
    assert (
        src[0].count("Context") == 2
        and run_cli("model", "gpuperf", "--counters", _csv("vectorAdd-GTX-680.csv"))[0] == 0
    )
