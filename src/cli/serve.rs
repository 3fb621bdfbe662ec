//! `a2a-chaos serve`: one of the simulator's replicas on a real socket.
//!
//! The replica runs a model's behaviour exactly as in a simulation (same code, same
//! profile), with real time and real TCP: any A2A 1.0 client can talk to it. Its store
//! (when the model's store is shared), ledger and webhook run in the same process on
//! loopback ports of their own. Pushes go to the real URLs that push configs name (never to
//! a private address; to loopback only with `--allow-loopback-push`). It serves until
//! interrupted (Ctrl-C or SIGTERM).
//!
//! Real clients are nobody's script, so `serve` is bounded where a simulation need not be,
//! in this layer or behind options the simulation leaves off: the connection limit and
//! timeouts of [`crate::net::ServerLimits`] (`--max-connections`, `--header-timeout-ms`), a
//! task store of at most `--max-tasks` tasks weighing at most `--max-store-mib` (every
//! [`SWEEP_EVERY`], the tasks at rest saved least recently are evicted, with what the
//! replica keeps for them), event logs of [`EVENTS_PER_TASK`] versions, a ledger that keeps
//! its last `--max-tasks` arrivals, and at most `--max-parts` parts per message (`-32602`).

use std::cell::RefCell;
use std::io::Write as _;
use std::net::SocketAddr;
use std::rc::Rc;

use crate::error::InputError;
use crate::ground::ledger::{self, LedgerState};
use crate::ground::push::{PushWorld, RealEgress};
use crate::ground::webhook::{self, WebhookMode, WebhookState};
use crate::model::{Placement, Profile};
use crate::net::{self, RealNet};
use crate::replica::{self, Replica, Timing, Wiring};
use crate::store::{self, StoreState, TaskStore};
use crate::trace::Trace;

/// `serve`'s arguments.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The model the replica behaves as (a built-in name or a profile file).
    #[arg(long, default_value = "reference")]
    pub model: String,
    /// The address to listen on; port 0 picks a free one (printed on the first line).
    #[arg(long, default_value = "127.0.0.1:9000")]
    pub listen: SocketAddr,
    /// Seeds the agent's think and compose times and its ids.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Lets pushes go to loopback URLs (`http://127.0.0.1:PORT/...`, a test's receiver).
    /// Without it, as with every other private address, they are refused.
    #[arg(long)]
    pub allow_loopback_push: bool,
    /// Serves the A2A 0.3 wire beside 1.0 as a2a-sdk's server option
    /// `enable_v0_3_compat=True` does (`[wire] v03 = "sdk-compat"`), for a model that does
    /// not serve it already (Mastra serves 0.3 natively).
    #[arg(long)]
    pub enable_v0_3_compat: bool,
    /// Most connections served at once (default: a quarter of the open-file limit, at most
    /// 4096). At the limit it stops accepting, and first sheds the oldest connection that
    /// has not sent its request head.
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// How long a connection may take to send its request head (ms).
    #[arg(long, value_name = "MS", default_value_t = crate::net::HEADER_TIMEOUT_MS)]
    pub header_timeout_ms: u64,
    /// Most tasks kept; beyond it the tasks at rest (terminal or waiting for input) saved
    /// least recently are evicted (a later GetTask of one is TaskNotFound).
    #[arg(long, value_name = "N", default_value_t = TASKS_MAX_DEFAULT)]
    pub max_tasks: usize,
    /// Most parts one message may carry; more is refused with -32602.
    #[arg(long, value_name = "N", default_value_t = PARTS_MAX_DEFAULT)]
    pub max_parts: usize,
    /// Most MiB the tasks may weigh (each weighed as its JSON size times the copies kept of
    /// it); beyond it the same eviction as --max-tasks.
    #[arg(long, value_name = "MIB", default_value_t = STORE_MIB_DEFAULT)]
    pub max_store_mib: usize,
    /// Check no Bearer token, whatever the model says (every caller is anonymous; the card
    /// declares no security scheme): for a client or a tool that sends none.
    #[arg(long)]
    pub no_auth: bool,
}

/// `--max-store-mib` by default.
pub const STORE_MIB_DEFAULT: usize = 64;

