"""pool.profile(): per-item records, function stats across workers, exports,
the timeline's static picture and aggregation, and honesty about lost records."""

from __future__ import annotations

import json
import pstats
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from xml.etree import ElementTree

import pytest
from support import FIXTURES, Gate, Gates, MakePool

from interp_rpc import CallTimeoutError, InterpreterPool, RemoteError
from interp_rpc._worker import profiling as worker_profiling
from interp_rpc.display import profile as profile_html
from interp_rpc.display import profile_mime
from interp_rpc.errors import InterpRpcError
from interp_rpc.profiling import model
from interp_rpc.profiling import trace as chrome_trace

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def prof_pool() -> Iterator[InterpreterPool]:
    pool = InterpreterPool(workers=2, init="import profiletasks")
    try:
        yield pool
    finally:
        pool.close(timeout=60)


def test_a_profiled_map_has_one_record_per_item(prof_pool: InterpreterPool) -> None:
    with prof_pool.profile() as prof:
        assert prof.recording
        results = list(prof_pool.map("profiletasks.digit_sum", range(300), chunksize=40))
    assert results == [sum(int(c) for c in str(n * 7919)) for n in range(300)]
    items = [r for r in prof.records if r.item is not None]
    assert sorted(r.item for r in items) == list(range(300))
    assert all(r.count == 1 and r.outcome == model.OK and r.ran for r in items)
    assert all(r.started_ns <= r.finished_ns and r.worker in (0, 1) for r in items)
    assert len({r.call_id for r in items}) == 8  # 300 items in chunks of 40
    assert prof.stats is None  # functions=False
    assert "profiling overhead" in dict(prof.summary())


def test_a_profile_is_not_readable_while_recording(prof_pool: InterpreterPool) -> None:
    with prof_pool.profile() as prof, pytest.raises(RuntimeError, match="still recording"):
        prof.summary()


def test_merged_function_stats_name_a_function_called_inside_the_target(
        prof_pool: InterpreterPool) -> None:
    with prof_pool.profile(functions=True) as prof:
        list(prof_pool.map("profiletasks.digit_sum", range(400), chunksize=20))
    stats = prof.stats
    assert stats is not None
    names = {func[2]: value for func, value in stats.stats.items()}  # type: ignore[attr-defined]
    assert "digits_helper" in names and "digit_sum" in names
    assert names["digit_sum"][1] == 400  # calls, summed over the workers
    assert names["digits_helper"][1] == 400
    # The worker's own machinery is not in the user's profile.
    files = {func[0] for func in stats.stats}  # type: ignore[attr-defined]
    assert not any("/interp_rpc/_worker/" in f for f in files)
    per_worker = prof.stats_per_worker()
    assert set(per_worker) <= {0, 1} and per_worker
    html = prof._repr_html_()
    assert "digits_helper" in html and "irpc-sortable" in html


def test_only_one_function_profile_at_a_time(prof_pool: InterpreterPool) -> None:
    with (prof_pool.profile(functions=True),
          pytest.raises(InterpRpcError, match="already running"),
          prof_pool.profile(functions=True)):
        pass
    with prof_pool.profile(functions=True) as again:  # the first one ended cleanly
        prof_pool.call("profiletasks.digit_sum", 3)
    assert again.stats is not None


def test_a_failed_item_is_marked_and_the_rest_of_its_chunk_did_not_run(
        prof_pool: InterpreterPool) -> None:
    with prof_pool.profile() as prof, pytest.raises(RemoteError):
        list(prof_pool.map("profiletasks.fail_at", range(10), [4] * 10, chunksize=10))
    by_item = {r.item: r for r in prof.records}
    assert by_item[4].outcome == model.FAILED
    assert all(by_item[i].outcome == model.OK for i in range(4))
    assert by_item[5].outcome == model.NOT_RUN and by_item[5].count == 5


def test_a_failed_item_alone_in_its_chunk_is_marked(prof_pool: InterpreterPool) -> None:
    # A chunk of one item carries no item times (its request's are the item's).
    with prof_pool.profile() as prof, pytest.raises(RemoteError):
        list(prof_pool.map("profiletasks.fail_at", range(6), [4] * 6, chunksize=1))
    by_item = {r.item: r for r in prof.records}
    assert by_item[4].outcome == model.FAILED and by_item[4].ran
    assert all(by_item[i].outcome == model.OK for i in range(4))


