//! The PostgreSQL server a replay runs on: one given by URL, or a
//! throwaway one (`--postgres-temp`) started with the installed binaries
//! (`initdb`, `pg_ctl`) in a private directory, reachable only through a
//! Unix socket there, and stopped and removed when dropped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::Duration;

use postgres::{Client, Config, NoTls};

use crate::model::error::{Diag, Result};

/// A server to open connections to.
pub struct Server {
    config: Config,
    /// What to show the user (the URL, or "a temporary server in DIR").
    pub display: String,
    /// `PostgreSQL 15.8`, as `SHOW server_version` says.
    pub version: String,
    /// Set for a throwaway server: stopping it and removing its directory
    /// happens when this is dropped.
    _temp: Option<TempServer>,
}

impl Server {
    /// The server at `url` (`postgresql://…` or `host=… dbname=…`); fails
    /// with a clear error when the URL is malformed or nothing answers.
    pub fn connect_url(url: &str) -> Result<Server> {
        let mut config = Config::from_str(url).map_err(|e| {
            Diag::new(format!("cannot parse the PostgreSQL URL `{url}`: {}", chain(&e)))
                .help("write it as postgresql://USER@HOST:PORT/DBNAME or as `host=… port=… user=… dbname=…`")
        })?;
        config.connect_timeout(Duration::from_secs(10));
        let mut s = Server {
            config,
            display: url.to_string(),
            version: String::new(),
            _temp: None,
        };
        s.version = s.probe()?;
        Ok(s)
    }

    /// A throwaway server (see the module comment).
    pub fn temporary() -> Result<Server> {
        let temp = TempServer::start()?;
        let mut config = Config::new();
        config
            .host_path(&temp.dir)
            .port(PORT)
            .user("postgres")
            .dbname("postgres")
            .connect_timeout(Duration::from_secs(10));
        let mut s = Server {
            config,
            display: format!("a temporary PostgreSQL server in {}", temp.dir.display()),
            version: String::new(),
            _temp: Some(temp),
        };
        s.version = s.probe()?;
        Ok(s)
    }

    /// A connection string for this server that `--postgres` accepts
    /// (for a throwaway server: its socket directory).
    pub fn conninfo(&self) -> String {
        let mut parts = vec![];
        for h in self.config.get_hosts() {
            match h {
                postgres::config::Host::Tcp(t) => parts.push(format!("host={t}")),
                postgres::config::Host::Unix(p) => parts.push(format!("host={}", p.display())),
            }
        }
        if let Some(p) = self.config.get_ports().first() {
            parts.push(format!("port={p}"));
        }
        if let Some(u) = self.config.get_user() {
            parts.push(format!("user={u}"));
        }
        if let Some(d) = self.config.get_dbname() {
            parts.push(format!("dbname={d}"));
        }
        parts.join(" ")
    }

    /// A new connection.
    pub fn connect(&self) -> Result<Client> {
        self.config.connect(NoTls).map_err(|e| {
            Diag::new(format!("cannot connect to PostgreSQL ({}): {}", self.display, chain(&e)))
                .help("check that the server is running and accepts this user and database (or use --postgres-temp for a throwaway local server)")
        })
    }

    fn probe(&self) -> Result<String> {
        let mut c = self.connect()?;
        let v = c
            .query_one("SELECT current_setting('server_version')", &[])
            .and_then(|r| r.try_get::<_, String>(0))
            .map_err(|e| Diag::new(format!("cannot query the server version: {e}")))?;
        Ok(format!(
            "PostgreSQL {}",
            v.split_whitespace().next().unwrap_or(&v)
        ))
    }
}

/// An error with its causes (`error connecting to server: Connection
/// refused`): the crate's own message alone does not say why.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s
}

/// The socket file's number. With `listen_addresses=''` the server opens
/// no TCP port: the number only names the socket in our private
/// directory, so it cannot collide with another server.
const PORT: u16 = 5432;

/// A server in a temporary directory: data in `dir/db`, socket in `dir`.
struct TempServer {
    dir: PathBuf,
    bindir: PathBuf,
    /// The server refuses to run as root: then every command runs as the
    /// `postgres` user through `runuser`.
    as_postgres: bool,
    /// The watchdog ([`watchdog`]) and the write end of its pipe.
    watchdog: Option<(std::process::Child, std::process::ChildStdin)>,
}

/// A shell that stops the server and removes its directory once isolint
/// is gone, however it goes: it waits for EOF on a pipe only isolint
/// holds, which the kernel closes when isolint exits — normally, on
/// Ctrl-C (SIGINT), SIGTERM, SIGKILL or a panic. It ignores the terminal's
/// SIGINT/SIGTERM/SIGHUP itself (they go to the whole process group), and
/// so do the commands it runs. Removing the directory is retried: the
/// stopping server may still unlink its socket files meanwhile. No signal handler in isolint: nothing
/// unsafe, and an abort is covered too.
const WATCHDOG: &str = r#"trap '' INT TERM HUP
read -r _
if [ -f "$2/postmaster.pid" ]; then
  if [ "$4" = 1 ]; then runuser -u postgres -- "$1" -D "$2" -m immediate -w stop
  else "$1" -D "$2" -m immediate -w stop; fi
fi
for _ in 1 2 3 4 5; do rm -rf "$3"; [ -e "$3" ] || break; sleep 1; done"#;