/// `--max-tasks` by default.
pub const TASKS_MAX_DEFAULT: usize = 2_000;

/// `--max-parts` by default.
pub const PARTS_MAX_DEFAULT: usize = 1_000;

/// Versions of one task kept in the event logs a subscription replays.
pub const EVENTS_PER_TASK: usize = 64;

/// How often the store is brought back within its bounds.
pub const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

pub fn cmd_serve(args: ServeArgs) -> Result<i32, InputError> {
    for (flag, n) in [
        ("--max-connections", args.max_connections.unwrap_or(1)),
        ("--max-tasks", args.max_tasks),
        ("--max-parts", args.max_parts),
        ("--max-store-mib", args.max_store_mib),
    ] {
        if n == 0 {
            return Err(InputError::new(flag, "must be at least 1"));
        }
    }
    let mut profile = Profile::load(&args.model)?;
    if args.enable_v0_3_compat && profile.wire().v03() == crate::model::V03Wire::Off {
        let mut wire = profile.wire();
        wire.v03 = Some(crate::model::V03Wire::SdkCompat);
        profile.wire = Some(wire);
    }
    if args.no_auth {
        profile.auth.bearer = crate::model::BearerRule::Off;
        profile.auth.card_bearer = false;
    }
    let profile = Rc::new(profile);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| InputError::new("serve", format!("cannot start a runtime: {e}")))?;
    let net = RealNet::new();
    net.set_limits(server_limits(args.max_connections, args.header_timeout_ms));
    let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
    let bind = |host: &str, port: u16, addr: SocketAddr| {
        net.bind(host, port, addr)
            .map_err(|e| InputError::new("--listen", format!("cannot bind {host} on {addr}: {e}")))
    };
    let listen = bind("replica-0", replica::PORT, args.listen)?;
    bind("store", store::PORT, loopback)?;
    let ledger_addr = bind("ledger", ledger::PORT, loopback)?;
    bind("webhook", webhook::PORT, loopback)?;
    net::install_real(net.clone());

    let trace = Trace::new(false);
    let store_state = Rc::new(RefCell::new(StoreState::default()));
    let ledger_state = Rc::new(RefCell::new(LedgerState::default()));
    let timing = Timing::default();
    let memory = replica::memory_store();
    let task_store = match profile.store.placement {
        Placement::Memory => TaskStore::Local(memory.clone()),
        Placement::Shared => TaskStore::remote(&profile.store, timing.store_timeout),
    };
    // Fault points exist only in simulations: every one stays off here.
    let chaos = crate::buggify::Chaos::shared(args.seed);
    let replica = Rc::new(Replica::new(
        0,
        0,
        args.seed.into(),
        Wiring {
            profile: profile.clone(),
            timing,
            store: task_store,
            // Pushes go to the real URLs that configs name (ground::push::RealEgress).
            push_world: Rc::new(RefCell::new(PushWorld {
                real: Some(RealEgress {
                    allow_loopback: args.allow_loopback_push,
                }),
                ..PushWorld::default()
            })),
            trace: trace.clone(),
            chaos: chaos.clone(),
            card: None,
            grants: Default::default(),
            drain: crate::replica::DrainSignal::new(),
        },
    ));
    replica.limit_parts(args.max_parts);
    let bounds = store::StoreBounds {
        tasks_max: args.max_tasks,
        events_per_task: EVENTS_PER_TASK,
        bytes_max: args.max_store_mib.saturating_mul(1 << 20),
    };
    // A reader that hangs up after the first line must not take the server down with it.
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "serving replica-0 (model {}) on http://{listen}/ (A2A 1.0{} JSON-RPC; card at http://{listen}/.well-known/agent-card.json); ledger on http://{ledger_addr}/",
        profile.name,
        match profile.wire().v03() {
            crate::model::V03Wire::Off => "",
            _ => " and 0.3",
        }
    );
    if profile.auth.bearer == crate::model::BearerRule::Required {
        let _ = writeln!(
            out,
            "the model checks Bearer tokens: send `Authorization: Bearer {}` (principal {})",
            crate::auth::bearer_for(crate::auth::DEFAULT_PRINCIPAL),
            crate::auth::DEFAULT_PRINCIPAL
        );
    }
    for line in next_commands(&profile, listen) {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();

    let local = tokio::task::LocalSet::new();
    let outcome: Result<(), String> = local.block_on(&runtime, async move {
        let (s, t) = (store_state.clone(), trace.clone());
        tokio::task::spawn_local(async move { store::serve(s, t, chaos).await });
        let (l, t) = (ledger_state.clone(), trace.clone());
        tokio::task::spawn_local(async move { ledger::serve(l, t).await });
        // The store (the replica's own memory, or the shared store host) within its bounds.
        {
            let (r, stores) = (replica.clone(), [memory, store_state.clone()]);
            let ledger = ledger_state.clone();
            tokio::task::spawn_local(async move {
                loop {
                    tokio::time::sleep(SWEEP_EVERY).await;
                    let now = crate::trace::now_ms();
                    let mut evicted = Vec::new();
                    for s in &stores {
                        evicted.extend(s.borrow_mut().evict(&bounds, now));
                    }
                    r.forget(&evicted, EVENTS_PER_TASK);
                    ledger.borrow_mut().trim(bounds.tasks_max);
                }
            });
        }
        let t = trace.clone();
        let w = Rc::new(RefCell::new(WebhookState::default()));
        tokio::task::spawn_local(async move { webhook::serve(w, WebhookMode::Ok, t).await });
        let served =
            tokio::task::spawn_local(
                async move { replica.serve().await.map_err(|e| e.to_string()) },
            );
        let stop = async {
            #[cfg(unix)]
            {
                use tokio::signal::unix::{signal, SignalKind};
                match signal(SignalKind::terminate()) {
                    Ok(mut term) => tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        _ = term.recv() => {}
                    },
                    Err(_) => {
                        let _ = tokio::signal::ctrl_c().await;
                    }
                }
            }
            #[cfg(not(unix))]
            {
                let _ = tokio::signal::ctrl_c().await;
            }
        };
        tokio::select! {
            done = served => match done {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e),
                Err(e) => Err(e.to_string()),
            },
            _ = stop => {
                let effects = ledger_state.borrow().arrivals();
                let _ = writeln!(std::io::stdout(), "stopped; {effects} business effects reached the ledger");
                Ok(())
            }
        }
    });
    net::uninstall_real();
    match outcome {
        Ok(()) => Ok(0),
        Err(e) => {
            eprintln!("error: the replica stopped: {e}");
            Ok(1)
        }
    }
}

