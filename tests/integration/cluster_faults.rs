//! Clusters that must not run as they are: processes with different pipelines or options, an
//! address that accepts and never answers, a peer stopped mid-run, and a file that lands
//! between the starts of two processes (which must change nothing).

use super::cluster::{
    bad_second_commit, finish, free_ports, holds_socket, hosts_on, long_workload, member, outcome,
    read, scdflow, ESTABLISHED, LISTEN,
};
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

/// Waits (a minute at most) until process 0 (`first`) listens on its port, `ports[0]`: it
/// lists its input first.
fn wait_listening(first: &std::process::Child, ports: &[u16]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !holds_socket(first.id(), ports[0], LISTEN) {
        assert!(Instant::now() < deadline, "process 0 does not listen");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The last line of a failed process's stderr, after checking it failed with status 2 and
/// without a panic.
fn refusal(out: &std::process::Output, what: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{what}: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{what}: {err}"
    );
    err.lines().last().unwrap_or("").to_string()
}

#[test]
fn processes_that_differ_are_all_refused_naming_the_difference() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = bad_second_commit(dir.path());
    let sql = std::fs::read_to_string(&pipeline).unwrap();
    let other = dir.path().join("other.sql");
    std::fs::write(
        &other,
        sql.replace("SEQUENCE BY seq", "SEQUENCE BY seq STORED AS SCD TYPE 2"),
    )
    .unwrap();
    let (same, other) = (pipeline.to_str().unwrap(), other.to_str().unwrap());
    // (process 1's pipeline, process 0's options, process 1's options, the term named)
    let cases: [(&str, &[&str], &[&str], &str); 4] = [
        (
            same,
            &["-w", "1"],
            &["-w", "2"],
            "--workers = 2, where this process has 1",
        ),
        (
            same,
            &[],
            &["--partitioned-output"],
            "--partitioned-output = true",
        ),
        (
            same,
            &[],
            &["--split-files-over", "1"],
            "--split-files-over = 1,",
        ),
        (other, &[], &[], "the definition of target `t`"),
    ];
    for (second, zero_args, one_args, named) in cases {
        let hosts = hosts_on(dir.path(), &free_ports(2));
        let out = dir.path().join("out");
        let out = out.to_str().unwrap();
        let first = member(same, out, "0", &hosts, zero_args);
        let second = member(second, out, "1", &hosts, one_args);
        let (zero, one) = (outcome(first, "process 0"), outcome(second, "process 1"));
        for (p, done) in [(0, &zero), (1, &one)] {
            let last = refusal(done, &format!("{named}: process {p}"));
            let peer = format!("process {} at 127.0.0.1:", 1 - p);
            assert!(
                last.starts_with(&format!("error: {peer}")),
                "{named}: {last}"
            );
            assert!(
                last.ends_with(
                    "every process of a cluster must run the same scdflow with the same \
                     pipeline and options"
                ),
                "{last}"
            );
        }
        let zero_said = refusal(&zero, "process 0");
        assert!(zero_said.contains(named), "{named}: {zero_said}");
        assert!(!Path::new(out).exists(), "{named}: nothing is written");
    }
}

#[test]
fn the_same_pipeline_written_differently_is_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = bad_second_commit(dir.path());
    let sql = std::fs::read_to_string(&pipeline).unwrap();
    let reworded = dir.path().join("reworded.sql");
    let text = format!(
        "-- the same pipeline, laid out otherwise\n{}",
        sql.replace(' ', "  ")
    );
    std::fs::write(&reworded, text).unwrap();
    let hosts = hosts_on(dir.path(), &free_ports(2));
    let out = dir.path().join("out");
    let quarantine = ["--on-invalid", "quarantine"];
    let first = member(
        pipeline.to_str().unwrap(),
        out.to_str().unwrap(),
        "0",
        &hosts,
        &quarantine,
    );
    let second = member(
        reworded.to_str().unwrap(),
        "unused",
        "1",
        &hosts,
        &quarantine,
    );
    finish(first, "process 0");
    finish(second, "process 1");
    assert!(read(&out, "t.csv").starts_with("id,v,seq\n"));
}

