use super::*;

const START_NS: u64 = 1_763_700_000_000_000_000;

fn convert_fixture(format: Format, file: &str, host: Option<&str>, disk: Option<&str>) -> Conversion {
    let path = crate::manifest_dir().join("tests/fixtures/captures").join(file);
    let text = std::fs::read_to_string(path).unwrap();
    let ctx = Context { host: host.map(str::to_string), disk: disk.map(str::to_string), start_ns: START_NS, queued: false };
    convert(format, file, &text, &ctx).unwrap()
}

fn device_ms(e: &EventRecord) -> f64 {
    (e.complete_ns - e.issue_ns) as f64 / 1e6
}

#[test]
fn biosnoop_of_the_dusty_disk_keeps_every_io_with_its_latency() {
    let c = convert_fixture(Format::Biosnoop, "biosnoop-dusty-disk.txt", Some("seed-000"), None);
    assert!(c.bad_lines.is_empty(), "{:?}", c.bad_lines);
    assert_eq!(c.events.len(), 39);
    let first = &c.events[0];
    assert_eq!((first.disk.as_str(), first.op, first.bytes, first.sector), ("sdb", Op::R, 131072, 37144544));
    assert_eq!((first.comm.as_str(), first.pid), ("dd", 16014));
    assert_eq!(first.complete_ns, START_NS);
    assert_eq!(first.complete_ns - first.issue_ns, 77_960_000);
    let sdb: Vec<&EventRecord> = c.events.iter().filter(|e| e.disk == "sdb").collect();
    assert_eq!(sdb.len(), 28);
    assert!(sdb.iter().all(|e| device_ms(e) >= 77.96), "the slowest disk never answers faster than its first I/O");
    // dd reads one request at a time: each is issued after the previous completes.
    assert!(sdb.iter().all(|e| e.inflight <= 2), "{:?}", sdb.iter().map(|e| e.inflight).collect::<Vec<_>>());
}

#[test]
fn a_command_name_with_a_space_survives() {
    let c = convert_fixture(Format::Biosnoop, "biosnoop-dusty-disk.txt", Some("seed-000"), None);
    let cache = c.events.iter().find(|e| e.pid == 6515).unwrap();
    assert_eq!((cache.comm.as_str(), cache.disk.as_str()), ("Cache2 I/O", "nvme0n1"));
}

#[test]
fn biosnoop_of_the_retrying_disk_shows_both_modes() {
    let c = convert_fixture(Format::Biosnoop, "biosnoop-lid-pressed.txt", Some("seed-000"), None);
    assert!(c.bad_lines.is_empty());
    assert_eq!(c.events.len(), 19);
    assert_eq!(c.other_lines, 4, "header, comment and two elisions");
    let (fast, slow): (Vec<f64>, Vec<f64>) = c.events.iter().map(device_ms).partition(|ms| *ms < 3.0);
    assert_eq!((fast.len(), slow.len()), (12, 7));
    assert!(slow.iter().all(|ms| *ms > 10.0));
}

#[test]
fn blkparse_assembles_the_seeds_1_15_second_outlier_from_dispatch_and_completion() {
    let c = convert_fixture(Format::Blkparse, "blkparse-sdf-fio.txt", Some("seed-004"), Some("sdf"));
    assert_eq!(c.events.len(), 1);
    let e = &c.events[0];
    assert_eq!(e.complete_ns - e.issue_ns, 1_152_828_442, "btt's max D2C");
    assert_eq!((e.disk.as_str(), e.op, e.bytes, e.sector, e.inflight), ("sdf", Op::R, 32 * 512, 94229760, 1));
    assert_eq!((e.comm.as_str(), e.pid, e.error), ("fio", 2039, 0));
}

#[test]
fn blkparse_splits_queue_time_from_device_time() {
    let c = convert_fixture(Format::Blkparse, "blkparse-sdf-dd.txt", Some("seed-004"), None);
    assert_eq!(c.events.len(), 1);
    let e = &c.events[0];
    assert_eq!(e.disk, "8:32", "major:minor when --disk is not given");
    assert_eq!(e.queue_ns, 5_487 - 4_193, "insert to dispatch");
    assert_eq!(e.complete_ns - e.issue_ns, 744_872 - 5_487, "dispatch to completion");
    assert_eq!((e.comm.as_str(), e.pid, e.bytes), ("dd", 2208, 1024));
    assert_eq!(c.unmatched, 0);
}

