//! Whether a deny or ask rule *could* match a command, read the way the command's parser
//! reads it: global options before the subcommand skipped (`git -C . push`), options in any
//! order and position (`git push origin --force`), abbreviated (`--forc`), clustered (`-fu`),
//! given by their short or long name (`-f` for `--force`), and shell patterns in the words.

use super::glob;
use super::model::{Model, global_option, reading};
use super::wrappers::base_name;

/// Whether `word` is an option of `command` (cargo's `+toolchain` counts).
fn is_option(command: &str, word: &str) -> bool {
    (word.starts_with('-') && word.len() > 1) || (command == "cargo" && word.starts_with('+'))
}

/// Whether the rule words `rule` (command, subcommands, options) could match `words`, with
/// options read as the parser reads them. `exact` for rules without `:*`.
pub(crate) fn options_could_match(rule: &[String], words: &[String], exact: bool) -> bool {
    let (Some(rule_name), Some(name)) = (rule.first(), words.first()) else {
        return false;
    };
    if rule.len() < 2 || base_name(name) != rule_name {
        return false;
    }
    let command = rule_name.as_str();
    let wanted: Vec<&str> = rule[1..]
        .iter()
        .filter(|w| !is_option(command, w))
        .map(String::as_str)
        .collect();
    let args = &words[1..];
    if !positionals_match(command, &wanted, args, exact) {
        return false;
    }
    let model = reading(command, wanted.first().copied());
    rule[1..]
        .iter()
        .filter(|w| is_option(command, w))
        .all(|option| option_given(option, args, model.as_ref()))
}

/// Whether the rule's positional words are, in order, the first positional words of `args`
/// (all of them when `exact`), where a word after an option may be that option's value.
/// Dynamic programming over (rule word, argument), so long argument lists stay linear.
fn positionals_match(command: &str, wanted: &[&str], args: &[String], exact: bool) -> bool {
    let width = args.len() + 1;
    let mut seen = vec![false; (wanted.len() + 1) * width];
    let mut stack = vec![(0usize, 0usize)];
    while let Some((p, a)) = stack.pop() {
        let slot = p * width + a;
        if seen[slot] {
            continue;
        }
        seen[slot] = true;
        if p == wanted.len() && (!exact || a == args.len()) {
            return true;
        }
        let Some(word) = args.get(a) else {
            continue;
        };
        if word == "--" {
            let rest = &args[a + 1..];
            let left = &wanted[p..];
            let fits = rest.len() >= left.len()
                && rest.iter().zip(left).all(|(w, l)| w == l)
                && (!exact || rest.len() == left.len());
            if fits {
                return true;
            }
            continue;
        }
        if is_option(command, word) {
            stack.push((p, a + 1));
            let takes = global_option(command, word);
            let next_is_value = args
                .get(a + 1)
                .is_some_and(|next| !is_option(command, next) && next != "--");
            if takes != Some(false) && next_is_value {
                stack.push((p, a + 2));
            }
        } else if wanted.get(p).is_some_and(|w| w == word) {
            stack.push((p + 1, a + 1));
        }
    }
    false
}

/// Whether the rule's option word (`--force`, `--force=x`, `-f`, `-rf`) is given anywhere
/// among `args` before `--`, under any spelling the parser accepts.
fn option_given(option: &str, args: &[String], model: Option<&Model>) -> bool {
    let abbreviates = model.is_none_or(Model::abbreviates);
    let options: Vec<&str> = args
        .iter()
        .take_while(|a| a.as_str() != "--")
        .map(String::as_str)
        .filter(|a| a.starts_with('-') && a.len() > 1)
        .collect();
    let long_given = |name: &str, value: Option<&str>| {
        let before_dashes = args.iter().take_while(|a| a.as_str() != "--").count();
        (0..before_dashes).any(|i| {
            let Some(long) = args[i].strip_prefix("--") else {
                return false;
            };
            let (spelled, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let named = spelled == name
                || (abbreviates && !spelled.is_empty() && name.starts_with(spelled));
            named
                && match value {
                    None => true,
                    Some(value) => {
                        attached == Some(value)
                            || (attached.is_none()
                                && args.get(i + 1).is_some_and(|next| next == value))
                    }
                }
        })
    };
    let short_given = |letter: char| {
        options
            .iter()
            .any(|given| !given.starts_with("--") && given[1..].contains(letter))
    };
    let alias_long = |letter: char| {
        model.and_then(|m| {
            m.all_options()
                .find(|o| o.short == Some(letter) && !o.long.is_empty())
                .map(|o| o.long)
        })
    };
    let alias_short = |name: &str| {
        model.and_then(|m| {
            m.all_options()
                .find(|o| o.long == name)
                .and_then(|o| o.short)
        })
    };
    if let Some(long) = option.strip_prefix("--") {
        let (name, value) = match long.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (long, None),
        };
        let plus = model.and_then(|m| m.plus_operand) == Some(name)
            && args.iter().any(|a| a.starts_with('+') && a.len() > 1);
        long_given(name, value)
            || (value.is_none() && (plus || alias_short(name).is_some_and(short_given)))
    } else {
        option[1..].chars().all(|letter| {
            short_given(letter) || alias_long(letter).is_some_and(|name| long_given(name, None))
        })
    }
}

