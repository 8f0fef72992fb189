//! What an allow rule covers: the rule's words, and every other word explained by the
//! program's model (see [`super::model`]).

use super::model::{self, Explained};
use super::pattern::CommandPattern;

/// Whether an allow rule (`None`: the whole tool) covers one simple command, and if not, why.
///
/// - An exact rule (`Bash(npm run test)`) explains every word itself, as long as none is a glob.
/// - A prefix or wildcard rule (`Bash(git:*)`, `Bash(npm run *)`) and the bare tool rule need
///   the program's model to explain *every* word after the program name: a known subcommand,
///   a known option with its arity, an operand of a known kind. A program without a model
///   keeps the rule's plain word match, but no word of it may be a glob.
pub fn covers(
    pattern: Option<&CommandPattern>,
    words: &[String],
    globs: &[Option<String>],
) -> Result<(), String> {
    if let Some(pattern) = pattern
        && !pattern.matches(words)
    {
        return Err("the rule's words do not match".to_owned());
    }
    let globbed = globs.iter().find_map(Option::as_deref);
    if let Some(CommandPattern::Exact(_)) = pattern {
        return match globbed {
            Some(glob) => Err(format!(
                "the pattern `{glob}` is not one of the rule's words"
            )),
            None => Ok(()),
        };
    }
    match model::explain(words, globs) {
        Explained::Fully => Ok(()),
        Explained::Not(why) => Err(why),
        Explained::NoModel => match globbed {
            Some(glob) => Err(format!(
                "the pattern `{glob}` is an argument of a program without a model"
            )),
            None => Ok(()),
        },
    }
}