fn watchdog(
    pg_ctl: &Path,
    data: &Path,
    dir: &Path,
    as_postgres: bool,
) -> Option<(std::process::Child, std::process::ChildStdin)> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(WATCHDOG)
        .arg("isolint-watchdog")
        .arg(pg_ctl)
        .arg(data)
        .arg(dir)
        .arg(if as_postgres { "1" } else { "0" })
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let stdin = child.stdin.take()?;
    Some((child, stdin))
}

impl TempServer {
    fn start() -> Result<TempServer> {
        let bindir = find_bindir().ok_or_else(|| {
            Diag::new("--postgres-temp: no PostgreSQL server binaries (initdb, pg_ctl) found")
                .help("install the server (e.g. `apt-get install postgresql`); isolint looks in `pg_config --bindir` and /usr/lib/postgresql/*/bin; or give a running server with --postgres URL")
        })?;
        let as_postgres = is_root();
        // Unique per process and call (tests start several at once).
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("isolint-pg-{}-{n}-{stamp}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| {
            Diag::new(format!(
                "--postgres-temp: cannot create {}: {e}",
                dir.display()
            ))
        })?;
        // From here on, Drop cleans up whatever got started, and the
        // watchdog does when isolint is stopped before Drop runs.
        let watchdog = watchdog(&bindir.join("pg_ctl"), &dir.join("db"), &dir, as_postgres);
        let t = TempServer {
            dir,
            bindir,
            as_postgres,
            watchdog,
        };
        if as_postgres {
            t.run(
                "chown",
                Path::new("chown"),
                &["-R", "postgres:", &t.path_str(&t.dir)],
                false,
            )?;
        }
        let data = t.path_str(&t.dir.join("db"));
        let initdb = t.bindir.join("initdb");
        t.run(
            "initdb",
            &initdb,
            &[
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
                "-D",
                &data,
            ],
            as_postgres,
        )?;
        let opts = format!(
            "-p {PORT} -k {} -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c deadlock_timeout=100ms",
            t.path_str(&t.dir)
        );
        let log = t.path_str(&t.dir.join("server.log"));
        let pg_ctl = t.bindir.join("pg_ctl");
        t.run(
            "pg_ctl start",
            &pg_ctl,
            &[
                "-D", &data, "-o", &opts, "-l", &log, "-w", "-t", "60", "start",
            ],
            as_postgres,
        )?;
        Ok(t)
    }

    fn path_str(&self, p: &Path) -> String {
        p.display().to_string()
    }

    /// Runs `program args` (as `postgres` when `as_postgres`). Output goes
    /// to files, never to pipes: `pg_ctl start` leaves the server running
    /// with whatever it inherited, and a pipe would never reach EOF.
    fn run(&self, what: &str, program: &Path, args: &[&str], as_postgres: bool) -> Result<()> {
        let out_path = self.dir.join(format!("{}.out", what.replace(' ', "_")));
        let out = std::fs::File::create(&out_path).ok();
        let mut cmd = if as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        cmd.args(args).stdin(Stdio::null());
        match out
            .as_ref()
            .and_then(|f| Some((f.try_clone().ok()?, f.try_clone().ok()?)))
        {
            Some((o, e)) => cmd.stdout(o).stderr(e),
            None => cmd.stdout(Stdio::null()).stderr(Stdio::null()),
        };
        let status = cmd.status().map_err(|e| {
            Diag::new(format!(
                "--postgres-temp: cannot run {}: {e}",
                program.display()
            ))
        })?;
        if status.success() {
            return Ok(());
        }
        let mut said = std::fs::read_to_string(&out_path).unwrap_or_default();
        if let Ok(log) = std::fs::read_to_string(self.dir.join("server.log")) {
            said.push_str(&log);
        }
        let tail: Vec<&str> = said.lines().rev().take(8).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Err(Diag::new(format!(
            "--postgres-temp: {what} failed ({status}):\n{}",
            tail.join("\n")
        ))
        .help("the throwaway server needs the PostgreSQL server binaries and, when isolint runs as root, a `postgres` user; or give a running server with --postgres URL"))
    }
}

impl Drop for TempServer {
    fn drop(&mut self) {
        let data = self.path_str(&self.dir.join("db"));
        if self.dir.join("db").join("postmaster.pid").exists() {
            let pg_ctl = self.bindir.join("pg_ctl");
            let _ = self.run(
                "pg_ctl stop",
                &pg_ctl,
                &["-D", &data, "-m", "immediate", "-w", "stop"],
                self.as_postgres,
            );
        }
        // The stopping server may still remove its socket files while the
        // directory goes (once, under load, an empty directory was left).
        for _ in 0..5 {
            let _ = std::fs::remove_dir_all(&self.dir);
            if !self.dir.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        // EOF for the watchdog: it finds nothing left to do.
        if let Some((mut child, stdin)) = self.watchdog.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// The directory with `initdb` and `pg_ctl`: `pg_config --bindir`, else
/// the newest `/usr/lib/postgresql/N/bin` (Debian keeps them off PATH).
fn find_bindir() -> Option<PathBuf> {
    let has = |d: &Path| d.join("initdb").is_file() && d.join("pg_ctl").is_file();
    if let Ok(out) = Command::new("pg_config")
        .arg("--bindir")
        .stderr(Stdio::null())
        .output()
    {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has(&d) {
            return Some(d);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| has(d))
        .collect();
    versions.sort();
    versions.pop().map(|(_, d)| d)
}

/// Is this process root? (`id -u`: no libc binding needed for one call.)
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Whether `--postgres-temp` can work here (the binaries exist): tests
/// skip, with the reason, when it cannot.
pub fn temporary_available() -> bool {
    find_bindir().is_some()
}
