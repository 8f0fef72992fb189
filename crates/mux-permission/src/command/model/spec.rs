//! What a program model is: the kinds of operands, the option styles, the [`Model`] itself,
//! and the arguments and parsed form its checks read.

use super::opt::Opt;

/// What kind of operand a position takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A file or directory the program only reads (or names, like `basename`). A glob is
    /// accepted here when its first character is literal and not `-`, so no expansion can be
    /// read as an option.
    Path,
    /// A string the program only reads: a pattern, a revision, a key, text to print.
    Text,
    /// A program in the command's own language, checked with that language's grammar.
    Program(Lang),
}

/// Languages whose programs are checked before they are allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lang {
    /// A regular expression (grep, rg): inert.
    Regex,
    /// GNU sed.
    Sed,
    /// awk (POSIX, gawk and mawk extensions refused).
    Awk,
    /// jq.
    Jq,
}

/// How a program's option parser reads its arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    /// getopt_long (GNU): unique prefixes of long options, options anywhere before `--`.
    Gnu,
    /// Long options only as spelled (clap, hand-written parsers), options anywhere before `--`.
    Exact,
    /// git's parse-options: unique prefixes, `--no-OPTION` negations, options anywhere.
    Git,
    /// git's revision and diff parser (log, show, diff, blame, ...): parse-options keeping
    /// unknown options for `setup_revisions`, which takes long options only as spelled, and
    /// short clusters only of diff options. `--no-OPTION` negations.
    GitExact,
}

/// The operands a program takes: these kinds first, then any number of `rest`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Operands {
    /// The first operands, in order.
    pub(crate) leading: &'static [Kind],
    /// Every operand after them; `None` when the program takes no more.
    pub(crate) rest: Option<Kind>,
}

/// Any number of paths read.
pub(crate) const PATHS: Operands = Operands {
    leading: &[],
    rest: Some(Kind::Path),
};
/// Any number of strings only read or printed.
pub(crate) const TEXTS: Operands = Operands {
    leading: &[],
    rest: Some(Kind::Text),
};
/// No operands.
pub(crate) const NONE: Operands = Operands {
    leading: &[],
    rest: None,
};

/// A rule on the parsed arguments beyond options and operand kinds (`git config` reads only
/// with one key and no value).
pub(crate) type Form = fn(&Parsed<'_>) -> Result<(), String>;

/// One program's (or one subcommand's) model.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Model {
    /// The program, or `git SUBCOMMAND`.
    pub(crate) name: &'static str,
    /// How its options are read.
    pub(crate) style: Style,
    /// The options it is vouched for with. An option whose effect runs code or writes files
    /// is listed so that it is recognised, and is never explained.
    pub(crate) options: &'static [Opt],
    /// More option tables, shared between models (git's diff and revision options).
    pub(crate) more: &'static [&'static [Opt]],
    /// Its operands.
    pub(crate) operands: Operands,
    /// Long names of options that give the program (`sed -e`, `grep -f`): then the first
    /// operand is not the program.
    pub(crate) program_options: &'static [&'static str],
    /// `-NUM` is an option (`head -5`, `git log -3`).
    pub(crate) numeric: bool,
    /// Extra rules on the parsed form.
    pub(crate) form: Option<Form>,
    /// For the deny scan: an option the model does not list makes the command at most ask.
    pub(crate) strict: bool,
    /// For the deny scan: option parsing stops at the first operand (git's global options
    /// stop at the subcommand).
    pub(crate) stops_at_operand: bool,
    /// For the deny scan: the first argument is an option cluster even without a `-` (`tar
    /// xvf`).
    pub(crate) bundled_first: bool,
    /// For the deny scan: an operand starting with `+` stands for this long option (`git push
    /// origin +main` is a forced push).
    pub(crate) plus_operand: Option<&'static str>,
}

