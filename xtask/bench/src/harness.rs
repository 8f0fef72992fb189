//! Measuring, tabulating and reporting. A result is always a ratio against a baseline that was
//! measured in the same run, on the same machine, under the same load.

use std::time::{Duration, Instant};

use serde_json::json;

/// One benchmark result.
pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) value: f64,
    pub(crate) unit: &'static str,
    pub(crate) baseline: String,
    pub(crate) baseline_value: f64,
}

impl Row {
    pub(crate) fn ratio(&self) -> f64 {
        if self.baseline_value > 0.0 {
            self.value / self.baseline_value
        } else {
            f64::NAN
        }
    }
}

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

/// A plain-text table of the rows.
pub(crate) fn table(rows: &[Row]) -> String {
    let mut out = format!(
        "{:<56} {:>10} {:<5} {:<32} {:>10} {:>7}\n",
        "benchmark", "value", "unit", "baseline", "baseline", "ratio"
    );
    for row in rows {
        out.push_str(&format!(
            "{:<56} {:>10.1} {:<5} {:<32} {:>10.1} {:>7.2}\n",
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
