//! `a2a-chaos live`: a scripted scenario against real replicas (see [`crate::live`]).
//!
//! Output and exit codes are those of `check`: 0 when the scenario's `[expect]` holds, 1
//! when it does not (or the live run could not finish), 2 for unusable input (including a
//! step that cannot be done on real processes, or a peer that is not installed).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::check_cmd::expectations_line;
use crate::error::InputError;
use crate::live::peer::shell_word;
use crate::live::{self, LiveOptions, PeerCommand};
use crate::model::{Placement, Profile};
use crate::output::report;
use crate::scenario::Script;
use crate::sim::{judge, ExpectOutcome};

use super::print_findings;

/// The peer flags `live` and `fidelity` share.
#[derive(clap::Args, Debug, Clone)]
pub struct PeerArgs {
    /// How to start a replica: a preset, `a2a-python` (tests/peers/a2a-python/), `mastra`
    /// (tests/peers/mastra/) or `a2a-js` (tests/peers/a2a-js/), or a command template with
    /// {index} {name} {port} {ledger} {db} {model} {sdk} {store} {venv} {mastra} {a2a-js}
    /// {dir} {root} {think-ms} (docs/PEERS.md; also in the replica's environment as
    /// A2A_CHAOS_INDEX, _REPLICA, _PORT, _LEDGER, _DB, _RUN_DIR, _THINK_MS). A scenario's
    /// think-ms reaches every preset as --think-ms (a range: its midpoint). Default: the
    /// preset the model's `[fidelity]` table names.
    #[arg(long)]
    pub peer: Option<String>,
    /// Your own task store for the a2a-python preset, as module:Class (an a2a-sdk TaskStore
    /// or VersionedTaskStore, constructed as Class(db_url)), in place of the model's store.
    #[arg(long, value_name = "MODULE:CLASS")]
    pub store: Option<String>,
    /// A directory to import --store's module from (repeatable).
    #[arg(long, value_name = "DIR", requires = "store")]
    pub pythonpath: Vec<PathBuf>,
    /// Which reports the peer sends to the ledger: auto (the presets send both; your
    /// command, each kind that arrived at least once), none, or effects,saves. An invariant
    /// that needs a kind the peer does not send is unknown, never pass.
    #[arg(long, default_value = "auto", value_name = "KINDS")]
    pub reports: live::reports::Reports,
    /// Where the replicas keep their tasks, if not where the model says: memory (each
    /// process its own; the final tasks are read from every running replica) or shared.
    #[arg(long, value_name = "PLACEMENT", value_parser = ["memory", "shared"])]
    pub placement: Option<String>,
    /// The database the replicas share: `sqlite` (a fresh SQLite file per run), or a
    /// SQLAlchemy URL; default $A2A_CHAOS_LIVE_DB, else, with the a2a-python preset, a
    /// PostgreSQL server the command starts from target/peer-postgres/
    /// (tests/peers/postgres/setup.sh) and stops at its end, and a SQLite file with any
    /// other peer. With the preset, a PostgreSQL URL (e.g.
    /// postgresql+asyncpg://user:pass@localhost/a2a) names the server: each run creates a
    /// database of its own there (the role needs CREATEDB) and drops it at the end.
    #[arg(long)]
    pub db: Option<String>,
    /// Where runs keep peer logs and their SQLite file (default target/live-runs).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Let set-push steps run: their push configs name this run's webhook on 127.0.0.1
    /// (the scenario's `webhook` or `hooks.example` host, same path), a loopback address
    /// the models refuse as private, and the a2a-python preset starts with push on
    /// (server.py --push). Without it a scenario with set-push is refused (exit 2).
    #[arg(long)]
    pub allow_loopback_push: bool,
}

impl PeerArgs {
    /// The `a2a-chaos live` command that runs `file` again with these flags, shell-quoted.
    pub fn reproduce(&self, file: &str) -> String {
        self.reproduce_with(&[file])
    }