impl Model {
    /// Whether the deny side reads unique prefixes of long options as the options: wherever
    /// the program might (every style but [`Style::Exact`]), so a deny rule is not dodged.
    pub(crate) fn abbreviates(&self) -> bool {
        self.style != Style::Exact
    }

    /// Whether the program's parser accepts unique prefixes of long options (not git's
    /// revision parser): the allow side reads an abbreviation only then.
    pub(crate) fn reads_abbreviations(&self) -> bool {
        matches!(self.style, Style::Gnu | Style::Git)
    }

    /// Whether the first operand is a program in the command's language, unless an option gave
    /// one (`sed PROGRAM FILE`).
    pub(crate) fn program_operand(&self) -> bool {
        matches!(self.operands.leading.first(), Some(Kind::Program(_)))
    }

    /// Every option of the model, its shared tables included.
    pub(crate) fn all_options(&self) -> impl Iterator<Item = &'static Opt> + '_ {
        self.options
            .iter()
            .chain(self.more.iter().flat_map(|group| group.iter()))
    }

    /// The options a long name (`exec` from `--exec`) can stand for, for the deny side:
    /// itself, else every option it abbreviates when [`Self::abbreviates`].
    ///
    /// git's revision parser refuses abbreviations, so there an abbreviation is read for its
    /// danger only, never for a value: it comes back twice, as an ambiguous one does, and the
    /// scan takes no next word for it (git reads that word as an option of its own).
    pub(crate) fn long_candidates(&self, name: &str) -> Vec<&'static Opt> {
        let found = self.candidates(name, self.abbreviates());
        match found.as_slice() {
            [only] if self.style == Style::GitExact && only.long != name => vec![*only, *only],
            _ => found,
        }
    }

    /// The options a long name stands for as the program reads it, for the allow side:
    /// itself, else every option it abbreviates when [`Self::reads_abbreviations`].
    pub(crate) fn read_candidates(&self, name: &str) -> Vec<&'static Opt> {
        self.candidates(name, self.reads_abbreviations())
    }

    fn candidates(&self, name: &str, abbreviated: bool) -> Vec<&'static Opt> {
        if let Some(exact) = self.all_options().find(|o| o.long == name) {
            return vec![exact];
        }
        if !abbreviated || name.is_empty() {
            return Vec::new();
        }
        self.all_options()
            .filter(|o| !o.long.is_empty() && o.long.starts_with(name))
            .collect()
    }
}

/// A model with the common defaults.
pub(crate) const fn model(
    name: &'static str,
    style: Style,
    options: &'static [Opt],
    operands: Operands,
) -> Model {
    Model {
        name,
        style,
        options,
        more: &[],
        operands,
        program_options: &[],
        numeric: false,
        form: None,
        strict: false,
        stops_at_operand: false,
        bundled_first: false,
        plus_operand: None,
    }
}

/// One argument: its text after quote removal, and its shell pattern when it is an unquoted
/// glob the shell expands.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arg<'a> {
    /// The word.
    pub(crate) text: &'a str,
    /// The pattern, when the word is a glob.
    pub(crate) glob: Option<&'a str>,
}

/// What the arguments held, once every word is explained.
#[derive(Debug, Default)]
pub(crate) struct Parsed<'a> {
    /// The options given, by their model entry, with their values.
    pub(crate) options: Vec<(&'static Opt, Option<&'a str>)>,
    /// The operands, in order, the program operand included.
    pub(crate) operands: Vec<&'a str>,
    /// An option came after an operand (a parser that stops at its first operand, as
    /// `git config` does, reads it as an operand).
    pub(crate) option_after_operand: bool,
}

impl Parsed<'_> {
    /// Whether the option with this long name (or, when empty, short letter) was given.
    pub(crate) fn has(&self, long: &str) -> bool {
        self.options.iter().any(|(o, _)| o.long == long)
    }

    /// Whether the option with this short letter was given.
    pub(crate) fn has_short(&self, short: char) -> bool {
        self.options.iter().any(|(o, _)| o.short == Some(short))
    }
}
