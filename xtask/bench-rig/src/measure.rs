//! Timing. Every row pairs a mux figure with rig's figure for the same workload, measured in
//! the same process and run; the table and the JSON report are `xtask/bench`'s (`report`).

use std::time::{Duration, Instant};

/// A subject to time: `f(n)` runs `n` iterations.
pub(crate) type Subject<'a> = Box<dyn FnMut(u32) -> Result<(), String> + 'a>;

/// The median time per iteration of each subject, over `samples` samples of `iters`
/// iterations each, after one warm-up sample each. Samples are interleaved (one of each
/// subject in turn), so a change of load on the machine falls on every subject alike.
pub(crate) fn medians_per_iter(
    samples: usize,
    iters: u32,
    subjects: &mut [Subject<'_>],
) -> Result<Vec<Duration>, String> {
    for subject in subjects.iter_mut() {
        subject(iters)?;
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(samples); subjects.len()];
    for _ in 0..samples {
        for (subject, times) in subjects.iter_mut().zip(&mut times) {
            let start = Instant::now();
            subject(iters)?;
            times.push(start.elapsed() / iters);
        }
    }
    times
        .into_iter()
        .map(|mut times| {
            times.sort();
            times
                .get(times.len() / 2)
                .copied()
                .ok_or_else(|| "no samples taken".to_owned())
        })
        .collect()
}
