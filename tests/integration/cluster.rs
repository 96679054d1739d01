//! `scdflow run` as a cluster of processes on loopback (timely's `-n`, `-p`, `-h`): two processes
//! of two workers each write exactly what one worker writes, and the options' errors.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub(crate) fn dataflows() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("dataflows")
}

pub(crate) fn scdflow(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_scdflow"));
    command
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Ports nobody listens on now (all held until every one is chosen, so they differ).
pub(crate) fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect()
}

/// Starts process `p` of a two-process cluster (addresses in `hosts`) running `pipeline` into
/// `out`, with `extra` options.
pub(crate) fn member(pipeline: &str, out: &str, p: &str, hosts: &str, extra: &[&str]) -> Child {
    let args = [
        "run", pipeline, "--out", out, "-n", "2", "-p", p, "-h", hosts,
    ];
    scdflow(&args).args(extra).spawn().unwrap()
}

/// Waits for `child`, killing it (and failing) after two minutes: a cluster that cannot form
/// would otherwise hang the test suite. Returns its output, failed or not.
pub(crate) fn outcome(mut child: Child, what: &str) -> Output {
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("poll").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{what} did not finish in two minutes");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// [`outcome`] of a run that must succeed.
pub(crate) fn finish(child: Child, what: &str) -> Output {
    let out = outcome(child, what);
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub(crate) fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// A change feed or `metrics.json` without its wall-clock timestamps.
pub(crate) fn without_timestamps(name: &str, text: &str) -> String {
    if name == "metrics.json" {
        let mut json: serde_json::Value = serde_json::from_str(text).unwrap();
        strip_timestamps(&mut json);
        return json.to_string();
    }
    if name.contains(".changes.") {
        return text
            .lines()
            .map(|l| l.rsplit_once(',').map_or(l, |(head, _)| head))
            .collect::<Vec<_>>()
            .join("\n");
    }
    text.to_string()
}

fn strip_timestamps(json: &mut serde_json::Value) {
    match json {
        serde_json::Value::Object(fields) => {
            fields.retain(|k, _| !k.contains("timestamp") && k != "latency");
            fields.values_mut().for_each(strip_timestamps);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_timestamps),
        _ => {}
    }
}

#[test]
fn two_processes_of_two_workers_write_what_one_worker_writes() {
    // T1 has stale events and a late batch, T5 snapshots, T8 bitemporal history, and the
    // multi-file example two targets fed by one derived stream.
    for example in [
        "t1_scd1.sql",
        "customers_multi_file.sql",
        "t5_snapshot_scd2.sql",
        "t8_bitemporal.sql",
    ] {
        let pipeline = dataflows().join(example);
        let pipeline = pipeline.to_str().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let hostfile = dir.path().join("hosts.txt");
        let ports = free_ports(2);
        let hosts: String = ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect();
        std::fs::write(&hostfile, hosts).unwrap();
        let hostfile = hostfile.to_str().unwrap();
        let outs: Vec<PathBuf> = ["single", "p0", "p1"]
            .iter()
            .map(|d| dir.path().join(d))
            .collect();
        let out = |i: usize| outs[i].to_str().unwrap();
        let single = scdflow(&["run", pipeline, "--out", out(0)])
            .spawn()
            .unwrap();
        finish(single, "the single-worker run");
        let process = |p: &str, o: &str| member(pipeline, o, p, hostfile, &["-w", "2"]);
        let first = process("0", out(1));
        let second = process("1", out(2));
        finish(first, "process 0");
        let done = finish(second, "process 1");
        // Timely itself may print connection retries before that line.
        let said = String::from_utf8_lossy(&done.stdout).into_owned();
        assert!(
            said.ends_with("process 1 of 2: done; process 0 writes the outputs\n"),
            "{said}"
        );
        assert!(!outs[2].exists(), "process 1 wrote outputs");
        let mut files = 0;
        for entry in std::fs::read_dir(&outs[0]).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if std::fs::metadata(outs[0].join(&name)).unwrap().is_dir() {
                continue;
            }
            let (a, b) = (read(&outs[0], &name), read(&outs[1], &name));
            assert_eq!(
                without_timestamps(&name, &a),
                without_timestamps(&name, &b),
                "{example}: {name}"
            );
            if !name.contains(".changes.") && name != "metrics.json" {
                assert_eq!(a, b, "{example}: {name} byte for byte");
            }
            files += 1;
        }
        assert!(files >= 3, "{example}: {files} files compared");
    }
}

pub(crate) fn fails(args: &[&str]) -> String {
    let out = scdflow(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn cluster_option_errors() {
    let pipeline = dataflows().join("t3_scd2.sql");
    let pipeline = pipeline.to_str().unwrap();
    assert_eq!(
        fails(&["run", pipeline, "-n", "2", "-p", "2"]),
        "error: --process 2: must be less than --processes 2 (processes count from 0)\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let hostfile = dir.path().join("hosts.txt");
    std::fs::write(&hostfile, "# the cluster\n127.0.0.1:2101\n127.0.0.1\n").unwrap();
    let h = hostfile.to_str().unwrap();
    assert_eq!(
        fails(&["run", pipeline, "-n", "2", "-h", h]),
        format!("error: {h}:3: expected host:port, found `127.0.0.1`\n")
    );
    std::fs::write(&hostfile, "127.0.0.1:2101\n").unwrap();
    assert_eq!(
        fails(&["run", pipeline, "-n", "2", "-h", h]),
        format!("error: {h}: 1 address(es) for 2 processes; give one host:port line per process\n")
    );
}

/// A pipeline over two commits whose second (read by process 1 in a cluster of two) has a row
/// with a NULL sequence.
pub(crate) fn bad_second_commit(dir: &Path) -> PathBuf {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("batch_1.csv"), "id,v,seq\n1,a,1\n2,b,1\n").unwrap();
    std::fs::write(data.join("batch_2.csv"), "id,v,seq\n1,c,2\n2,d,\n3,e,2\n").unwrap();
    let sql =
        "CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('data', format => 'csv', \
               schema => 'id INT, v STRING, seq INT');\n\
               CREATE STREAMING TABLE t;\n\
               CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (id) SEQUENCE BY seq;\n";
    let file = dir.join("pipeline.sql");
    std::fs::write(&file, sql).unwrap();
    file
}

/// The port of process `p` in the hostfile at `path`.
pub(crate) fn hosts_port(path: &str, p: usize) -> u16 {
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().nth(p).unwrap();
    line.rsplit_once(':').unwrap().1.parse().unwrap()
}

/// A hostfile of two free ports on loopback, in `dir`.
pub(crate) fn hostfile(dir: &Path) -> String {
    hosts_on(dir, &free_ports(2))
}

/// A hostfile of `ports` on loopback, in `dir`.
pub(crate) fn hosts_on(dir: &Path, ports: &[u16]) -> String {
    let path = dir.join("hosts.txt");
    let text: String = ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_process_that_cannot_read_its_share_fails_the_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = bad_second_commit(dir.path());
    let pipeline = pipeline.to_str().unwrap();
    let hosts = hostfile(dir.path());
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let process = |p: &str| member(pipeline, out, p, &hosts, &[]);
    let (first, second) = (process("0"), process("1"));
    let (zero, one) = (outcome(first, "process 0"), outcome(second, "process 1"));
    assert_eq!(one.status.code(), Some(2));
    assert_eq!(zero.status.code(), Some(2));
    let own = String::from_utf8_lossy(&one.stderr).into_owned();
    assert!(
        own.ends_with("batch_2.csv:3: flow `f`: SEQUENCE BY: the sequence value is NULL\n"),
        "{own}"
    );
    let peer = String::from_utf8_lossy(&zero.stderr).into_owned();
    assert!(peer.starts_with("error: process 1: "), "{peer}");
    assert!(!Path::new(out).exists(), "nothing is written");
}

#[test]
fn quarantine_across_processes_equals_one_process() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = bad_second_commit(dir.path());
    let pipeline = pipeline.to_str().unwrap();
    let hosts = hostfile(dir.path());
    let outs: Vec<String> = ["single", "p0", "p1"]
        .iter()
        .map(|d| dir.path().join(d).to_str().unwrap().to_string())
        .collect();
    let quarantine = ["--on-invalid", "quarantine"];
    let mut single = vec!["run", pipeline, "--out", &outs[0]];
    single.extend(quarantine);
    finish(scdflow(&single).spawn().unwrap(), "the single run");
    let process = |p: &str, o: &str| member(pipeline, o, p, &hosts, &quarantine);
    let (first, second) = (process("0", &outs[1]), process("1", &outs[2]));
    finish(first, "process 0");
    finish(second, "process 1");
    let (one, two) = (Path::new(&outs[0]), Path::new(&outs[1]));
    for file in ["t.csv", "_quarantine/f.jsonl"] {
        assert_eq!(read(one, file), read(two, file), "{file}");
    }
    assert_eq!(
        without_timestamps("metrics.json", &read(one, "metrics.json")),
        without_timestamps("metrics.json", &read(two, "metrics.json"))
    );
    assert!(read(one, "_quarantine/f.jsonl").contains("\"line\":3"));
}

/// The lines of a CSV file after its header.
fn body(text: &str) -> Vec<String> {
    text.lines().skip(1).map(str::to_string).collect()
}

#[test]
fn partitioned_outputs_are_the_single_run_split_by_key() {
    // A generated workload of 50 keys, so that both processes' workers own some.
    let generated = tempfile::tempdir().unwrap();
    let args = [
        "generate",
        "--events",
        "2000",
        "--keys",
        "50",
        "--commits",
        "4",
        "--out",
    ];
    let out = scdflow(&args).arg(generated.path()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let examples = [
        dataflows().join("t3_scd2.sql"),
        dataflows().join("customers_multi_file.sql"),
        dataflows().join("t8_bitemporal.sql"),
        generated.path().join("scd2.sql"),
    ];
    for pipeline in &examples {
        let example = pipeline.file_name().unwrap().to_string_lossy();
        let is_generated = pipeline.starts_with(generated.path());
        let pipeline = pipeline.to_str().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let hostfile = dir.path().join("hosts.txt");
        let hosts: String = free_ports(2)
            .iter()
            .map(|p| format!("127.0.0.1:{p}\n"))
            .collect();
        std::fs::write(&hostfile, hosts).unwrap();
        let hostfile = hostfile.to_str().unwrap();
        let (single, parts) = (dir.path().join("single"), dir.path().join("parts"));
        let mut run = scdflow(&["run", pipeline, "--out", single.to_str().unwrap()]);
        finish(run.spawn().unwrap(), "the single-worker run");
        let parts_dir = parts.to_str().unwrap();
        let extra = ["--partitioned-output", "-w", "2"];
        let process = |p: &str| member(pipeline, parts_dir, p, hostfile, &extra);
        let (first, second) = (process("0"), process("1"));
        finish(first, "process 0");
        finish(second, "process 1");
        let mut compared = 0;
        for entry in std::fs::read_dir(&single).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let Some(stem) = name.strip_suffix(".csv") else {
                continue;
            };
            let whole = read(&single, &name);
            let part = |p: usize| read(&parts, &format!("{stem}.part-{p}.csv"));
            let (p0, p1) = (part(0), part(1));
            // Same header; each part is sorted like the whole; together they are the whole.
            assert_eq!(whole.lines().next(), p0.lines().next(), "{example}: {name}");
            assert_eq!(whole.lines().next(), p1.lines().next(), "{example}: {name}");
            let strip = |text: &str| without_timestamps(&name, text);
            let mut union: Vec<String> = body(&strip(&p0));
            union.extend(body(&strip(&p1)));
            union.sort();
            let mut expected = body(&strip(&whole));
            expected.sort();
            assert_eq!(union, expected, "{example}: {name}");
            if !name.contains(".changes.") {
                for text in [&p0, &p1] {
                    let lines = body(text);
                    // The whole's rows that are in the part, in the whole's order.
                    let ordered: Vec<String> = body(&whole)
                        .into_iter()
                        .filter(|l| lines.contains(l))
                        .collect();
                    assert_eq!(lines, ordered, "{example}: {name}: a part's rows");
                }
                if is_generated {
                    let split = !body(&p0).is_empty() && !body(&p1).is_empty();
                    assert!(
                        split,
                        "{example}: {name} is not split between the processes"
                    );
                }
            }
            compared += 1;
        }
        assert!(compared >= 2, "{example}: {compared} files compared");
        // Metrics cover the whole run and come from process 0 only.
        assert_eq!(
            without_timestamps("metrics.json", &read(&single, "metrics.json")),
            without_timestamps("metrics.json", &read(&parts, "metrics.json")),
            "{example}: metrics"
        );
    }
}

/// One file of 400 rows (with a multi-line quoted field in every tenth) as the only commit; with
/// `bad_row`, that row's sequence is NULL. Returns the pipeline and the bad row's line.
fn one_large_file(dir: &Path, bad_row: Option<usize>) -> (PathBuf, usize) {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let mut text = String::from("id,v,seq\n");
    let mut bad_line = 0;
    for i in 0..400 {
        let seq = if Some(i) == bad_row {
            bad_line = text.lines().count() + 1;
            String::new()
        } else {
            (i / 50).to_string()
        };
        let v = if i % 10 == 0 {
            format!("\"two\nlines {i}\"")
        } else {
            format!("v{i}")
        };
        text.push_str(&format!("{},{v},{seq}\n", i % 60));
    }
    std::fs::write(data.join("all.csv"), text).unwrap();
    let sql = "CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('data', \
               format => 'csv', schema => 'id INT, v STRING, seq INT');\n\
               CREATE STREAMING TABLE t;\n\
               CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (id) SEQUENCE BY seq \
               STORED AS SCD TYPE 2;\n";
    let file = dir.join("pipeline.sql");
    std::fs::write(&file, sql).unwrap();
    (file, bad_line)
}

#[test]
fn a_large_file_is_split_among_the_processes() {
    let dir = tempfile::tempdir().unwrap();
    // The bad row (set aside) is in process 1's share; its metrics merge with process 0's.
    let (pipeline, _) = one_large_file(dir.path(), Some(350));
    let pipeline = pipeline.to_str().unwrap();
    let hosts = hostfile(dir.path());
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    let quarantine = ["--on-invalid", "quarantine"];
    let mut single = scdflow(&["run", pipeline, "--out", one.to_str().unwrap()]);
    single.args(quarantine);
    finish(single.spawn().unwrap(), "the single-process run");
    let extra = [
        quarantine.as_slice(),
        &["-w", "2", "--split-files-over", "1"],
    ]
    .concat();
    let process = |p: &str, out: &Path| member(pipeline, out.to_str().unwrap(), p, &hosts, &extra);
    let (first, second) = (process("0", &two), process("1", &dir.path().join("unused")));
    finish(first, "process 0");
    finish(second, "process 1");
    assert_eq!(read(&one, "t.csv"), read(&two, "t.csv"));
    for name in ["t.changes.csv", "metrics.json", "_quarantine/f.jsonl"] {
        assert_eq!(
            without_timestamps(name, &read(&one, name)),
            without_timestamps(name, &read(&two, name)),
            "{name}"
        );
    }
    let metrics = read(&one, "metrics.json");
    assert!(metrics.contains("\"num_input_rows\": 400"), "{metrics}");
    assert!(metrics.contains("\"num_quarantined_rows\": 1"), "{metrics}");
}

#[test]
fn each_process_reports_the_invalid_rows_of_its_share() {
    let dir = tempfile::tempdir().unwrap();
    // Row 350 is in the second half of the file's bytes: process 1's share.
    let (pipeline, line) = one_large_file(dir.path(), Some(350));
    let pipeline = pipeline.to_str().unwrap();
    let hosts = hostfile(dir.path());
    let out = dir.path().join("out");
    let split = ["--split-files-over", "1"];
    let process = |p: &str| member(pipeline, out.to_str().unwrap(), p, &hosts, &split);
    let (first, second) = (process("0"), process("1"));
    let (zero, one) = (outcome(first, "process 0"), outcome(second, "process 1"));
    let own = String::from_utf8_lossy(&one.stderr).into_owned();
    assert_eq!(one.status.code(), Some(2), "{own}");
    assert!(
        own.ends_with(&format!(
            "all.csv:{line}: flow `f`: SEQUENCE BY: the sequence value is NULL\n"
        )),
        "{own}"
    );
    let peer = String::from_utf8_lossy(&zero.stderr).into_owned();
    assert_eq!(zero.status.code(), Some(2), "{peer}");
    assert!(peer.starts_with("error: process 1: "), "{peer}");
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn a_cluster_that_does_not_form_fails_after_the_connect_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let (pipeline, _) = one_large_file(dir.path(), None);
    let hosts = hostfile(dir.path());
    let out = dir.path().join("out");
    // Process 1 is never started.
    let (pipeline, out_dir) = (pipeline.to_str().unwrap(), out.to_str().unwrap());
    let started = Instant::now();
    let alone = member(pipeline, out_dir, "0", &hosts, &["--connect-timeout", "1"]);
    let done = outcome(alone, "process 0 alone");
    assert_eq!(done.status.code(), Some(2));
    let err = String::from_utf8_lossy(&done.stderr).into_owned();
    assert!(
        err.contains("error: the cluster did not form within 1 s: process 1 at 127.0.0.1:"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(!out.exists(), "nothing is written");
}

/// `/proc/net/tcp`'s state of a listening socket.
pub(crate) const LISTEN: &str = "0A";
/// `/proc/net/tcp`'s state of a connected socket.
pub(crate) const ESTABLISHED: &str = "01";

/// Whether process `pid` holds a socket on local port `port` in TCP state `state` (Linux
/// `/proc/net/tcp`): one whose inode is among the process's descriptors. The port alone says
/// nothing of `pid`: a free port goes to whoever asks the kernel next, such as another test.
pub(crate) fn holds_socket(pid: u32, port: u16, state: &str) -> bool {
    let port = format!(":{port:04X}");
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|text| {
            text.lines()
                .skip(1)
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    let found =
                        fields.len() > 9 && fields[3] == state && fields[1].ends_with(&port);
                    found.then(|| format!("socket:[{}]", fields[9]))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
        .any(|link| {
            inodes
                .iter()
                .any(|inode| link.as_os_str() == inode.as_str())
        })
}

/// Generates into `work` a workload whose cluster run lasts long enough to be interrupted:
/// 1M events over 50,000 keys in 8 commits.
pub(crate) fn long_workload(work: &Path) {
    let args = [
        "generate",
        "--events",
        "1000000",
        "--keys",
        "50000",
        "--commits",
        "8",
    ];
    let out = scdflow(&args).arg("--out").arg(work).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A process killed once the cluster has formed, in the middle of the run, makes the other
/// exit 2 with one line saying so, without a panic backtrace, writing nothing.
#[test]
fn a_process_killed_mid_run_fails_the_other_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    long_workload(work);
    let hosts = hostfile(work);
    let pipeline = work.join("scd2.sql");
    let (out0, out1) = (work.join("o0"), work.join("o1"));
    let pipeline = pipeline.to_str().unwrap();
    let timeout = ["--connect-timeout", "10"];
    let process =
        |p: &str, out: &Path| member(pipeline, out.to_str().unwrap(), p, &hosts, &timeout);
    let first = process("0", &out0);
    let mut second = process("1", &out1);
    let port: u16 = hosts_port(&hosts, 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !holds_socket(first.id(), port, ESTABLISHED) {
        assert!(Instant::now() < deadline, "the cluster did not form");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        second.try_wait().unwrap().is_none(),
        "process 1 finished before it was killed"
    );
    second.kill().unwrap();
    second.wait().unwrap();
    let zero = outcome(first, "process 0");
    let err = String::from_utf8_lossy(&zero.stderr).into_owned();
    assert_eq!(zero.status.code(), Some(2), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(
        last.starts_with("error: lost the connection to another process"),
        "{err}"
    );
    assert!(
        !err.contains("stack backtrace") && !err.contains("MergeQueue"),
        "{err}"
    );
    assert!(!out0.exists(), "nothing is written");
}
