//! The load client of the HTTP benchmarks (web, durable, A2A): `runs` round trips spread over
//! `concurrency` workers on one keep-alive client, timed one by one.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The two-worker multi-thread runtime the load client and this binary's servers run on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

/// Runs (round trips) per second and the p99 latency (ms) of one load.
pub(crate) struct Load {
    pub(crate) runs_per_s: f64,
    pub(crate) p99_ms: f64,
}

/// Makes `runs` JSON POSTs to `url`, `concurrency` at a time: each worker takes the next
/// number `n` and awaits `round_trip(post, n)`, which completes the POST (its content type is
/// set), sends it and checks the answer. The client keeps its connections alive (one a
/// worker) and sends with `TCP_NODELAY`.
pub(crate) async fn posts<F, R>(
    url: &str,
    runs: usize,
    concurrency: usize,
    round_trip: F,
) -> Result<Load, String>
where
    F: Fn(reqwest::RequestBuilder, usize) -> R + Clone + Send + 'static,
    R: Future<Output = Result<(), String>> + Send + 'static,
{
    let client = reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(concurrency)
        .build()
        .map_err(|e| e.to_string())?;
    let url = url.to_owned();
    spread(runs, concurrency, move |n| {
        let post = client.post(&url).header("content-type", "application/json");
        round_trip(post, n)
    })
    .await
}

/// Runs `job(n)` for `n` in `0..runs`, `concurrency` at a time (each worker takes the next
/// number), timing each; the runs per second and the p99 latency.
pub(crate) async fn spread<F, R>(runs: usize, concurrency: usize, job: F) -> Result<Load, String>
where
    F: Fn(usize) -> R + Clone + Send + 'static,
    R: Future<Output = Result<(), String>> + Send + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (next, job) = (Arc::clone(&next), job.clone());
        workers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= runs {
                    return Ok::<_, String>(latencies);
                }
                let t = Instant::now();
                job(n).await?;
                latencies.push(t.elapsed());
            }
        }));
    }
    let mut latencies = Vec::new();
    for worker in workers {
        latencies.extend(worker.await.map_err(|e| e.to_string())??);
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let p99 = latencies
        .get((latencies.len() * 99 / 100).min(latencies.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default();
    Ok(Load {
        runs_per_s: runs as f64 / elapsed.as_secs_f64(),
        p99_ms: p99.as_secs_f64() * 1000.0,
    })
}

/// Sends `request` and reads its answer's body as text; the error as text.
pub(crate) async fn text(request: reqwest::RequestBuilder) -> Result<String, String> {
    request
        .send()
        .await
        .map_err(|e| e.to_string())?
        .text()
        .await
        .map_err(|e| e.to_string())
}
