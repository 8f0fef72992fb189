//! Reading a command's arguments the way its option parser does, for the deny scan, from the
//! same [`Model`] the allow side explains with.

use super::model::Model;
use super::model::opt::{Effect, Opt};

/// What a command's arguments hold, read through its model.
#[derive(Debug, Default)]
pub(crate) struct Scan<'a> {
    /// Why the command is at most ask.
    pub(crate) hazards: Vec<String>,
    /// Values that are command lines or programs the command runs.
    pub(crate) runs: Vec<&'a str>,
    /// Scripts in the command's own language (sed).
    pub(crate) scripts: Vec<&'a str>,
    /// Files holding such scripts (`sed -f FILE`).
    pub(crate) script_files: Vec<&'a str>,
    /// The operands, in order.
    pub(crate) operands: Vec<&'a str>,
    /// Where parsing stopped, for models that stop at the first operand: the index in `args`
    /// of that operand.
    pub(crate) stopped_at: Option<usize>,
}

impl<'a> Scan<'a> {
    fn apply(&mut self, model: &Model, spelling: &str, opt: &Opt, value: Option<&'a str>) {
        if let Some(why) = opt.effect.danger() {
            self.hazards
                .push(format!("`{} {spelling}` {why}", model.name));
        }
        match (opt.effect, value) {
            (Effect::Remote, Some(value)) if is_remote(value) => self.hazards.push(format!(
                "`{} {spelling} {value}` reaches a remote host through a remote shell",
                model.name
            )),
            (Effect::Runs | Effect::RunsOptional, Some(value)) => self.runs.push(value),
            (Effect::Script, Some(value)) => self.scripts.push(value),
            (Effect::ScriptFile, Some(value)) => self.script_files.push(value),
            _ => {}
        }
    }

    fn unknown(&mut self, model: &Model, spelling: &str) {
        if model.strict {
            self.hazards.push(format!(
                "`{} {spelling}` is an option the checker cannot vouch for",
                model.name
            ));
        }
    }
}

/// Whether a file name has a `host:` part before any `/` (rsh syntax).
fn is_remote(name: &str) -> bool {
    name.split_once(':')
        .is_some_and(|(host, _)| !host.is_empty() && !host.contains('/'))
}

/// Reads `args` through `model`.
pub(crate) fn scan<'a>(model: &Model, args: &'a [String]) -> Scan<'a> {
    let mut out = Scan::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        i += 1;
        if arg == "--" {
            out.operands.extend(args[i..].iter().map(String::as_str));
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (long, None),
            };
            let candidates = model.long_candidates(name);
            match candidates.as_slice() {
                [] => out.unknown(model, arg),
                [opt] => {
                    let value = if attached.is_some() || !opt.effect.needs_value() {
                        attached
                    } else {
                        i += 1;
                        args.get(i - 1).map(String::as_str)
                    };
                    out.apply(model, arg, opt, value);
                }
                several => {
                    // The parser refuses an ambiguous abbreviation; if any reading would be
                    // dangerous, do not vouch for it.
                    if let Some(opt) = several.iter().find(|o| o.effect.danger().is_some()) {
                        out.apply(model, arg, opt, None);
                    }
                }
            }
            continue;
        }
        let cluster = if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.is_empty()) {
            cluster
        } else if model.bundled_first && i == 1 && !arg.is_empty() {
            arg
        } else {
            if model.stops_at_operand {
                out.stopped_at = Some(i - 1);
                return out;
            }
            out.operands.push(arg);
            continue;
        };
        for (at, letter) in cluster.char_indices() {
            let Some(opt) = model.all_options().find(|o| o.short == Some(letter)) else {
                out.unknown(model, &format!("-{letter}"));
                continue;
            };
            let rest = &cluster[at + letter.len_utf8()..];
            if opt.effect.needs_value() {
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).map(String::as_str)
                } else {
                    Some(rest)
                };
                out.apply(model, &format!("-{letter}"), opt, value);
                break;
            }
            if opt.effect.optional_value() {
                out.apply(
                    model,
                    &format!("-{letter}"),
                    opt,
                    Some(rest).filter(|r| !r.is_empty()),
                );
                break;
            }
            out.apply(model, &format!("-{letter}"), opt, None);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::model::reading;
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    fn hazards(model: &str, line: &str) -> usize {
        let mut words = model.split(' ');
        let name = words.next().unwrap_or_default();
        let Some(model) = reading(name, words.next()) else {
            return usize::MAX;
        };
        scan(&model, &args(line)).hazards.len()
    }

    #[test]
    fn abbreviations_clusters_and_equals_are_read_like_the_parser() {
        assert_eq!(hazards("sort", "--compress=x f"), 1);
        assert_eq!(hazards("sort", "-nox f"), 1);
        assert_eq!(hazards("sort", "-k2,2 -t, f"), 0);
        assert_eq!(hazards("tar", "-tf a.tar -vIcmd"), 1);
        assert_eq!(hazards("tar", "-tf a.tar"), 0);
        assert_eq!(hazards("tar", "-tf host:a.tar"), 1);
        assert_eq!(hazards("tar", "-tf ./a:b.tar"), 0);
        assert_eq!(hazards("git rebase", "-xid main"), 1);
        assert_eq!(hazards("git rebase", "--ex=id main"), 1);
        assert_eq!(hazards("git rebase", "--continue"), 0);
        assert_eq!(hazards("sort", "--frobnicate"), 1);
    }

    #[test]
    fn values_are_not_options() {
        let Some(model) = reading("sort", None) else {
            panic!("sort has a model")
        };
        let line = args("-t -o -k1 f");
        let scan = scan(&model, &line);
        assert!(scan.hazards.is_empty(), "{:?}", scan.hazards);
        assert_eq!(scan.operands, ["f"]);
    }
}
