//! Evaluates the examples' coding agent offline: the dataset in `examples/evals/` (22 cases:
//! exploring, reading, searching, editing with and without approval, walls, sessions) runs
//! on the scripted model, each attempt in a fresh copy of a small project; the table goes to
//! stdout, the JSON and HTML reports to files, and with `--baseline` a comparison with an
//! earlier JSON report.
//!
//! ```text
//! cargo run --example evals [-- --out DIR] [--baseline DIR/report.json] [--repeats N] [--concurrency N]
//! ```
//!
//! It fails (exit code 1) when a case fails or, with a baseline, when a case regressed.

use std::path::PathBuf;
use std::process::ExitCode;

use mux::eval::{Comparison, Report, html};
use mux_examples::evals::{Workspaces, dataset, runner};

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code_as("evals", run().await)
}

struct Options {
    out: PathBuf,
    baseline: Option<PathBuf>,
    repeats: u32,
    concurrency: usize,
}

fn options() -> Result<Options, String> {
    let mut options = Options {
        out: std::env::temp_dir().join("mux-evals"),
        baseline: None,
        repeats: 1,
        concurrency: 4,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--out" => options.out = PathBuf::from(value()?),
            "--baseline" => options.baseline = Some(PathBuf::from(value()?)),
            "--repeats" => {
                options.repeats = value()?.parse().map_err(|e| format!("--repeats: {e}"))?
            }
            "--concurrency" => {
                options.concurrency = value()?
                    .parse()
                    .map_err(|e| format!("--concurrency: {e}"))?;
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(options)
}

async fn run() -> Result<(), String> {
    let options = options()?;
    let dataset = dataset()?;
    let workspaces = Workspaces::new()?;
    let report = runner(workspaces.dir())
        .repeats(options.repeats)
        .concurrency(options.concurrency)
        .run(&dataset)
        .await
        .map_err(|e| e.to_string())?;
    print!("{}", mux::eval::table::render(&report));

    std::fs::create_dir_all(&options.out)
        .map_err(|e| format!("creating {}: {e}", options.out.display()))?;
    let json = options.out.join("report.json");
    let page = options.out.join("report.html");
    report.save_json(&json).map_err(|e| e.to_string())?;
    html::save(&report, &page).map_err(|e| e.to_string())?;
    println!("reports: {} and {}", json.display(), page.display());

    let mut regressed = false;
    if let Some(baseline) = &options.baseline {
        let baseline = Report::load_json(baseline).map_err(|e| e.to_string())?;
        let comparison = Comparison::of(&baseline, &report, 0.01);
        print!("{}", comparison.render());
        regressed = comparison.has_regressions();
    }
    let totals = report.totals();
    if totals.failed > 0 {
        return Err(format!(
            "{} of {} cases failed",
            totals.failed, totals.cases
        ));
    }
    if regressed {
        return Err("cases regressed against the baseline".into());
    }
    Ok(())
}
