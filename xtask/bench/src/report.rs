//! The rows every benchmark reports, as a table and as JSON: one figure against a baseline
//! measured in the same run. `xtask/bench-rig` includes this file too (by path: it is a
//! workspace of its own), so both reports have one shape.

use serde_json::json;

/// One result: a figure against its baseline's.
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
