//! `a2a-chaos proxy`: the recording proxy in front of a user's replicas (see
//! [`crate::live::proxy`]). Exit 0 when it stopped as asked, 1 when its listener failed, 2
//! for unusable input (an existing `--out` without `--force` among them).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::InputError;
use crate::live::proxy::{self, Faults, ProxyOptions};

/// `proxy`'s arguments.
#[derive(clap::Args, Debug)]
pub struct ProxyArgs {
    /// Where clients connect (loopback by default; port 0 picks a free one, printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// The replicas, comma-separated: http://host:port[/path],... (replica-0, replica-1, ...).
    #[arg(long, value_delimiter = ',', required = true)]
    pub upstream: Vec<String>,
    /// Routing strategy (`a2a-chaos list` names them).
    #[arg(long, default_value = "round-robin")]
    pub routing: String,
    /// Seeds the strategy's choices and the fault schedule.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The history file to write (JSONL). An existing file is refused unless --force.
    #[arg(long, default_value = "history.jsonl")]
    pub out: PathBuf,
    /// Overwrite the --out history if there is one.
    #[arg(long)]
    pub force: bool,
    /// The Bearer token the final read sends (GetTask of every task seen); without it, each
    /// task is read with the Authorization header its client sent.
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Most client connections served at once (default: a quarter of the open-file limit,
    /// at most 4096); at the limit the oldest connection that has not sent its request head
    /// is shed first.
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// How long a client connection may take to send its request head (ms).
    #[arg(long, value_name = "MS", default_value_t = crate::net::HEADER_TIMEOUT_MS)]
    pub header_timeout_ms: u64,
    /// Where the ledger listens (POST /effect, /save, /read); port 0 picks a free one.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub ledger_listen: SocketAddr,
    /// Send every Nth client request twice (request k when (k + seed) % N == 0).
    #[arg(long, value_name = "N")]
    pub duplicate_every: Option<u64>,
    /// Drop the reply to every Nth client request, after the replica answered it.
    #[arg(long, value_name = "N")]
    pub drop_reply_every: Option<u64>,
    /// Hold requests this long before forwarding them.
    #[arg(long, default_value_t = 0)]
    pub delay_ms: u64,
    /// Delay only every Nth request (with --delay-ms).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub delay_every: u64,
    /// Stop after this long (ms).
    #[arg(long)]
    pub duration_ms: Option<u64>,
    /// Stop after this many client requests have been answered.
    #[arg(long)]
    pub max_requests: Option<u64>,
    /// Do not read the tasks back from the upstreams when stopping.
    #[arg(long)]
    pub no_final_read: bool,
    /// How long a replica may take to answer a forwarded request's head (ms).
    #[arg(long, default_value_t = 30_000)]
    pub forward_timeout_ms: u64,
    /// Ask every upstream for its agent card this often (ms) and route only to those that
    /// answer it (below 500, within the period).
    #[arg(long, value_name = "MS")]
    pub health_check_ms: Option<u64>,
    /// Send a request whose connection was refused, or that an upstream answered 502, to
    /// the next upstream (each attempt is recorded).
    #[arg(long)]
    pub retry_next: bool,
    /// Sticky sessions: set the cookie a2a-chaos-replica on every answer, and route a
    /// request carrying it to that upstream while it is in the rotation.
    #[arg(long)]
    pub sticky_cookie: bool,
    /// Relay the agent card as the upstream wrote it (by default its interface URLs are
    /// rewritten to this proxy, at the well-known paths and in a JSON-RPC
    /// GetExtendedAgentCard answer, so clients that follow the card come back through it).
    #[arg(long)]
    pub keep_card_urls: bool,
}

pub fn cmd_proxy(args: ProxyArgs) -> Result<i32, InputError> {
    for (flag, n) in [
        ("--duplicate-every", args.duplicate_every),
        ("--drop-reply-every", args.drop_reply_every),
        ("--delay-every", Some(args.delay_every)),
        ("--max-connections", args.max_connections.map(|n| n as u64)),
        ("--health-check-ms", args.health_check_ms),
    ] {
        if n == Some(0) {
            return Err(InputError::new(flag, "must be at least 1"));
        }
    }
    let stopped = proxy::run(ProxyOptions {
        listen: args.listen,
        ledger_listen: args.ledger_listen,
        upstreams: args.upstream,
        routing: args.routing,
        seed: args.seed,
        out: args.out,
        faults: Faults {
            duplicate_every: args.duplicate_every,
            drop_reply_every: args.drop_reply_every,
            delay_ms: args.delay_ms,
            delay_every: args.delay_every,
        },
        duration: args.duration_ms.map(Duration::from_millis),
        max_requests: args.max_requests,
        final_read: !args.no_final_read,
        forward_timeout: Duration::from_millis(args.forward_timeout_ms),
        token: args.token,
        force: args.force,
        limits: super::serve::server_limits(args.max_connections, args.header_timeout_ms),
        balancer: proxy::Balancer {
            health_every: args.health_check_ms.map(Duration::from_millis),
            retry_next: args.retry_next,
            sticky_cookie: args.sticky_cookie,
            rewrite_card: !args.keep_card_urls,
        },
    })?;
    Ok(match stopped {
        proxy::Stopped::Asked(_) => 0,
        proxy::Stopped::Failed(why) => {
            eprintln!("error: the proxy stopped: {why}");
            1
        }
    })
}