def test_exported_trace_is_trace_event_json_with_one_slice_per_item(
        prof_pool: InterpreterPool, tmp_path: Path) -> None:
    with prof_pool.profile() as prof:
        list(prof_pool.map("profiletasks.digit_sum", range(120), chunksize=30))
    path = prof.export(tmp_path / "trace.json")
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    for event in events:
        assert event["ph"] in {"X", "M", "i", "s", "f"}, event
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        if event["ph"] != "M":
            assert isinstance(event["ts"], int | float) and event["ts"] >= 0
        if event["ph"] == "X":
            assert isinstance(event["dur"], int | float) and event["dur"] >= 0
            assert isinstance(event["name"], str) and isinstance(event.get("args", {}), dict)
    slices = [e for e in events if e["ph"] == "X" and e["cat"] == chrome_trace.ITEM]
    assert sorted(e["args"]["item"] for e in slices) == list(range(120))
    workers = {e["tid"] for e in slices}
    names = {e["tid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert all(names[tid].startswith("worker ") for tid in workers)
    starts = {e["id"] for e in events if e["ph"] == "s"}
    assert starts and starts == {e["id"] for e in events if e["ph"] == "f"}


def test_pstats_export_loads_with_pstats(prof_pool: InterpreterPool, tmp_path: Path) -> None:
    with prof_pool.profile(functions=True) as prof:
        list(prof_pool.map("profiletasks.digit_sum", range(50)))
    loaded = pstats.Stats(str(prof.export(tmp_path / "run.pstats")))
    assert any(func[2] == "digits_helper" for func in loaded.stats)  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"\.json"):
        prof.export(tmp_path / "run.txt")


def _synthetic(items: int, workers: int = 2) -> model.Profile:
    records = [model.ItemRecord(
        call_id=i // 100, worker=i % workers, target=f"mod.t{i % 3}", item=i, count=1,
        outcome=model.FAILED if i == 7 else model.OK, enqueued_ns=1_000, started_ns=1_000 + i * 50,
        finished_ns=1_000 + i * 50 + 40, group=1, request_items=100, serialize_ns=5,
        deserialize_ns=5, result_serialize_ns=5, request_started_ns=1_000)
        for i in range(items)]
    return model.Profile(workers=workers, start_ns=0, end_ns=records[-1].finished_ns,
                         item_records=records)


def _bars(svg: str) -> list[ElementTree.Element]:
    root = ElementTree.fromstring(svg)
    return [r for r in root.iter(f"{SVG}rect") if r.get("height") in
            (str(profile_html.LANE_HEIGHT - 10), str(profile_html.LANE_HEIGHT - 8))]


def test_the_timeline_draws_items_one_by_one_up_to_5000() -> None:
    svg = profile_html.static_svg(_synthetic(5000))
    assert len(_bars(svg)) == 5000
    assert "aggregated" not in svg


def test_the_timeline_aggregates_per_pixel_column_above_5000_items() -> None:
    svg = profile_html.static_svg(_synthetic(6000))
    bars = _bars(svg)
    plot = profile_html.WIDTH - profile_html.LEFT - profile_html.RIGHT
    assert 0 < len(bars) <= plot * 2
    assert "6,000 items aggregated per pixel column" in svg


def test_html_keeps_a_static_picture_for_untrusted_notebooks_and_loads_nothing() -> None:
    html = _synthetic(50)._repr_html_()
    assert 'src="data:image/svg+xml;base64,' in html  # kept by JupyterLab's sanitizer
    assert "<svg" not in html.split("<script")[0]  # inline SVG would be stripped
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in html
    assert "var(--jp-ui-font-color1" in html and "currentColor" in html
    bundle = _synthetic(50)._repr_mimebundle_()
    assert set(bundle) == {profile_mime.MIME_TYPE, "text/html", "image/svg+xml", "text/plain"}
    ElementTree.fromstring(bundle["image/svg+xml"])  # well-formed


def test_the_static_picture_marks_failures_and_has_ticks_with_units() -> None:
    svg = profile_html.static_svg(_synthetic(20))
    root = ElementTree.fromstring(svg)
    assert any(r.get("stroke") == profile_html.PROBLEM_COLOUR for r in root.iter(f"{SVG}rect"))
    labels = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert any(label.endswith("µs") for label in labels)
    assert "failed / cancelled / timed out" in labels
    # Its own background: readable whatever the notebook's theme.
    assert root.find(f"{SVG}rect").get("fill") == "#ffffff"  # type: ignore[union-attr]


def test_views_say_when_the_call_log_wrapped(prof_pool: InterpreterPool) -> None:
    # The engine's call log keeps the last 16,384 records.
    with prof_pool.profile() as prof:
        futures = [prof_pool.submit("builtins.abs", -n) for n in range(16_500)]
        assert [f.result() for f in futures] == list(range(16_500))
    assert prof.lost_records > 0
    assert any("lost" in w for w in prof.warnings())
    assert "were lost" in prof._repr_html_() and "were lost" in prof.text()


def test_pool_profile_works_from_a_script(tmp_path: Path) -> None:
    script = tmp_path / "profile_script.py"
    script.write_text(textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(FIXTURES)!r})
        from interp_rpc import InterpreterPool

        if __name__ == "__main__":
            with InterpreterPool(workers=2, init="import profiletasks") as pool:
                with pool.profile(functions=True) as prof:
                    list(pool.map("profiletasks.digit_sum", range(200)))
                prof.export({str(tmp_path / "t.json")!r})
                print(json.dumps({{
                    "items": sorted(r.item for r in prof.records),
                    "helper": any(f[2] == "digits_helper" for f in prof.stats.stats),
                }}))
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"items": list(range(200)), "helper": True}
    assert (tmp_path / "t.json").exists()