    /// The `a2a-chaos live` command with `target` (a file, or `--hazard NAME ...`) and these
    /// flags, each word shell-quoted.
    pub fn reproduce_with(&self, target: &[&str]) -> String {
        let mut words = vec!["a2a-chaos".to_string(), "live".into()];
        words.extend(target.iter().map(|w| shell_word(w)));
        let mut flag = |name: &str, value: &str| {
            words.push(format!("--{name}"));
            words.push(shell_word(value));
        };
        if let Some(p) = &self.peer {
            flag("peer", p);
        }
        if let Some(s) = &self.store {
            flag("store", s);
        }
        for dir in &self.pythonpath {
            flag("pythonpath", &dir.display().to_string());
        }
        if let Some(db) = &self.db {
            flag("db", db);
        }
        if let Some(p) = &self.placement {
            flag("placement", p);
        }
        if let Some(kinds) = self.reports.declared() {
            flag("reports", &kinds);
        }
        if self.allow_loopback_push {
            words.push("--allow-loopback-push".into());
        }
        words.join(" ")
    }

    /// The live options these flags ask for.
    pub fn options(&self) -> Result<LiveOptions, InputError> {
        let user_store = match &self.store {
            None => None,
            Some(class) => {
                let pythonpath = self
                    .pythonpath
                    .iter()
                    .map(|dir| {
                        std::fs::canonicalize(dir)
                            .map(|d| d.display().to_string())
                            .map_err(|e| {
                                InputError::new("--pythonpath", format!("{}: {e}", dir.display()))
                            })
                    })
                    .collect::<Result<_, _>>()?;
                Some(live::peer::UserStore::parse(class, pythonpath)?)
            }
        };
        let placement = self.placement.as_deref().map(|p| match p {
            "memory" => Placement::Memory,
            _ => Placement::Shared,
        });
        Ok(LiveOptions {
            peer: self.peer.clone().map(PeerCommand),
            db: self.db.clone().or_else(|| {
                std::env::var("A2A_CHAOS_LIVE_DB")
                    .ok()
                    .filter(|s| !s.is_empty())
            }),
            work_dir: self
                .work_dir
                .clone()
                .unwrap_or_else(|| live::peer::root().join("target/live-runs")),
            ready_timeout: Duration::from_secs(60),
            user_store,
            reports: self.reports,
            placement,
            allow_loopback_push: self.allow_loopback_push,
            // Set per scenario, from its think-ms (live::run_scenario).
            think_ms: None,
            // Set per scenario (live::run_scenario) or per suite (fidelity).
            own_store: false,
        })
    }
}

/// Checks that `profile` can run on the chosen peer: a preset needs the model's
/// `[fidelity]` table and the peer installed (its virtual environment, or its Node).
pub fn check_peer(
    profile: &Profile,
    options: &LiveOptions,
    origin: &str,
) -> Result<(), InputError> {
    let peer = options.peer_for(profile);
    if options.user_store.is_some() && !peer.is_a2a_python() {
        return Err(InputError::new(
            origin,
            format!(
                "--store runs your task store in the a2a-python preset, but the peer is `{}`; with your own server, start it with your store in --peer's command",
                peer.0
            ),
        ));
    }
    if peer.is_a2a_js() {
        let node = live::peer::a2a_js_base().join("bin/node");
        if !node.exists() {
            return Err(InputError::new(
                origin,
                format!(
                    "the a2a-js peer is not installed ({} is missing); run tests/peers/a2a-js/setup.sh",
                    node.display()
                ),
            ));
        }
        return Ok(());
    }
    if peer.is_mastra() {
        let node = live::peer::mastra_base().join("bin/node");
        if !node.exists() {
            return Err(InputError::new(
                origin,
                format!(
                    "the mastra peer is not installed ({} is missing); run tests/peers/mastra/setup.sh",
                    node.display()
                ),
            ));
        }
        return Ok(());
    }
    if !peer.is_a2a_python() {
        return Ok(());
    }
    let Some(f) = &profile.fidelity else {
        return Err(InputError::new(
            origin,
            format!(
                "model `{}` has no [fidelity] table, so the a2a-python peer does not know which SDK and store to run; pass --peer with a command",
                profile.name
            ),
        ));
    };
    let python = live::peer::venv_base().join(format!("v{}/bin/python", f.sdk));
    if !python.exists() {
        return Err(InputError::new(
            origin,
            format!(
                "the a2a-python peer for SDK {} is not installed ({} is missing); run tests/peers/a2a-python/setup.sh",
                f.sdk,
                python.display()
            ),
        ));
    }
    if options.db.is_none() && live::postgres::bin_dir().is_none() {
        return Err(InputError::new(
            origin,
            format!(
                "the a2a-python preset runs on PostgreSQL by default, and no server is installed under {}; run tests/peers/postgres/setup.sh (or tests/peers/a2a-python/setup.sh, which runs it), or pass --db sqlite",
                live::postgres::install_dir().display()
            ),
        ));
    }
    Ok(())
}