#[test]
fn blkparse_counts_completions_whose_dispatch_predates_the_trace() {
    let incomplete = "8,32 0 1 0.1 0 C R 500 + 8 [0]\n8,32 0 2 0.2 7 D W 9 + 8 [x]\n";
    let whole = "8,32 0 3 0.3 7 D R 100 + 8 [x]\n8,32 0 4 0.4 0 C R 100 + 8 [0]\n";
    let ctx = Context { host: Some("h".into()), disk: None, start_ns: START_NS, queued: false };
    let c = convert(Format::Blkparse, "t", &format!("{incomplete}{whole}"), &ctx).unwrap();
    assert_eq!((c.events.len(), c.unmatched), (1, 2), "one completion without dispatch, one dispatch never completed");
    let err = convert(Format::Blkparse, "t", incomplete, &ctx).err().unwrap();
    assert!(err.contains("2 I/Os incomplete in the capture"), "{err}");
}

#[test]
fn blkparse_reports_an_io_error_as_negative_errno() {
    let text = "8,0 0 1 0.0 9 D R 8 + 8 [dd]\n8,0 0 2 0.002 0 C R 8 + 8 [5]\n";
    let ctx = Context { host: Some("h".into()), disk: None, start_ns: START_NS, queued: false };
    assert_eq!(convert(Format::Blkparse, "t", text, &ctx).unwrap().events[0].error, -5);
}

#[test]
fn iosnoop_with_timestamps_converts_and_reports_the_bad_line() {
    let c = convert_fixture(Format::Iosnoop, "iosnoop-ts.txt", Some("web-3"), None);
    assert_eq!(c.events.len(), 5);
    assert_eq!(c.bad_lines.len(), 1);
    assert_eq!(c.bad_lines[0].line_no, 8);
    assert_eq!(c.events[0].issue_ns, START_NS, "the first I/O is anchored at --start-ns");
    assert_eq!(c.events[0].complete_ns - c.events[0].issue_ns, 618_000);
    assert_eq!(c.events[4].comm, "kworker/u8:1");
    assert_eq!(c.events[1].inflight, 2, "issued while the first was in flight");
}

#[test]
fn iosnoop_without_timestamps_is_refused_with_the_fix() {
    let text = "COMM         PID    TYPE DEV      BLOCK        BYTES     LATms\nsupervise 1809 W 202,1 17039600 4096 0.62\n";
    let ctx = Context { host: Some("h".into()), disk: None, start_ns: START_NS, queued: false };
    let err = convert(Format::Iosnoop, "t", text, &ctx).err().unwrap();
    assert!(err.contains("iosnoop -ts"), "{err}");
}

#[test]
fn a_capture_of_another_tool_converts_nothing_and_says_to_check_from() {
    let path = crate::manifest_dir().join("tests/fixtures/captures/biosnoop-dusty-disk.txt");
    let text = std::fs::read_to_string(path).unwrap();
    let ctx = Context { host: Some("h".into()), disk: None, start_ns: START_NS, queued: false };
    for format in [Format::Blkparse, Format::Iosnoop, Format::MsrCsv] {
        let err = convert(format, "biosnoop-dusty-disk.txt", &text, &ctx).err().unwrap();
        assert!(err.starts_with("biosnoop-dusty-disk.txt: no I/O converted from its"), "{err}");
        assert!(err.ends_with("check that --from names the tool that made it"), "{err}");
    }
    let err = convert(Format::Biosnoop, "empty.txt", "", &ctx).err().unwrap();
    assert!(err.contains("no I/O converted from its 0 lines as biosnoop output"), "{err}");
}

#[test]
fn msr_csv_uses_its_own_hosts_and_file_time() {
    let c = convert_fixture(Format::MsrCsv, "msr-hm.csv", None, None);
    assert_eq!(c.events.len(), 4);
    assert_eq!(c.bad_lines.len(), 1, "Trim is not a type MSR traces have");
    let e = &c.events[0];
    assert_eq!((e.host.as_str(), e.disk.as_str(), e.op, e.sector), ("hm", "1", Op::R, 3221225472 / 512));
    assert_eq!(e.issue_ns, (128166372003061629 - 116444736000000000) * 100);
    assert_eq!(e.complete_ns - e.issue_ns, 237_500);
}

