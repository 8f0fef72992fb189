//! Timing, the table and the JSON report. Every row pairs a mux figure with rig's figure for
//! the same workload, measured in the same process and run.

use std::time::{Duration, Instant};

use serde_json::json;

/// One result: mux's figure against rig's.
pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) value: f64,
    pub(crate) unit: &'static str,
    pub(crate) baseline: String,
    pub(crate) baseline_value: f64,
}

impl Row {
    /// `value / baseline_value`, NaN when the baseline is zero.
    pub(crate) fn ratio(&self) -> f64 {
        if self.baseline_value > 0.0 {
            self.value / self.baseline_value
        } else {
            f64::NAN
        }
    }
}

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

/// A plain-text table of the rows.
pub(crate) fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<56} {:>10} {:<6} {:<36} {:>10} {:>7}\n",
        "benchmark", "value", "unit", "baseline", "baseline", "ratio"
    );
    for row in rows {
        out.push_str(&format!(
            "{:<56} {:>10.1} {:<6} {:<36} {:>10.1} {:>7.2}\n",
            row.name,
            row.value,
            row.unit,
            row.baseline,
            row.baseline_value,
            row.ratio()
        ));
    }
    out
}

/// Writes the rows as a JSON list of
/// `{"name", "value", "unit", "baseline", "baseline_value", "ratio"}`.
pub(crate) fn write_report(path: &str, rows: &[Row]) -> std::io::Result<()> {
    let list: Vec<_> = rows
        .iter()
        .map(|row| {
            json!({
                "name": row.name,
                "value": row.value,
                "unit": row.unit,
                "baseline": row.baseline,
                "baseline_value": row.baseline_value,
                "ratio": row.ratio(),
            })
        })
        .collect();
    if let Some(dir) = std::path::Path::new(path).parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(&list).map_err(std::io::Error::other)?;
    std::fs::write(path, text + "\n")
}