def test_a_profile_begun_during_a_lazy_map_times_the_chunks_sent_after_it(
        prof_pool: InterpreterPool) -> None:
    expected = [sum(int(c) for c in str(n * 7919)) for n in range(100)]
    results = prof_pool.map("profiletasks.digit_sum", range(100), chunksize=10, buffersize=10)
    # The first result claims chunk 0 and sends chunk 1: both before the profile.
    first = next(results)
    with prof_pool.profile() as prof:
        rest = list(results)
    assert [first, *rest] == expected
    timed = {r.item for r in prof.records if r.item is not None and r.count == 1}
    assert timed == set(range(20, 100))


def test_a_timed_chunk_stops_before_its_next_item_once_its_map_is_stopped() -> None:
    class Stopped(Exception):
        pass

    flag = bytearray(1)

    def item(n: int) -> int:
        if n == 2:
            flag[0] = 1  # as the caller does when the map stops
        return n * 10

    results, failed, error, marks = worker_profiling.run_chunk_timed(
        item, list(range(6)), False, ("test", "stop"), Stopped, memoryview(flag),
        first_index=100)
    assert (results, failed) == ([0, 10, 20], 3)
    assert isinstance(error, Stopped) and "before item 103" in str(error)
    assert worker_profiling.read_marks(marks)[-2] == 3  # the items that ran are timed, no other


class FakeClock:
    """_worker_profiling's clock, made to advance only when an item runs:
    every item takes ``item_ns``, exactly."""

    def __init__(self, item_ns: int) -> None:
        self.now = 1_000_000
        self.item_ns = item_ns

    def monotonic_ns(self) -> int:
        return self.now

    def item(self, n: int) -> int:
        self.now += self.item_ns
        if n < 0:
            raise ValueError(f"negative item {n}")
        return n * 2

    def pair(self, a: int, b: int) -> int:
        return self.item(a + b)