#[test]
fn captures_without_a_host_need_one() {
    let ctx = Context { host: None, disk: None, start_ns: START_NS, queued: false };
    let err = convert(Format::Biosnoop, "t", "0.1 dd 1 sdb R 8 4096 1.0\n", &ctx).err().unwrap();
    assert!(err.contains("--host"), "{err}");
}

const PERSEUS: &str = "\"ts\",\"disk_id\",\"throughput\",\"latency\"
1658149230,\"disk2\",17815204.43,72.13
1658149215,\"disk1\",17346861.03,69.44
1658149215,\"disk2\",17346861.03,NA
1658149230,\"disk1\",20259245.98,77.78
";

#[test]
fn perseus_rows_become_throughput_and_latency_windows_in_time_order() {
    let c = perseus::convert("day.csv", PERSEUS, "a22").unwrap();
    let order: Vec<(u64, &str)> = c.windows.iter().map(|w| (w.window_end_ns / 1_000_000_000, w.disk.as_str())).collect();
    assert_eq!(order, [(1658149215, "disk1"), (1658149230, "disk1"), (1658149230, "disk2")]);
    let w = &c.windows[0];
    assert_eq!((w.host.as_str(), w.op, w.metrics, w.window_s, w.samples), ("a22", "all", "throughput_latency", 15, 1));
    assert_eq!(w.window_end_ns - w.window_start_ns, 15_000_000_000);
    assert!((w.kib_per_s - 17346861.03 / 1024.0).abs() < 1e-6);
    assert!((w.await_ms - 0.06944).abs() < 1e-9, "latency is µs");
    assert_eq!(c.bad_lines.len(), 1);
    assert_eq!((c.bad_lines[0].line_no, c.bad_lines[0].reason.as_str()), (4, "latency is NA: not measured"));
}

