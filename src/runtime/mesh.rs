//! The connections between a cluster's processes, made and checked before timely starts.
//!
//! Timely connects its processes itself, but trusts them: processes with different worker counts
//! panic in its network layer, different pipelines or options mix their results silently, an
//! address that accepts a connection and never speaks hangs it forever, and a peer that stops
//! (SIGSTOP, a hung host) stalls every other process for good. So the engine connects the
//! processes here and hands the connections to timely
//! (`initialize_networking_from_sockets`, which timely offers for exactly this):
//!
//! - Every pair of processes has two TCP connections, opened by the higher-numbered process to
//!   the lower one's address, as timely's own are: one carries timely's traffic, the other this
//!   module's heartbeats.
//! - Each connection begins with a hello both ways: [`MAGIC`], the connection's kind, the
//!   sender's process index and its terms — what every process must agree on (the version, the
//!   cluster's shape, and the caller's terms: pipeline and options). A process goes on only once
//!   it has exchanged hellos with every other and every term is equal; otherwise it fails, naming
//!   the peer and the first term that differs with both values. Every pair compares, so a cluster
//!   with any difference fails in every process — with two processes, both naming it; with more,
//!   a process whose peers left first may only see the cluster not form within the connect
//!   timeout.
//! - A process answers hellos from the start (its listener runs beside its own connects), so a
//!   peer that connects and says nothing for [`Timeouts::silence`], or an address that accepts
//!   and never answers, is not an scdflow process of this cluster (or is stopped).
//! - Once formed, every process sends a heartbeat byte every [`BEAT`] on its heartbeat
//!   connections, and a goodbye when it leaves. A peer not heard from for `silence`, or whose
//!   heartbeat connection closes without a goodbye, is lost: this process shuts its timely
//!   connection to the peer, so timely's threads stop the workers (as when a peer is killed),
//!   and [`Mesh::lost`] says which peer and why.
//!
//! Limits: every address must be reachable from every process; a stopped peer is noticed after
//! `silence` at the earliest; nothing here authenticates a peer (run clusters on trusted
//! networks, as timely's own transport assumes).

use super::Cluster;
use crate::{Error, ErrorKind, Result};
use std::io::{ErrorKind as IoKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The first bytes of every hello; the last is the handshake's version.
pub const MAGIC: &[u8; 8] = b"scdflow\x01";

/// How often a process sends a heartbeat.
pub const BEAT: Duration = Duration::from_millis(200);

/// The largest terms a hello may carry.
const MAX_TERMS_BYTES: u32 = 1 << 20;

const HEARTBEAT: u8 = b'.';
const GOODBYE: u8 = b'b';

/// How long a cluster waits for its processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// For every process to connect and answer (`None`: forever).
    pub connect: Option<Duration>,
    /// For a peer that says nothing — in the handshake, or during the run — before it is lost
    /// (`None`: forever). Heartbeats come every [`BEAT`].
    pub silence: Option<Duration>,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Some(Duration::from_secs(60)),
            silence: Some(Duration::from_secs(30)),
        }
    }
}

/// What a connection carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Timely = 0,
    Heartbeat = 1,
}

/// What each side says first on a connection.
#[derive(Clone, Debug)]
struct Hello {
    kind: Kind,
    process: usize,
    terms: Vec<(String, String)>,
}