@pytest.fixture
def fake_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    clock = FakeClock(worker_profiling.MIN_GROUP_NS // 50)  # groups of 50 items
    monkeypatch.setattr(worker_profiling, "time", clock)
    return clock


def group_ends(marks: bytes) -> list[int]:
    """The chunk offset each group of a chunk's marks ended before."""
    return worker_profiling.read_marks(marks)[1::2]


def test_tiny_items_are_timed_in_groups_that_grow_to_the_group_time(
        fake_clock: FakeClock) -> None:
    key = ("test", "groups")
    results, failed, error, marks = worker_profiling.run_chunk_timed(
        fake_clock.item, list(range(500)), False, key, ValueError)
    assert (results, failed, error) == ([n * 2 for n in range(500)], -1, None)
    ends = group_ends(marks)
    sizes = [b - a for a, b in zip([0, *ends], ends, strict=False)]
    # From one item (the target's first chunk) growing at most 8-fold, up to
    # the 50 items of a group's time; the last group takes the remainder.
    assert sizes[:3] == [1, 8, 50], sizes
    assert all(size == 50 for size in sizes[2:-1]), sizes
    assert ends[-1] == 500 and 25 <= sizes[-1] < 75, sizes
    # Each item's time is its group's average: here, exactly each item's.
    spans = worker_profiling.item_spans(marks)
    assert [end - start for start, end, _ in spans] == [fake_clock.item_ns] * 500
    assert [group for _, _, group in spans[:9]] == [1] + [8] * 8
    assert worker_profiling.group_count(marks) == len(sizes)


@pytest.mark.parametrize(("items", "sizes"), [(70, [70]), (74, [74]), (75, [50, 25]),
                                              (120, [50, 70]), (1, [1])])
def test_a_remainder_under_half_a_group_joins_the_chunk_s_last_group(
        fake_clock: FakeClock, items: int, sizes: list[int]) -> None:
    key = ("test", "remainder", items)
    worker_profiling.run_chunk_timed(fake_clock.item, list(range(200)), False, key, ValueError)
    results, _, _, marks = worker_profiling.run_chunk_timed(
        fake_clock.item, list(range(items)), False, key, ValueError)
    assert results == [n * 2 for n in range(items)]
    ends = group_ends(marks)
    assert [b - a for a, b in zip([0, *ends], ends, strict=False)] == sizes


@pytest.mark.parametrize("failing", [0, 30, 60, 99])
@pytest.mark.parametrize("star", [False, True])
def test_a_failed_item_ends_the_timed_groups_wherever_it_is(
        fake_clock: FakeClock, failing: int, star: bool) -> None:
    key = ("test", "failure", star)
    values = [1] * 100
    values[failing] = -1
    items: list[object] = [(v, 0) for v in values] if star else list(values)
    fn = fake_clock.pair if star else fake_clock.item
    worker_profiling.run_chunk_timed(fn, items, star, key, MemoryError)  # learns the size
    results, failed, error, marks = worker_profiling.run_chunk_timed(
        fn, items, star, key, MemoryError)
    assert (results, failed) == ([2] * failing, failing)
    assert isinstance(error, ValueError) and "negative item -1" in str(error)
    assert group_ends(marks)[-1] == failing + 1  # the failed item ran: it is timed
    assert len(worker_profiling.item_spans(marks)) == failing + 1


# ------------------------------------------------------------- timed-out chunks


def timed_out_map(pool: InterpreterPool, gates: Gates) -> tuple[Gate, Iterator[object]]:
    """A one-chunk map of 5 items whose third blocks on a gate, and whose
    timeout passes while that item runs (the test waits for it to start)."""
    gate = gates.new()
    items = [("ok", 0), ("ok", 1), gate.map_item(2), ("ok", 3), ("ok", 4)]
    results = pool.map("pooltasks.map_item", items, chunksize=5, timeout=0.2)
    gate.wait_started()  # items 0 and 1 are done, item 2 runs
    with pytest.raises(CallTimeoutError):
        next(results)
    return gate, results


def test_a_timed_out_chunk_shows_item_by_item_with_the_timed_out_item_marked(
        make_pool: MakePool, gates: Gates) -> None:
    pool = make_pool(workers=1)
    with pool.profile() as prof:
        gate, _ = timed_out_map(pool, gates)
        gate.release()
        # One worker: this call runs after the chunk, so the chunk has finished.
        assert pool.call("builtins.abs", -7) == 7
    chunk = sorted((r for r in prof.records if r.target == "pooltasks.map_item"),
                   key=lambda r: r.item or 0)
    ran = [r for r in chunk if r.ran]
    assert [(r.item, r.count) for r in ran] == [(k, 1) for k in range(len(ran))]
    # The timeout stopped the map: its chunk ended before the item after the
    # one that ran at the timeout, and the rest shows as not run.
    (rest,) = [r for r in chunk if not r.ran]
    assert (rest.outcome, rest.item, rest.item + rest.count) == (model.NOT_RUN, len(ran), 5)
    # Short items are timed in groups (item 0 alone, the first group of a
    # target): the group that ran when the caller gave up is marked, the items
    # before it are ok.
    outcomes = [r.outcome for r in ran]
    timed_out = [r for r in ran if r.outcome == model.TIMED_OUT]
    assert chunk[2] in timed_out, outcomes
    assert all(r.group == len(timed_out) for r in timed_out), [r.group for r in chunk]
    first = timed_out[0].item
    assert first is not None
    assert outcomes == [model.OK] * first + [model.TIMED_OUT] * len(timed_out), outcomes
    assert outcomes[0] == model.OK
    assert not prof.warnings()


def test_a_timed_out_chunk_still_running_at_the_end_is_one_marked_bar_and_said_so(
        make_pool: MakePool, gates: Gates) -> None:
    pool = make_pool(workers=1)
    with pool.profile() as prof:
        gate, _ = timed_out_map(pool, gates)
    gate.release()
    chunk = [r for r in prof.records if r.target == "pooltasks.map_item"]
    assert [(r.item, r.count, r.outcome) for r in chunk] == [(0, 5, model.TIMED_OUT)]
    assert chunk[0].label == "pooltasks.map_item items 0-4"
    (note,) = prof.warnings()
    assert "timed out and was still running" in note and "items 0-4" in note
    assert "timed out and was still running" in prof._repr_html_()


def test_a_timed_out_call_is_marked(make_pool: MakePool, gates: Gates) -> None:
    pool = make_pool(workers=1)
    gate = gates.new()
    with pool.profile() as prof:
        with pytest.raises(CallTimeoutError):
            pool.call("pooltasks.block", *gate.args(), timeout=0.2)
        gate.release()
        assert pool.call("builtins.abs", -7) == 7
    (call,) = [r for r in prof.records if r.target == "pooltasks.block"]
    assert call.outcome == model.TIMED_OUT and call.ran and call.item is None