/// Whether the rule words `rule` could match a command whose words are shell patterns
/// (literal characters escaped). A pattern expands to one or more words, each matching it; the
/// command name matches by base name.
pub(crate) fn pattern_could_match(rule: &[String], words: &[String], exact: bool) -> bool {
    let (Some((wanted, rest)), Some((word, others))) = (rule.split_first(), words.split_first())
    else {
        return false;
    };
    let (word, wanted) = (base_name(word), base_name(wanted));
    if wanted.contains('*') {
        return true;
    }
    glob::could_match(word, wanted)
        && expand(rest, others, exact, glob::is_pattern(word).then_some(word))
}

/// `rule` against `words`, where `carry` is a pattern whose expansion may still be going on
/// (it is the word before `words`). Dynamic programming over (rule word, command word,
/// expanding), so long rules and many patterns stay polynomial.
fn expand(rule: &[String], words: &[String], exact: bool, carry: Option<&str>) -> bool {
    let width = words.len() + 1;
    let mut seen = vec![false; (rule.len() + 1) * width * 2];
    // (rule index, word index, whether words[word index - 1] or `carry` is still expanding)
    let mut stack = vec![(0usize, 0usize, carry.is_some())];
    while let Some((r, w, expanding)) = stack.pop() {
        let slot = (r * width + w) * 2 + usize::from(expanding);
        if seen[slot] {
            continue;
        }
        seen[slot] = true;
        let Some(wanted) = rule.get(r) else {
            if !exact || w == words.len() {
                return true;
            }
            continue;
        };
        if wanted.contains('*') {
            return true;
        }
        if expanding {
            let glob = match w.checked_sub(1) {
                Some(previous) => words[previous].as_str(),
                None => carry.unwrap_or_default(),
            };
            if glob::could_match(glob, wanted) {
                stack.push((r + 1, w, true));
            }
        }
        if let Some(word) = words.get(w)
            && glob::could_match(word, wanted)
        {
            stack.push((r + 1, w + 1, glob::is_pattern(word)));
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    fn could(rule: &str, command: &str) -> bool {
        options_could_match(&w(rule), &w(command), false)
    }

    #[test]
    fn global_options_and_option_spellings() {
        assert!(could("git push --force", "git -C . push --force"));
        assert!(could("git push --force", "git push origin main --force"));
        assert!(could("git push --force", "git push -fu origin"));
        assert!(could("git push --force", "git push --forc"));
        assert!(could("git push --force", "git push origin +main"));
        assert!(could("git reset --hard", "git reset HEAD --har"));
        assert!(could("git push", "git --no-pager push"));
        assert!(could("cargo publish", "cargo +nightly publish"));
        assert!(could("kubectl delete", "kubectl -n prod delete pod"));
        assert!(!could("git push --force", "git push --force-with-lease"));
        assert!(!could("git push --force", "git push origin"));
        assert!(!could("git push", "git log push"));
    }

    #[test]
    fn long_rules_and_long_commands_stay_fast() {
        let rule: Vec<String> = std::iter::repeat_n("a".to_owned(), 60).collect();
        let mut words: Vec<String> = std::iter::repeat_n("?".to_owned(), 60).collect();
        words.push("b".to_owned());
        assert!(!pattern_could_match(&rule, &words, true));
        let mut long = vec!["git".to_owned(), "push".to_owned()];
        long.extend(std::iter::repeat_n("--x".to_owned(), 20_000));
        assert!(!options_could_match(&w("git push --force=y"), &long, false));
        assert!(!options_could_match(
            &w("git push origin main"),
            &long,
            false
        ));
    }

    #[test]
    fn patterns_in_words() {
        let p = |s: &str| pattern_could_match(&w("curl"), &w(s), false);
        assert!(p("c[u]rl x"));
        assert!(p("/usr/bin/cu*"));
        assert!(!p("l? x"));
        assert!(pattern_could_match(
            &w("git push --force"),
            &w("g?t push --force"),
            false
        ));
        assert!(!pattern_could_match(
            &w("git push --force"),
            &w("g?t status"),
            false
        ));
    }
}