#[test]
fn perseus_window_serializes_as_the_schema_example_of_its_kind() {
    let c = perseus::convert("day.csv", PERSEUS, "a22").unwrap();
    let json: serde_json::Value = serde_json::to_value(&c.windows[0]).unwrap();
    let example: serde_json::Value = std::fs::read_to_string(crate::manifest_dir().join("../schema/examples/io.window.v1.valid.ndjson"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|w| w["metrics"] == "throughput_latency")
        .unwrap();
    let keys = |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<std::collections::BTreeSet<_>>();
    assert_eq!(keys(&json), keys(&example));
}

#[test]
fn a_file_of_another_format_is_refused_as_perseus_naming_the_fix() {
    let err = perseus::convert("trace.txt", "TIME(s) COMM PID DISK\n0.1 dd 1 sda\n", "h").err().unwrap();
    assert!(err.contains("not the header") && err.contains("--from"), "{err}");
    let err = perseus::convert("day.csv", "ts,disk_id,throughput,latency\n1658149215,disk1,NA,NA\n", "h").err().unwrap();
    assert!(err.contains("no row converted, 1 malformed"), "{err}");
}

#[test]
fn perseus_figures_must_be_finite_times_unix_seconds() {
    let c = perseus::convert("day.csv", "ts,disk_id,throughput,latency\n1658149215,d,-1,5\n99,d,1,5\n1658149215,d,1,inf\n1658149215,d,1,5\n", "h")
        .unwrap();
    assert_eq!(c.windows.len(), 1);
    let reasons: Vec<&str> = c.bad_lines.iter().map(|b| b.reason.as_str()).collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(reasons[1].contains("not Unix seconds"), "{reasons:?}");
}

fn io(op: Op, bytes: u64, start_ms: u64, queue_ms: u64, complete_ms: u64) -> EventRecord {
    EventRecord {
        schema: EVENT_SCHEMA,
        host: "h".into(),
        disk: "sda".into(),
        op,
        bytes,
        sector: 0,
        issue_ns: START_NS + (start_ms + queue_ms) * 1_000_000,
        complete_ns: START_NS + complete_ms * 1_000_000,
        queue_ns: queue_ms * 1_000_000,
        inflight: 1,
        error: 0,
        comm: "fio".into(),
        pid: 1,
        sample_reason: SampleReason::All,
        sample_weight: 1.0,
        timed_from: TimedFrom::Dispatch,
    }
}

#[test]
fn diskstats_add_up_every_io_as_the_kernel_counts_it_from_block_layer_entry_to_completion() {
    // Reads over 0.2-0.5 s and 0.4-1.2 s, and a write queued 0.1 s from 1.5 s, done at 1.7 s.
    let events = [io(Op::R, 4096, 200, 0, 500), io(Op::R, 8192, 400, 0, 1200), io(Op::W, 512, 1500, 100, 1700)];
    let samples = diskstats::samples(&events).unwrap();
    // At 0 s, then a nanosecond before each second: a second's sample falls in the window of its I/Os.
    assert_eq!(samples.iter().map(|s| s.ts_ns - START_NS).collect::<Vec<_>>(), [0, 999_999_999, 1_999_999_999]);
    assert!(samples.iter().all(|s| s.host == "h" && s.counters.name == "sda"));
    let at = |i: usize| &samples[i].counters;
    assert_eq!((at(0).reads_completed, at(0).in_flight, at(0).io_time_ms), (0, 0, 0));
    // At 1 s: the first read done (300 ms), the second in flight; busy from 0.2 s on. Weighted
    // time adds an I/O's time at its completion, as kernels since 5.8 do.
    assert_eq!((at(1).reads_completed, at(1).sectors_read, at(1).read_time_ms), (1, 8, 300));
    assert_eq!((at(1).in_flight, at(1).io_time_ms, at(1).weighted_io_time_ms), (1, 799, 300));
    // At 2 s: the second read took 800 ms, the write 200 ms with its queue; busy 0.2-1.2 and 1.5-1.7 s.
    assert_eq!((at(2).reads_completed, at(2).sectors_read, at(2).read_time_ms), (2, 24, 1100));
    assert_eq!((at(2).writes_completed, at(2).sectors_written, at(2).write_time_ms), (1, 1, 200));
    assert_eq!((at(2).in_flight, at(2).io_time_ms, at(2).weighted_io_time_ms), (0, 1200, 1300));
    assert_eq!((at(2).reads_merged, at(2).writes_merged), (0, 0), "merges are not in a capture of completed requests");
    assert_eq!(at(2).flushes.map(|f| f.completed), Some(0));
}

#[test]
fn an_io_of_no_length_is_never_in_flight_and_a_write_of_no_data_is_a_flush() {
    // A flush that completed the instant it started (its LAT printed as 0.00), on an idle disk.
    let events = [io(Op::W, 0, 300, 0, 300), io(Op::R, 4096, 400, 0, 500)];
    let samples = diskstats::samples(&events).unwrap();
    let last = &samples.last().unwrap().counters;
    assert_eq!((last.in_flight, last.io_time_ms), (0, 100), "only the read kept the disk busy");
    assert_eq!((last.writes_completed, last.flushes.map(|f| f.completed)), (0, Some(1)));
}

#[test]
fn a_capture_spanning_more_than_a_week_has_a_timestamp_off() {
    let events = [io(Op::R, 4096, 0, 0, 1), io(Op::R, 4096, 8 * 24 * 3_600_000, 0, 8 * 24 * 3_600_000 + 1)];
    let error = diskstats::samples(&events).unwrap_err();
    assert!(error.contains("h/sda") && error.contains("timestamp is off"), "{error}");
}

#[test]
fn biosnoop_bt_reads_both_headers_as_total_times_of_unknown_op() {
    let kprobes = convert_fixture(Format::BiosnoopBt, "biosnoop-bt-kprobes.txt", Some("h"), None);
    let tracepoints = convert_fixture(Format::BiosnoopBt, "biosnoop-bt-tracepoints.txt", Some("h"), None);
    assert!(kprobes.bad_lines.is_empty() && tracepoints.bad_lines.is_empty());
    assert_eq!((kprobes.events.len(), kprobes.other_lines), (5, 2), "the probes line and the header");
    assert_eq!((tracepoints.events.len(), tracepoints.other_lines), (4, 3), "the probes line and both header lines");
    let spaced = kprobes.events.iter().find(|e| e.pid == 6515).unwrap();
    assert_eq!((spaced.comm.as_str(), spaced.disk.as_str()), ("Cache2 I/O", "sda"));
    assert_eq!(tracepoints.events[3].disk, "8:16", "MAJOR MINOR");
    assert_eq!(tracepoints.events[3].comm, "jbd2/sdb1-8");
    for e in kprobes.events.iter().chain(&tracepoints.events) {
        assert_eq!((e.op, e.bytes, e.sector, e.queue_ns, e.inflight), (Op::Unknown, 0, 0, 0, 0), "{e:?}");
        assert_eq!(e.timed_from, TimedFrom::Queue);
    }
}

#[test]
fn biosnoop_bt_takes_each_truncated_millisecond_at_its_middle_and_spreads_a_disks_completions_over_theirs() {
    let c = convert_fixture(Format::BiosnoopBt, "biosnoop-bt-kprobes.txt", Some("h"), None);
    // Two completions on nvme0n1 printed at 611 ms: at a quarter and three quarters of it.
    // 10 ms long: [10, 11) ms, so 10.5; "0": under a millisecond, not instantaneous.
    let (first, second) = (&c.events[0], &c.events[1]);
    assert_eq!((first.complete_ns, second.complete_ns), (START_NS + 611_250_000, START_NS + 611_750_000));
    assert_eq!((first.complete_ns - first.issue_ns, second.complete_ns - second.issue_ns), (10_500_000, 500_000));
    // One alone in its millisecond: its middle.
    assert_eq!(c.events[2].complete_ns, START_NS + 627_500_000);
    let identities: std::collections::HashSet<_> = c.events.iter().map(|e| (&e.disk, e.sector, e.issue_ns, e.complete_ns)).collect();
    assert_eq!(identities.len(), c.events.len(), "no two I/Os look like one resent");
}

#[test]
fn the_first_biosnoop_bt_names_no_disk_so_the_command_line_does() {
    let text = "Attaching 3 probes...\nTIME(ms)     COMM             PID    LAT(ms)\n300          Cache2 I/O       6515        2\n";
    let mut ctx = Context { host: Some("h".into()), disk: None, start_ns: START_NS, queued: false };
    let err = convert(Format::BiosnoopBt, "old.txt", text, &ctx).err().unwrap();
    assert!(err.contains("pass --disk"), "{err}");
    ctx.disk = Some("sdb".into());
    let c = convert(Format::BiosnoopBt, "old.txt", text, &ctx).unwrap();
    assert_eq!((c.events[0].disk.as_str(), c.events[0].comm.as_str()), ("sdb", "Cache2 I/O"));
}

#[test]
fn biosnoop_bt_reads_the_major_minor_line_however_it_is_spaced() {
    let text = "TIME(ms)     DISK ID        COMM             PID    LAT(ms)\n   MAJOR   MINOR \n611 259 0 bash 4179 10\n";
    let ctx = Context { host: Some("h".into()), disk: None, start_ns: START_NS, queued: false };
    let c = convert(Format::BiosnoopBt, "t", text, &ctx).unwrap();
    assert!(c.bad_lines.is_empty(), "{:?}", c.bad_lines);
    assert_eq!(c.events[0].disk, "259:0");
}

#[test]
fn iosnoop_captured_with_q_is_timed_from_the_queue_without_a_device_depth() {
    let path = crate::manifest_dir().join("tests/fixtures/captures/iosnoop-ts.txt");
    let text = std::fs::read_to_string(path).unwrap();
    let ctx = Context { host: Some("h".into()), disk: None, start_ns: START_NS, queued: true };
    let c = convert(Format::Iosnoop, "iosnoop-ts.txt", &text, &ctx).unwrap();
    assert_eq!(c.events.len(), 5);
    assert!(c.events.iter().all(|e| e.timed_from == TimedFrom::Queue && e.inflight == 0 && e.queue_ns == 0));
    assert_eq!(c.events[0].complete_ns - c.events[0].issue_ns, 618_000, "START to END, the queue included");
}

#[test]
fn diskstats_cannot_be_counted_from_ios_of_unknown_op() {
    let error = diskstats::samples(&[io(Op::Unknown, 0, 0, 0, 3)]).unwrap_err();
    assert!(error.contains("h/sda") && error.contains("without --rotational"), "{error}");
}

#[test]
fn an_event_says_where_its_time_starts_only_when_it_is_not_the_dispatch() {
    let mut e = io(Op::R, 4096, 0, 0, 3);
    assert!(!serde_json::to_string(&e).unwrap().contains("timed_from"));
    e.timed_from = TimedFrom::Queue;
    e.op = Op::Unknown;
    let json = serde_json::to_string(&e).unwrap();
    assert!(json.contains(r#""timed_from":"queue""#) && json.contains(r#""op":"?""#), "{json}");
}
