"""The profile's data for the JupyterLab extension: versioned, columnar,
compact, and exactly the records (the renderer draws what it gets)."""

from __future__ import annotations

import itertools
import json

from interp_rpc import InterpreterPool
from interp_rpc.display import profile as profile_html
from interp_rpc.display import profile_mime
from interp_rpc.profiling import model

#: The per-record fields, each one column.
COLUMNS = ("w", "s", "d", "t", "o", "i", "n", "g", "q", "ri", "ser", "de", "rs")


def synthetic(items: int, workers: int = 2) -> model.Profile:
    """Items of three targets on ``workers`` lanes, item 7 failed, every
    serialization 5 ns (a column that is the same for every record)."""
    records = [model.ItemRecord(
        call_id=i // 100, worker=i % workers, target=f"mod.t{i % 3}", item=i, count=1,
        outcome=model.FAILED if i == 7 else model.OK, enqueued_ns=1_000 + i,
        started_ns=1_000 + i * 50, finished_ns=1_000 + i * 50 + 40 + i % 7, group=1,
        request_items=100, serialize_ns=5, deserialize_ns=5, result_serialize_ns=5,
        request_started_ns=1_000)
        for i in range(items)]
    return model.Profile(workers=workers, start_ns=500, end_ns=records[-1].finished_ns,
                         item_records=records)


def expand(value: object, count: int) -> list[object]:
    return list(value) if isinstance(value, list) else [value] * count


def test_the_bundle_carries_the_versioned_data_next_to_the_html() -> None:
    bundle = synthetic(50)._repr_mimebundle_()
    assert set(bundle) == {profile_mime.MIME_TYPE, "text/html", "image/svg+xml", "text/plain"}
    data = bundle[profile_mime.MIME_TYPE]
    assert data["version"] == profile_mime.FORMAT_VERSION == 1
    assert profile_mime.MIME_TYPE == "application/vnd.interp-rpc.profile+json"
    assert json.loads(json.dumps(data)) == data  # plain JSON, as the kernel sends it
    assert data["timeline"]["count"] == 50 and data["timeline"]["truncated"] == 0
    assert dict(map(tuple, data["summary"])) == dict(synthetic(50).summary())
    assert data["slowest"]["headers"] == ["item", "worker", "run time", "outcome"]
    assert data["functions"] is None  # not a functions=True profile


def test_the_columns_decode_to_the_records() -> None:
    profile = synthetic(300, workers=3)
    timeline = profile_mime.data(profile)["timeline"]
    count = timeline["count"]
    decoded = {name: expand(timeline[name], count) for name in COLUMNS}
    decoded["s"] = list(itertools.accumulate(decoded["s"]))  # sent as differences
    ran = profile.ran()
    assert count == len(ran) == 300
    for k, r in enumerate(ran):
        assert decoded["w"][k] == r.worker
        assert decoded["s"][k] == r.started_ns - profile.start_ns
        assert decoded["d"][k] == r.finished_ns - r.started_ns
        assert timeline["targets"][decoded["t"][k]] == r.target
        assert timeline["outcomes"][decoded["o"][k]] == r.outcome
        assert decoded["i"][k] == r.item and decoded["q"][k] == r.queue_wait_ns
    failed = timeline["outcomes"].index(model.FAILED)
    assert timeline["problems"] == [failed]
    assert timeline["colours"] == [profile_html.target_colours(profile)[t]
                                   for t in timeline["targets"]]


def test_a_column_with_one_value_for_every_record_is_that_value() -> None:
    timeline = profile_mime.data(synthetic(100))["timeline"]
    assert timeline["ser"] == timeline["de"] == timeline["rs"] == 5
    assert timeline["n"] == timeline["g"] == 1 and timeline["ri"] == 100
    assert timeline["s"] == [500] + [50] * 99  # starts, as differences: 50 ns apart
    assert isinstance(timeline["d"], list) and len(timeline["d"]) == 100
    assert profile_mime.column([]) == []  # no record: an empty column, not a value


def test_the_data_is_smaller_than_the_htmls_embedded_copy() -> None:
    profile = synthetic(10_000)
    mime = json.dumps(profile_mime.data(profile), separators=(",", ":"))
    embedded = json.dumps(profile_html._item_data(profile, profile_html.target_colours(profile)),
                          separators=(",", ":"))
    assert len(mime) < 0.55 * len(embedded), (len(mime), len(embedded))
    assert len(mime) / 10_000 < 25, f"{len(mime) / 10_000:.1f} bytes per record"


def test_records_beyond_the_embedded_limit_are_counted_not_sent() -> None:
    extra = 25
    profile = synthetic(profile_mime.MAX_ITEMS + extra)
    data = profile_mime.data(profile)
    timeline = data["timeline"]
    assert timeline["count"] == profile_mime.MAX_ITEMS
    assert timeline["truncated"] == extra
    assert len(timeline["s"]) == profile_mime.MAX_ITEMS
    size = len(json.dumps(data, separators=(",", ":")))
    assert size < 4_000_000, f"{size:,} bytes for {profile_mime.MAX_ITEMS:,} records"


def test_a_function_profile_carries_its_table_and_icicle() -> None:
    with InterpreterPool(workers=2) as pool, pool.profile(functions=True) as prof:
        list(pool.map("builtins.abs", range(-30, 30), chunksize=6))
    data = profile_mime.data(prof)
    functions = data["functions"]
    workers = sorted(prof.worker_stats)
    assert functions["headers"][:4] == ["function", "calls (all)", "tottime (all)",
                                        "cumtime (all)"]
    assert len(functions["headers"]) == 1 + 3 * (1 + len(workers))
    assert all(len(row) == len(functions["headers"]) for row in functions["rows"])
    (abs_row,) = [row for row in functions["rows"] if "abs" in row[0]]
    assert abs_row[1] == 60  # calls, summed over the workers
    icicle = functions["icicle"]
    assert icicle and len(icicle["name"]) == len(icicle["x"]) == len(icicle["w"])
    only_functions = profile_mime.data(prof, with_timeline=False)
    assert only_functions["timeline"] is None and only_functions["functions"] == functions


def test_a_function_profile_without_stats_says_so() -> None:
    profile = synthetic(10)
    profile.functions = True  # asked for, but no worker's stats arrived
    data = profile_mime.data(profile)
    assert data["functions"] is None
    assert any("no function profile" in w for w in data["warnings"])
