"""Object sizes in a trace's metadata (issue 34): an object holds at most 2^49 bytes, a GPU's
virtual address space (``traces.launch``); larger is refused with the file and field named."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traces
from traces.launch import ADDRESS_LIMIT, MAX_OBJECT_BYTES, SHARED_WINDOW
from traces.schema import kernel_info_from_dict

from tracemaker import vecadd
from expect import one_line


def _metadata(**obj) -> dict:
    _, info = vecadd(2, 2)
    d = json.loads(info.to_json())
    d["objects"][0].update(obj)
    return d


def test_an_object_of_two_to_the_62_bytes(tmp_path, run_cli):
    """Was: accepted (and `placement info` printed it)."""
    import pyarrow.parquet as pq

    from traces.schema import METADATA_KEY

    cols, info = vecadd(2, 2)
    d = json.loads(info.to_json())
    d["objects"][0]["size"] = 1 << 62
    p = tmp_path / "t.parquet"
    pq.write_table(traces.to_table(cols, info).replace_schema_metadata({METADATA_KEY: json.dumps(d).encode()}), p)
    for reader in (traces.read, traces.read_info):
        with pytest.raises(traces.TraceError) as e:
            reader(p)
        assert e.value.field == "objects[0].size"
    one_line(*run_cli("info", p), f"{p}: objects[0].size: object 'A' has 4611686018427387904 bytes; an object holds "
             "at most 2^49")  # fmt: skip
    one_line(*run_cli("rank", p, "--gpu", "k80"), f"{p}: objects[0].size: ")


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(base=st.integers(0, 1 << 64), size=st.one_of(st.integers(1, 1 << 64), st.sampled_from(
    [MAX_OBJECT_BYTES - 1, MAX_OBJECT_BYTES, MAX_OBJECT_BYTES + 1, 1 << 62, SHARED_WINDOW, SHARED_WINDOW + 1])),
    space=st.sampled_from(["global", "shared", "texture1d"]))  # fmt: skip
def test_object_bounds(base, size, space):
    """An object is accepted iff it holds at most 2^49 bytes and ends inside its space's addresses."""
    top = SHARED_WINDOW if space == "shared" else ADDRESS_LIMIT
    ok = size <= MAX_OBJECT_BYTES and base + size <= top
    d = _metadata(base=base, size=size, space=space, shape=None)
    if ok:
        assert kernel_info_from_dict(d, "t").objects[0].size == size
    else:
        with pytest.raises(traces.TraceError) as e:
            kernel_info_from_dict(d, "t")
        assert e.value.field == "objects[0].size" and str(e.value).count("\n") == 0


def test_objects_file_and_porple_sizes_beyond_the_bound(tmp_path, run_cli):
    from traces.importers.objects import load_objects_toml

    f = tmp_path / "o.toml"
    f.write_text(f'[[object]]\nname = "A"\nbase = 0\nsize = {MAX_OBJECT_BYTES + 1}\n')
    with pytest.raises(traces.InputError, match="beyond 2\\^49 bytes"):
        load_objects_toml(f)
    f.write_text(f'[[object]]\nname = "A"\nbase = 0\nsize = {MAX_OBJECT_BYTES}\n')
    assert load_objects_toml(f)[0].size == MAX_OBJECT_BYTES
    trace = tmp_path / "p.txt"
    trace.write_text(f"sizeof 4\narray_size {MAX_OBJECT_BYTES + 4}\n0 0 0 0 0 0\n")
    one_line(*run_cli("import", "porple", trace, "-o", tmp_path / "t.parquet"), f"{trace} line 2: array 0 takes",
             "beyond 2^49")  # fmt: skip


def test_keys_the_format_has_no_place_for_are_named_and_ignored(caplog, monkeypatch):
    """A misspelt optional key (``mesured`` for ``measured``) was ignored without a word: the prediction then had no
    measured time to scale, and nothing said why. Every key of the contract is still read without a warning."""
    import traces.schema

    monkeypatch.setattr(traces.schema, "_SAID", set())
    d = _metadata(base=0x1000, size=4096)
    with caplog.at_level("WARNING", logger="traces.schema"):
        info = kernel_info_from_dict(json.loads(json.dumps(d)), "t.parquet")
    assert caplog.records == [] and info.measured is None
    d["mesured"] = {"time_ns": 5.0, "gpu": "h100"}
    d["objects"][0]["writen"] = True
    d["instructions"]["isued"] = 7
    d["extra"] = {"anything": 1}
    d["source"] = {"format": "hand", "what": 2}
    with caplog.at_level("WARNING", logger="traces.schema"):
        info = kernel_info_from_dict(d, "t.parquet")
    assert [r.getMessage() for r in caplog.records] == [
        "t.parquet: metadata keys 'mesured', 'objects[0].writen', 'instructions.isued' are not part of the trace "
        "format; ignored"
    ]
    assert info.measured is None and info.instructions.issued is None
    caplog.clear()  # said once a file: a command reads a trace's metadata several times (evaluate: 4)
    with caplog.at_level("WARNING", logger="traces.schema"):
        kernel_info_from_dict(d, "t.parquet")
        kernel_info_from_dict(d, "u.parquet")
    assert [r.getMessage()[:10] for r in caplog.records] == ["u.parquet:"]
