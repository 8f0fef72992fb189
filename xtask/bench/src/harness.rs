//! Measuring, tabulating and reporting. A result is always a ratio against a baseline that was
//! measured in the same run, on the same machine, under the same load.

use std::time::{Duration, Instant};

pub(crate) use crate::report::{Row, table, write_report};

/// The median time per iteration of `f`, over `samples` samples of `iters` iterations each,
/// after one warm-up sample.
pub(crate) fn per_iter(samples: usize, iters: u32, mut f: impl FnMut(u32)) -> Duration {
    f(iters);
    let mut times: Vec<Duration> = (0..samples)
        .map(|_| {
            let start = Instant::now();
            f(iters);
            start.elapsed() / iters
        })
        .collect();
    times.sort();
    times[times.len() / 2]
}