pub fn cmd_live(path: &Path, peer: &PeerArgs, json: bool, trace: bool) -> Result<i32, InputError> {
    let file = path.display().to_string();
    let script = Script::load(path)?;
    let profile = Profile::load(&script.file.model)?;
    let reproduce = peer.reproduce(&file);
    run_live(&file, script, profile, None, peer, &reproduce, json, trace)
}

/// `live --hazard NAME [--model M]`: the hazard's scenario with M's expectations, or none
/// (`cli/hazard.rs`).
pub fn cmd_live_hazard(
    name: &str,
    model: Option<&str>,
    peer: &PeerArgs,
    json: bool,
    trace: bool,
) -> Result<i32, InputError> {
    let chosen = super::hazard::choose(&live::peer::root(), name, model)?;
    let file = chosen.file.display().to_string();
    let mut target = vec!["--hazard", name];
    if let Some(m) = model {
        target.extend(["--model", m]);
    }
    let reproduce = peer.reproduce_with(&target);
    let held = Some(chosen.expectations.as_str());
    run_live(
        &file,
        chosen.script,
        chosen.profile,
        held,
        peer,
        &reproduce,
        json,
        trace,
    )
}

/// Runs `script` live as `profile`, prints its findings against the script's `[expect]`
/// (`held`: whose expectations those are, when not the file's own), and answers the exit code.
#[allow(clippy::too_many_arguments)]
fn run_live(
    file: &str,
    script: Script,
    profile: Profile,
    held: Option<&str>,
    peer: &PeerArgs,
    reproduce: &str,
    json: bool,
    trace: bool,
) -> Result<i32, InputError> {
    let options = peer.options()?;
    live::validate(&script, file, options.allow_loopback_push)?;
    check_peer(&profile, &options, file)?;
    let peer_name = options.peer_for(&profile).0;
    let (summary, record) = live::run_scenario(&script, profile, &options)?;
    if trace {
        for event in &record.trace {
            println!("{event}");
        }
    }
    let ExpectOutcome {
        expected,
        got,
        met,
        problems,
    } = judge(&script.file.expect, &summary, Some(&record));
    if !json {
        println!(
            "{} live ({} on {} real replicas, peer {}, {})",
            script.file.name,
            script.file.model,
            script.file.replicas,
            peer_name,
            script.file.routing
        );
        if let Some(held) = held {
            println!("held to {held} (script from {file})");
        }
        print_findings(&summary);
        println!(
            "expected violations: [{}]; got: [{}]",
            expected.join(", "),
            got.join(", ")
        );
        for p in &problems {
            println!("not met: {p}");
        }
        if !met || !summary.violated().is_empty() {
            println!("reproduce: {reproduce}");
        }
        println!("{}", expectations_line(met));
    } else {
        let reproduce = reproduce.to_string();
        let value = report::check_json(file, &[summary], met, move |_: &crate::sim::RunSummary| {
            reproduce.clone()
        });
        println!("{value}");
    }
    Ok(if met { 0 } else { 1 })
}