impl Hello {
    fn write(&self, stream: &mut TcpStream) -> std::io::Result<()> {
        let terms = postcard::to_stdvec(&self.terms).map_err(std::io::Error::other)?;
        let mut bytes = Vec::with_capacity(17 + terms.len());
        bytes.extend_from_slice(MAGIC);
        bytes.push(self.kind as u8);
        bytes.extend_from_slice(&(self.process as u32).to_le_bytes());
        bytes.extend_from_slice(&(terms.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&terms);
        stream.write_all(&bytes)
    }

    /// The peer's hello, or why there is none: `Ok(Err(..))` when the peer spoke, but not
    /// scdflow's handshake.
    fn read(stream: &mut TcpStream) -> std::io::Result<std::result::Result<Hello, String>> {
        let mut head = [0u8; 17];
        stream.read_exact(&mut head)?;
        if &head[..8] != MAGIC {
            return Ok(Err("it answered, but not with scdflow's handshake".into()));
        }
        let kind = match head[8] {
            0 => Kind::Timely,
            1 => Kind::Heartbeat,
            other => return Ok(Err(format!("an unknown kind of connection ({other})"))),
        };
        let process = u32::from_le_bytes(head[9..13].try_into().expect("4 bytes")) as usize;
        let length = u32::from_le_bytes(head[13..17].try_into().expect("4 bytes"));
        if length > MAX_TERMS_BYTES {
            return Ok(Err(format!("a hello of {length} bytes")));
        }
        let mut terms = vec![0u8; length as usize];
        stream.read_exact(&mut terms)?;
        Ok(postcard::from_bytes(&terms)
            .map(|terms| Hello {
                kind,
                process,
                terms,
            })
            .map_err(|e| format!("a hello that does not decode ({e})")))
    }
}

/// The connections of a formed cluster; see the module docs.
pub(super) struct Mesh {
    process: usize,
    addresses: Vec<String>,
    silence: Option<Duration>,
    /// Per process: the timely connection (`None` for this process).
    timely: Vec<Option<TcpStream>>,
    /// Per process: the heartbeat connection (`None` for this process).
    heartbeats: Vec<Option<TcpStream>>,
    lost: Arc<Mutex<Option<String>>>,
    leaving: Arc<AtomicBool>,
}

impl Mesh {
    /// Connects this process to every other of `cluster` and checks that all agree on `terms`
    /// (see the module docs).
    pub(super) fn form(cluster: &Cluster, terms: Vec<(String, String)>) -> Result<Mesh> {
        let (me, n) = (cluster.process, cluster.addresses.len());
        if me >= n || n < 2 {
            return Err(peer_error(format!(
                "process {me} of a cluster of {n} addresses: a cluster needs at least two \
                 processes, and the process index must be one of them"
            )));
        }
        let timeouts = cluster.timeouts;
        let deadline = timeouts.connect.map(|d| Instant::now() + d);
        let hello = |kind| Hello {
            kind,
            process: me,
            terms: terms.clone(),
        };
        // Bound before connecting to anyone, so that a peer's connect never waits on this
        // process's own progress.
        let accepting = match me + 1 < n {
            true => {
                let address = &cluster.addresses[me];
                let listener = TcpListener::bind(address).map_err(|e| {
                    peer_error(format!("cannot listen on {address} (process {me}): {e}"))
                })?;
                let ours = [hello(Kind::Timely), hello(Kind::Heartbeat)];
                let cluster = cluster.clone();
                Some(thread::spawn(move || {
                    accept(listener, &cluster, deadline, ours)
                }))
            }
            false => None,
        };
        let mut timely: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
        let mut heartbeats: Vec<Option<TcpStream>> = (0..n).map(|_| None).collect();
        let mut connected = Vec::new();
        for p in 0..me {
            for kind in [Kind::Timely, Kind::Heartbeat] {
                let (stream, theirs) =
                    connect(cluster, p, deadline, timeouts.silence, hello(kind))?;
                agree(cluster, &terms, &theirs)?;
                connected.push((stream, theirs));
            }
        }
        if let Some(accepting) = accepting {
            let accepted = accepting
                .join()
                .map_err(|_| peer_error("the cluster's listener stopped"))?;
            connected.extend(accepted?);
        }
        for (stream, theirs) in connected {
            match theirs.kind {
                Kind::Timely => timely[theirs.process] = Some(stream),
                Kind::Heartbeat => heartbeats[theirs.process] = Some(stream),
            }
        }
        for stream in timely.iter().flatten() {
            stream
                .set_read_timeout(None)
                .and_then(|()| stream.set_nodelay(true))
                .map_err(|e| peer_error(format!("cannot set up a connection: {e}")))?;
        }
        Ok(Mesh {
            process: me,
            addresses: cluster.addresses.clone(),
            silence: timeouts.silence,
            timely,
            heartbeats,
            lost: Arc::new(Mutex::new(None)),
            leaving: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Timely's connections, one per process in process order (`None` for this one). The mesh
    /// keeps its own handles to them, to shut one whose peer is lost.
    pub(super) fn timely_connections(&self) -> Result<Vec<Option<TcpStream>>> {
        self.timely
            .iter()
            .map(|s| s.as_ref().map(TcpStream::try_clone).transpose())
            .collect::<std::io::Result<_>>()
            .map_err(|e| peer_error(format!("cannot share a connection with timely: {e}")))
    }

    /// Starts sending heartbeats and watching the peers'.
    pub(super) fn watch(&self) -> Result<()> {
        let clone = |s: &TcpStream| {
            s.try_clone()
                .map_err(|e| peer_error(format!("cannot watch a connection: {e}")))
        };
        let mut beats = Vec::new();
        for (p, heartbeat) in self.heartbeats.iter().enumerate() {
            let (Some(heartbeat), Some(timely)) = (heartbeat, &self.timely[p]) else {
                continue;
            };
            beats.push(clone(heartbeat)?);
            let watcher = Watcher {
                peer: format!("process {p} at {}", self.addresses[p]),
                heartbeat: clone(heartbeat)?,
                timely: clone(timely)?,
                silence: self.silence,
                lost: Arc::clone(&self.lost),
                leaving: Arc::clone(&self.leaving),
            };
            thread::Builder::new()
                .name(format!("scdflow:watch-{p}"))
                .spawn(move || watcher.run())
                .map_err(|e| peer_error(format!("cannot start a watcher: {e}")))?;
        }
        let leaving = Arc::clone(&self.leaving);
        thread::Builder::new()
            .name("scdflow:heartbeat".into())
            .spawn(move || {
                while !leaving.load(Ordering::SeqCst) {
                    for mut stream in &beats {
                        // A peer that is gone is its watcher's to report.
                        let _ = stream.write_all(&[HEARTBEAT]);
                    }
                    thread::sleep(BEAT);
                }
            })
            .map_err(|e| peer_error(format!("cannot start the heartbeat: {e}")))?;
        Ok(())
    }

    /// Which peer was lost and why, once one was.
    pub(super) fn lost(&self) -> Option<String> {
        self.lost.lock().map_or(None, |l| l.clone())
    }

    /// This process's index.
    pub(super) fn process(&self) -> usize {
        self.process
    }

    /// Says goodbye to every peer: they stop watching this process, which may now exit.
    pub(super) fn leave(&self) {
        if self.leaving.swap(true, Ordering::SeqCst) {
            return;
        }
        for mut stream in self.heartbeats.iter().flatten() {
            let _ = stream.write_all(&[GOODBYE]);
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

impl Drop for Mesh {
    fn drop(&mut self) {
        self.leave();
    }
}

/// Watches one peer's heartbeats.
struct Watcher {
    peer: String,
    heartbeat: TcpStream,
    timely: TcpStream,
    silence: Option<Duration>,
    lost: Arc<Mutex<Option<String>>>,
    leaving: Arc<AtomicBool>,
}

impl Watcher {
    fn run(mut self) {
        if self.heartbeat.set_read_timeout(self.silence).is_err() {
            return self.lose("its heartbeat cannot be watched".into());
        }
        let mut bytes = [0u8; 64];
        loop {
            match self.heartbeat.read(&mut bytes) {
                Ok(0) => {
                    return self.lose("closed its connection (it exited or was killed)".into())
                }
                Ok(n) if bytes[..n].contains(&GOODBYE) => return,
                Ok(_) => {}
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {
                    let seconds = self.silence.unwrap_or_default().as_secs_f64();
                    return self.lose(format!(
                        "sent nothing for {seconds} s (stopped, hung or unreachable; see \
                         --peer-timeout)"
                    ));
                }
                Err(e) => return self.lose(format!("failed: {e}")),
            }
        }
    }

    /// Records why the peer is lost and shuts timely's connection to it, which stops this
    /// process's workers. Nothing is lost when this process is leaving itself.
    fn lose(self, why: String) {
        if self.leaving.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(mut lost) = self.lost.lock() {
            lost.get_or_insert_with(|| format!("{} {why}", self.peer));
        }
        let _ = self.timely.shutdown(Shutdown::Both);
    }
}

/// Connects to process `p` (retrying until `deadline`) and exchanges hellos.
fn connect(
    cluster: &Cluster,
    p: usize,
    deadline: Option<Instant>,
    silence: Option<Duration>,
    hello: Hello,
) -> Result<(TcpStream, Hello)> {
    let address = &cluster.addresses[p];
    let peer = format!("process {p} at {address}");
    loop {
        let last = match address.to_socket_addrs() {
            Ok(addrs) => {
                let mut last = format!("{address} resolves to no address");
                for addr in addrs {
                    match TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
                        Ok(stream) => return exchange(stream, &peer, p, silence, hello),
                        Err(e) => last = e.to_string(),
                    }
                }
                last
            }
            Err(e) => e.to_string(),
        };
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(formed_not(
                cluster,
                format!("{peer} is not reachable ({last})"),
            ));
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `hello` on a fresh connection to process `p` and reads its answer.
fn exchange(
    mut stream: TcpStream,
    peer: &str,
    p: usize,
    silence: Option<Duration>,
    hello: Hello,
) -> Result<(TcpStream, Hello)> {
    let said = |e: std::io::Error| handshake_error(peer, silence, &e);
    stream.set_read_timeout(silence).map_err(said)?;
    hello.write(&mut stream).map_err(said)?;
    let theirs = Hello::read(&mut stream)
        .map_err(said)?
        .map_err(|why| peer_error(format!("{peer}: {why}: is the hostfile right?")))?;
    if theirs.process != p || theirs.kind != hello.kind {
        return Err(peer_error(format!(
            "{peer} answered as process {}: each process needs its own --process index, in \
             hostfile order",
            theirs.process
        )));
    }
    Ok((stream, theirs))
}

/// Accepts the connections of the processes after this one (two each), answers their hellos
/// with `ours` (timely's, then the heartbeat's) and checks their terms; connections that do not
/// speak scdflow's handshake are dropped.
fn accept(
    listener: TcpListener,
    cluster: &Cluster,
    deadline: Option<Instant>,
    ours: [Hello; 2],
) -> Result<Vec<(TcpStream, Hello)>> {
    let range = cluster.process + 1..cluster.addresses.len();
    let expected = 2 * range.len();
    let silence = cluster.timeouts.silence;
    listener
        .set_nonblocking(true)
        .map_err(|e| peer_error(format!("cannot listen: {e}")))?;
    let (said, hellos) = mpsc::channel();
    let mut accepted: Vec<(TcpStream, Hello)> = Vec::with_capacity(expected);
    let mut ignored = Vec::new();
    while accepted.len() < expected {
        match listener.accept() {
            Ok((stream, from)) => {
                let said = said.clone();
                let ours = ours.clone();
                // Each hello is read on its own thread, so a connection that never speaks
                // holds up nothing else.
                thread::spawn(move || {
                    let _ = said.send((from, answer(stream, silence, &ours)));
                });
                continue;
            }
            Err(e) if e.kind() == IoKind::WouldBlock => {}
            Err(e) => return Err(peer_error(format!("cannot accept connections: {e}"))),
        }
        match hellos.recv_timeout(Duration::from_millis(20)) {
            Ok((_, Ok((stream, theirs)))) => {
                if !range.contains(&theirs.process) {
                    return Err(peer_error(format!(
                        "a process that says it is process {} connected to process {}: check \
                         --process and --processes",
                        theirs.process, cluster.process
                    )));
                }
                let twice = accepted
                    .iter()
                    .any(|(_, h)| h.process == theirs.process && h.kind == theirs.kind);
                if twice {
                    return Err(peer_error(format!(
                        "two processes say they are process {}: each process needs its own \
                         --process index",
                        theirs.process
                    )));
                }
                agree(cluster, &ours[0].terms, &theirs)?;
                accepted.push((stream, theirs));
            }
            Ok((from, Err(why))) => ignored.push(format!("{from} ({why})")),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            let missing: Vec<String> = range
                .clone()
                .filter(|p| accepted.iter().filter(|(_, h)| h.process == *p).count() < 2)
                .map(|p| format!("process {p} at {}", cluster.addresses[p]))
                .collect();
            let mut why = format!("{} did not connect", missing.join(", "));
            if !ignored.is_empty() {
                why += &format!(" (ignored connections from {})", ignored.join(", "));
            }
            return Err(formed_not(cluster, why));
        }
    }
    Ok(accepted)
}

/// Reads a connecting process's hello and answers it with ours of the same kind.
fn answer(
    mut stream: TcpStream,
    silence: Option<Duration>,
    ours: &[Hello; 2],
) -> std::result::Result<(TcpStream, Hello), String> {
    stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(silence))
        .map_err(|e| e.to_string())?;
    let theirs = match Hello::read(&mut stream) {
        Ok(Ok(hello)) => hello,
        Ok(Err(why)) => return Err(why),
        Err(e) if matches!(e.kind(), IoKind::WouldBlock | IoKind::TimedOut) => {
            return Err("it said nothing".into())
        }
        Err(e) => return Err(e.to_string()),
    };
    let reply = &ours[theirs.kind as usize];
    reply.write(&mut stream).map_err(|e| e.to_string())?;
    Ok((stream, theirs))
}

/// Fails unless a peer's terms are `ours`, naming the first that differs.
fn agree(cluster: &Cluster, ours: &[(String, String)], theirs: &Hello) -> Result<()> {
    match differ(ours, &theirs.terms) {
        None => Ok(()),
        Some(why) => Err(peer_error(format!(
            "process {} at {} {why}; every process of a cluster must run the same scdflow with \
             the same pipeline and options",
            theirs.process, cluster.addresses[theirs.process]
        ))),
    }
}

/// The first term that differs between `ours` and `theirs`, worded for an error.
fn differ(ours: &[(String, String)], theirs: &[(String, String)]) -> Option<String> {
    let mut pairs = ours.iter().zip(theirs);
    if let Some(((name, mine), (their_name, value))) = pairs.find(|(a, b)| a != b) {
        return Some(match name == their_name {
            true => format!("runs with {name} = {value}, where this process has {mine}"),
            false => format!(
                "agrees on different terms ({their_name}, where this process has {name}): \
                 another scdflow version?"
            ),
        });
    }
    match ours.len().cmp(&theirs.len()) {
        std::cmp::Ordering::Equal => None,
        _ => Some(format!(
            "agrees on {} terms, where this process has {}: another scdflow version?",
            theirs.len(),
            ours.len()
        )),
    }
}

fn handshake_error(peer: &str, silence: Option<Duration>, e: &std::io::Error) -> Error {
    match e.kind() {
        IoKind::WouldBlock | IoKind::TimedOut => peer_error(format!(
            "{peer} accepted the connection but did not answer scdflow's handshake within {} s: \
             is it an scdflow process of this cluster, and running? (see --peer-timeout)",
            silence.unwrap_or_default().as_secs_f64()
        )),
        IoKind::UnexpectedEof | IoKind::ConnectionReset => peer_error(format!(
            "{peer} closed the connection during scdflow's handshake: is it an scdflow process \
             of this cluster?"
        )),
        _ => peer_error(format!("{peer}: {e}")),
    }
}

fn formed_not(cluster: &Cluster, why: String) -> Error {
    let within = match cluster.timeouts.connect {
        Some(d) => format!(" within {} s", d.as_secs_f64()),
        None => String::new(),
    };
    peer_error(format!(
        "the cluster did not form{within}: {why}; start every process with the same hostfile, \
         or raise --connect-timeout"
    ))
}

fn peer_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Peer, message.into())
}