#[test]
fn an_address_that_never_answers_is_named_after_the_peer_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = bad_second_commit(dir.path());
    // Process 0's address accepts connections and never says a word.
    let mute = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = mute.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let held: Vec<_> = mute.incoming().collect();
        drop(held);
    });
    let hosts = hosts_on(dir.path(), &[port, free_ports(1)[0]]);
    let started = Instant::now();
    let args = ["--peer-timeout", "1"];
    let alone = member(pipeline.to_str().unwrap(), "out", "1", &hosts, &args);
    let done = outcome(alone, "process 1");
    let last = refusal(&done, "process 1");
    assert_eq!(
        last,
        format!(
            "error: process 0 at 127.0.0.1:{port} accepted the connection but did not answer \
             scdflow's handshake within 1 s: is it an scdflow process of this cluster, and \
             running? (see --peer-timeout)"
        )
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_stray_silent_connection_holds_nothing_up() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = bad_second_commit(dir.path());
    let pipeline = pipeline.to_str().unwrap();
    let ports = free_ports(2);
    let hosts = hosts_on(dir.path(), &ports);
    let out = dir.path().join("out");
    let quarantine = ["--on-invalid", "quarantine", "--peer-timeout", "5"];
    let first = member(pipeline, out.to_str().unwrap(), "0", &hosts, &quarantine);
    wait_listening(&first, &ports);
    // A stranger connects first, and one that speaks nonsense.
    let _silent = std::net::TcpStream::connect(("127.0.0.1", ports[0])).unwrap();
    let mut noisy = std::net::TcpStream::connect(("127.0.0.1", ports[0])).unwrap();
    noisy.write_all(b"GET / HTTP/1.0\r\n\r\n").unwrap();
    let second = member(pipeline, "unused", "1", &hosts, &quarantine);
    finish(first, "process 0");
    finish(second, "process 1");
    assert!(read(&out, "t.csv").starts_with("id,v,seq\n"));
}

#[test]
fn a_file_that_lands_between_the_starts_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pipeline = bad_second_commit(dir.path());
    let data = dir.path().join("data");
    // Both commits valid; the file that lands later sorts first, shifting every later share.
    std::fs::write(data.join("batch_2.csv"), "id,v,seq\n1,c,2\n3,e,2\n").unwrap();
    let pipeline = pipeline.to_str().unwrap();
    let single = dir.path().join("single");
    let run = scdflow(&["run", pipeline, "--out", single.to_str().unwrap()]);
    finish({ run }.spawn().unwrap(), "the single run");
    let ports = free_ports(2);
    let hosts = hosts_on(dir.path(), &ports);
    let out = dir.path().join("out");
    let first = member(pipeline, out.to_str().unwrap(), "0", &hosts, &[]);
    wait_listening(&first, &ports);
    std::fs::write(data.join("batch_0.csv"), "id,v,seq\n1,z,9\n7,z,9\n").unwrap();
    let second = member(pipeline, "unused", "1", &hosts, &[]);
    finish(first, "process 0");
    finish(second, "process 1");
    assert_eq!(read(&single, "t.csv"), read(&out, "t.csv"));
    let metrics = read(&out, "metrics.json");
    assert!(!metrics.contains("batch_0"), "{metrics}");
}

#[test]
fn a_stopped_peer_fails_the_others_after_the_peer_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    long_workload(work);
    let ports = free_ports(2);
    let hosts = hosts_on(work, &ports);
    let pipeline = work.join("scd2.sql");
    let pipeline = pipeline.to_str().unwrap();
    let out0 = work.join("o0");
    let timeout = ["--peer-timeout", "2"];
    let first = member(pipeline, out0.to_str().unwrap(), "0", &hosts, &timeout);
    let mut second = member(pipeline, "unused", "1", &hosts, &timeout);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !holds_socket(first.id(), ports[0], ESTABLISHED) {
        assert!(Instant::now() < deadline, "the cluster did not form");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        second.try_wait().unwrap().is_none(),
        "process 1 finished too soon"
    );
    let pid = second.id() as libc::pid_t;
    // SAFETY: `pid` is our own child, still running (checked above).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    let stopped = Instant::now();
    let zero = outcome(first, "process 0");
    let waited = stopped.elapsed();
    second.kill().unwrap();
    second.wait().unwrap();
    let last = refusal(&zero, "process 0");
    assert!(
        last.starts_with(&format!(
            "error: lost the connection to another process of the cluster: process 1 at \
             127.0.0.1:{} sent nothing for 2 s",
            ports[1]
        )),
        "{last}"
    );
    assert!(waited < Duration::from_secs(30), "{waited:?}");
    assert!(!out0.exists(), "nothing is written");
}
