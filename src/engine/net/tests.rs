//! The network's behaviours, each as a kernel would show it.

use super::*;
use crate::engine::{run, Core};
use std::cell::Cell;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A host `server` that answers every connection on port 1 with what it read, and the
/// run's clock in ms as each test reads it.
fn echo_server(core: &Rc<Core>) {
    core.net
        .set_latency(Duration::from_millis(1), Duration::from_millis(4));
    core.host(
        "server",
        Rc::new(|| {
            Box::pin(async {
                let listener = Listener::bind(1)?;
                loop {
                    let mut stream = listener.accept().await?;
                    crate::engine::spawn(async move {
                        let mut buf = [0u8; 64];
                        while let Ok(n) = stream.read(&mut buf).await {
                            if n == 0 || stream.write_all(&buf[..n]).await.is_err() {
                                break;
                            }
                        }
                    });
                }
            })
        }),
    );
}

fn ms() -> u64 {
    crate::engine::elapsed().unwrap().as_millis() as u64
}

/// Runs `client` as the host `client` of a fresh run with an echo server.
fn with_echo<F: std::future::Future<Output = ()> + 'static>(client: impl FnOnce(Rc<Core>) -> F) {
    run(3, |core| async move {
        echo_server(&core);
        core.task("client", client(core.clone())).await.unwrap();
    });
}

#[test]
fn a_held_link_delivers_what_it_caught_after_the_release() {
    with_echo(|core| async move {
        let mut s = Stream::connect("server", 1).await.unwrap();
        core.net.hold("client", "server");
        s.write_all(b"hi").await.unwrap();
        let c = core.clone();
        tokio::task::spawn_local(async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            c.net.release("client", "server");
        });
        let mut buf = [0u8; 2];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"hi");
        assert!((60_000..60_020).contains(&ms()), "{}", ms());
    });
}

#[test]
fn a_hold_past_the_kernels_patience_times_the_connection_out() {
    with_echo(|core| async move {
        let mut s = Stream::connect("server", 1).await.unwrap();
        core.net.hold("client", "server");
        s.write_all(b"hi").await.unwrap();
        let mut buf = [0u8; 2];
        let err = s.read_exact(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        let patience = DATA_PATIENCE.as_millis() as u64;
        assert!((patience..patience + 20).contains(&ms()), "{}", ms());
    });
}

#[test]
fn a_hold_that_begins_while_the_reader_waits_still_times_it_out() {
    with_echo(|core| async move {
        let mut s = Stream::connect("server", 1).await.unwrap();
        // The server cannot answer before the hold: it begins while "hi" travels.
        s.write_all(b"hi").await.unwrap();
        core.net.hold("client", "server");
        let mut buf = [0u8; 2];
        let err = s.read_exact(&mut buf).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(ms() < DATA_PATIENCE.as_millis() as u64 + 20, "{}", ms());
    });
}

#[test]
fn an_abandoned_connection_attempt_closes_the_servers_end() {
    run(4, |core| async move {
        core.net
            .set_latency(Duration::from_millis(1), Duration::from_millis(4));
        let ended = Rc::new(Cell::new(false));
        let e = ended.clone();
        core.host(
            "server",
            Rc::new(move || {
                let e = e.clone();
                Box::pin(async move {
                    let listener = Listener::bind(1)?;
                    let mut stream = listener.accept().await?;
                    let mut buf = [0u8; 1];
                    let n = stream.read(&mut buf).await?;
                    e.set(n == 0);
                    std::future::pending::<()>().await;
                    Ok(())
                })
            }),
        );
        let c = core.clone();
        core.task("client", async move {
            // The SYN goes out, then the link is held both ways: the attempt waits for the
            // held answer and is given up; the link comes back later.
            let attempt = Stream::connect("server", 1);
            let hold = async {
                tokio::task::yield_now().await;
                c.net.hold("client", "server");
                std::future::pending::<()>().await
            };
            let gave_up = tokio::time::timeout(Duration::from_millis(10), async {
                tokio::select! {
                    r = attempt => r.map(|_| ()),
                    () = hold => unreachable!(),
                }
            })
            .await;
            assert!(gave_up.is_err(), "the attempt waited for the held answer");
            c.net.release("client", "server");
            tokio::time::sleep(Duration::from_secs(1)).await;
        })
        .await
        .unwrap();
        assert!(ended.get(), "the server's end saw the connection close");
    });
}

#[test]
fn an_empty_write_is_not_the_end_of_the_stream() {
    with_echo(|_core| async move {
        let mut s = Stream::connect("server", 1).await.unwrap();
        s.write_all(b"").await.unwrap();
        s.write_all(b"x").await.unwrap();
        let mut buf = [0u8; 1];
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"x");
    });
}

#[test]
fn a_connection_attempt_across_a_partition_waits_for_the_repair_or_times_out() {
    with_echo(|core| async move {
        core.net.hold("client", "server");
        let c = core.clone();
        tokio::task::spawn_local(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            c.net.release("client", "server");
        });
        Stream::connect("server", 1).await.unwrap();
        // The attempt waited for the repair (see the module docs on backoff).
        assert!((5_000..5_010).contains(&ms()), "{}", ms());
        core.net.hold("client", "server");
        let began = ms();
        let err = Stream::connect("server", 1).await.err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(ms() - began, SYN_PATIENCE.as_millis() as u64);
    });
}

#[test]
fn a_one_way_cut_holds_one_direction_and_lets_the_other_flow() {
    with_echo(|core| async move {
        let mut s = Stream::connect("server", 1).await.unwrap();
        core.net.cut_oneway("server", "client");
        s.write_all(b"hi").await.unwrap();
        let mut buf = [0u8; 2];
        let waited = tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut buf)).await;
        assert!(waited.is_err(), "the echo is held by the cut");
        core.net.repair_oneway("server", "client");
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"hi", "the echo was made: the way there was open");
    });
}

#[test]
fn a_dead_host_refuses_connections_and_its_connections_end() {
    with_echo(|core| async move {
        let mut s = Stream::connect("server", 1).await.unwrap();
        core.crash("server");
        let mut buf = [0u8; 2];
        assert_eq!(s.read(&mut buf).await.unwrap(), 0, "the connection ended");
        let err = Stream::connect("server", 1).await.err().unwrap();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
        core.bounce("server");
        tokio::task::yield_now().await;
        let mut s = Stream::connect("server", 1).await.unwrap();
        s.write_all(b"ok").await.unwrap();
        s.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ok");
    });
}

#[test]
fn latencies_lie_on_turmoils_curve_and_segments_stay_in_order() {
    with_echo(|_core| async move {
        let mut s = Stream::connect("server", 1).await.unwrap();
        for i in 0..50u8 {
            s.write_all(&[i]).await.unwrap();
        }
        let mut got = [0u8; 50];
        s.read_exact(&mut got).await.unwrap();
        assert!(got.iter().enumerate().all(|(i, b)| *b as usize == i));
    });
    run(5, |core| async move {
        core.net
            .set_latency(Duration::from_millis(1), Duration::from_millis(4));
        let draws: Vec<u64> = (0..1000)
            .map(|_| core.net.latency("a", "b").as_millis() as u64)
            .collect();
        assert!(draws.iter().all(|d| (1..=4).contains(d)));
        let at_min = draws.iter().filter(|d| **d == 1).count();
        // P(3 * Exp(5) < 1) = 1 - e^(-5/3), about 81%.
        assert!((750..870).contains(&at_min), "{at_min}");
    });
}
