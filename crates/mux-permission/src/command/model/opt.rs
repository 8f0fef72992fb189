//! Options as data a reviewer can read: what giving one does (takes a value, runs code,
//! writes files). Every program model lists its options with these, and both the allow side
//! (what a model explains) and the deny scan ([`super::super::scan`]) read the same lists.

/// What giving an option does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// A flag that changes nothing the checker cares about.
    Flag,
    /// Takes a value (attached or the next word); otherwise harmless.
    Value,
    /// Takes an optional value, attached only (`--opt=v`, `-ov`); otherwise harmless.
    OptionalValue,
    /// Takes a value that must be attached (`--format=v`): git's revision parser refuses the
    /// bare option and never reads the next word as its value. Otherwise harmless.
    AttachedValue,
    /// Takes the next word as its value unless it is the last word (git's
    /// `PARSE_OPT_LASTARG_DEFAULT`: `git branch --merged` alone means `--merged=HEAD`).
    /// Otherwise harmless.
    ValueUnlessLast,
    /// Takes a value that is a command line, a program or configuration that runs code.
    Runs,
    /// Runs code chosen elsewhere (a pager, a configured tool); a value, if any, is attached.
    RunsOptional,
    /// Runs code chosen elsewhere (git's configured external diff or textconv, diff's `pr`,
    /// file's decompressors); takes no value.
    RunsConfigured,
    /// Takes a value naming a file it writes.
    Writes,
    /// Writes files in place; a value (a backup suffix), if any, is attached.
    WritesOptional,
    /// Writes files it names itself (`file --compile`); takes no value.
    WritesImplied,
    /// Takes a script in the command's own language (sed), checked by [`super::scripts`].
    Script,
    /// Takes a file holding a script the checker cannot read.
    ScriptFile,
    /// Takes a file name that, with a `host:` part, is reached through a remote shell (tar's
    /// archive).
    Remote,
}

impl Effect {
    /// Whether the option needs a value, attached or in the next word.
    pub(crate) fn needs_value(self) -> bool {
        matches!(
            self,
            Self::Value
                | Self::ValueUnlessLast
                | Self::Runs
                | Self::Writes
                | Self::Script
                | Self::ScriptFile
                | Self::Remote
        )
    }

    /// Whether the option takes a value only when attached (required or not: see
    /// [`Self::AttachedValue`]).
    pub(crate) fn optional_value(self) -> bool {
        matches!(
            self,
            Self::OptionalValue | Self::AttachedValue | Self::RunsOptional | Self::WritesOptional
        )
    }

    /// Why the option makes a command at most ask, if it does.
    pub(crate) fn danger(self) -> Option<&'static str> {
        match self {
            Self::Flag
            | Self::Value
            | Self::OptionalValue
            | Self::AttachedValue
            | Self::ValueUnlessLast
            | Self::Script
            | Self::Remote => None,
            Self::Runs | Self::RunsOptional | Self::RunsConfigured => {
                Some("can run code through an option")
            }
            Self::Writes | Self::WritesOptional | Self::WritesImplied => {
                Some("writes files through an option")
            }
            Self::ScriptFile => Some("runs a script file the checker cannot read"),
        }
    }
}

/// One option: its long name (without `--`, empty if none), its short letter, its effect.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opt {
    pub(crate) long: &'static str,
    pub(crate) short: Option<char>,
    pub(crate) effect: Effect,
}

pub(crate) const fn o(long: &'static str, short: char, effect: Effect) -> Opt {
    Opt {
        long,
        short: Some(short),
        effect,
    }
}

pub(crate) const fn l(long: &'static str, effect: Effect) -> Opt {
    Opt {
        long,
        short: None,
        effect,
    }
}

pub(crate) const fn s(short: char, effect: Effect) -> Opt {
    Opt {
        long: "",
        short: Some(short),
        effect,
    }
}