/// The bounds of `serve`'s and `proxy`'s servers from their flags.
pub(super) fn server_limits(
    connections: Option<usize>,
    header_timeout_ms: u64,
) -> net::ServerLimits {
    let mut limits = net::ServerLimits::default();
    if let Some(n) = connections {
        limits.connections_max = n;
    }
    limits.header_timeout = std::time::Duration::from_millis(header_timeout_ms.max(1));
    limits
}

/// What to try next, printed under the banner: one message with curl (with the token when
/// the model checks one, and how to drop it), and the same server behind the recording
/// proxy.
fn next_commands(profile: &crate::model::Profile, listen: SocketAddr) -> Vec<String> {
    let message = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","contextId":"ctx","role":"ROLE_USER","parts":[{"text":"hi"}]}}}"#;
    let bearer = profile.auth.bearer == crate::model::BearerRule::Required;
    let token = if bearer {
        format!(
            " -H 'Authorization: Bearer {}'",
            crate::auth::bearer_for(crate::auth::DEFAULT_PRINCIPAL)
        )
    } else {
        String::new()
    };
    let mut out = vec![format!(
        "try: curl -s http://{listen}/ -H 'A2A-Version: 1.0' -H 'Content-Type: application/json'{token} -d '{message}'"
    )];
    if bearer {
        out.push("     (or restart with --no-auth to check no token)".to_string());
    }
    out.push(format!(
        "then: a2a-chaos proxy --upstream http://{listen} --out history.jsonl, send through it, and a2a-chaos check-history history.jsonl"
    ));
    out
}
