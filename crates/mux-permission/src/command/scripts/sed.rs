//! GNU sed scripts, read the way GNU sed 4.9 compiles them (`sed/compile.c`): commands are
//! separated by `;`, newlines and blanks; a regular expression runs to its unescaped
//! delimiter outside bracket expressions (`/[/]/` is one address); the text of `a`, `i`, `c`
//! and `e` runs to the first newline not escaped by `\`; labels end at blanks, `;`, `}` or
//! `#`; file names run to the end of the line. `e`, `s///e`, `w`, `W`, `r`, `R` and `s///w`
//! run commands or touch files. A script GNU sed would reject is refused too.

use super::Program;

/// Reads a sed script. Only the commands GNU sed documents as not running code, reading or
/// writing files are vouched for; anything else is a hazard.
pub(crate) fn sed(script: &str) -> Program {
    let mut out = Program::default();
    let mut reader = Reader {
        chars: script.chars().collect(),
        at: 0,
    };
    if let Err(why) = reader.program(&mut out) {
        out.hazards
            .push(format!("a sed script the checker cannot read: {why}"));
    }
    out
}

/// GNU sed's `inchar`/`savchar` over the script.
struct Reader {
    chars: Vec<char>,
    at: usize,
}

/// `ISSPACE`: what GNU sed skips between commands.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c')
}

impl Reader {
    fn next(&mut self) -> Option<char> {
        let c = self.chars.get(self.at).copied();
        if c.is_some() {
            self.at += 1;
        }
        c
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    /// `in_nonblank`: skips spaces and tabs, and reads the next character.
    fn nonblank(&mut self) -> Option<char> {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
        self.next()
    }

    /// Skips what `in_nonblank` skips, without reading further.
    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
    }

    /// The whole script.
    fn program(&mut self, out: &mut Program) -> Result<(), String> {
        loop {
            while self.peek().is_some_and(|c| c == ';' || is_space(c)) {
                self.at += 1;
            }
            if self.peek().is_none() {
                return Ok(());
            }
            let addressed = self.address()?;
            if addressed {
                self.skip_blanks();
                if self.peek() == Some(',') {
                    self.at += 1;
                    self.skip_blanks();
                    if !self.address()? {
                        return Err("a `,` without a second address".into());
                    }
                }
                self.skip_blanks();
            }
            if self.peek() == Some('!') {
                self.at += 1;
                self.skip_blanks();
            }
            let command = self.next().ok_or("a missing command")?;
            self.command(command, addressed, out)?;
        }
    }

    /// One command after its address.
    fn command(&mut self, command: char, addressed: bool, out: &mut Program) -> Result<(), String> {
        match command {
            '#' if addressed => return Err("a comment cannot take an address".into()),
            '#' => self.rest_of_line(),
            'v' => {
                self.label();
            }
            '{' => {}
            '}' | '=' | 'd' | 'D' | 'F' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'z'
            | 'x' => self.end_of_command()?,
            ':' if addressed => return Err("a label cannot take an address".into()),
            ':' => {
                if self.label().is_empty() {
                    return Err("`:` without a label".into());
                }
            }
            'b' | 't' | 'T' => {
                self.label();
            }
            'q' | 'Q' | 'l' | 'L' => {
                self.skip_blanks();
                self.digits();
                self.end_of_command()?;
            }
            'a' | 'i' | 'c' => {
                self.text()?;
            }
            'e' => {
                self.skip_blanks();
                if matches!(self.peek(), None | Some('\n')) {
                    out.hazards
                        .push("the sed command `e` runs a command".into());
                    out.unreadable = true;
                    return Ok(());
                }
                let text = self.text()?;
                out.hazards
                    .push("the sed command `e` runs a command".into());
                if text.contains('\\') {
                    // GNU sed turns escapes into characters before it runs the text.
                    out.unreadable = true;
                }
                out.runs.push(text.replace("\\\n", "\n"));
            }
            'r' | 'R' | 'w' | 'W' => {
                if self.filename().is_empty() {
                    return Err(format!("`{command}` without a file name"));
                }
                out.hazards.push(format!(
                    "the sed command `{command}` reads or writes a file"
                ));
            }
            's' => self.substitute(out)?,
            'y' => {
                let delim = self.delimiter()?;
                self.delimited(delim, false)?;
                self.delimited(delim, false)?;
                self.end_of_command()?;
            }
            other => return Err(format!("the sed command `{other}` is not known")),
        }
        Ok(())
    }

    /// `s`: regex, replacement and flags.
    fn substitute(&mut self, out: &mut Program) -> Result<(), String> {
        let delim = self.delimiter()?;
        self.delimited(delim, true)?;
        self.delimited(delim, false)?;
        loop {
            match self.nonblank() {
                Some('i' | 'I' | 'm' | 'M' | 'p' | 'g') => {}
                Some(d) if d.is_ascii_digit() => self.digits(),
                Some('e') => {
                    out.hazards
                        .push("the sed flag `s///e` runs a command".into());
                    out.unreadable = true;
                }
                Some('w') => {
                    if self.filename().is_empty() {
                        return Err("`s///w` without a file name".into());
                    }
                    out.hazards
                        .push("the sed flag `s///w` writes a file".into());
                    return Ok(());
                }
                Some('}' | '#') => {
                    self.at -= 1;
                    return Ok(());
                }
                None | Some('\n' | ';') => return Ok(()),
                Some('\r') if self.peek() == Some('\n') => {
                    self.at += 1;
                    return Ok(());
                }
                Some(other) => return Err(format!("the sed flag `{other}` is not known")),
            }
        }
    }

    /// The delimiter of `s` or `y`: one ASCII character other than newline and `\`.
    fn delimiter(&mut self) -> Result<char, String> {
        match self.next() {
            Some(d) if d.is_ascii() && d != '\n' => Ok(d),
            _ => Err("a sed delimiter the checker cannot read".into()),
        }
    }

    /// `match_slash`: up to and past the unescaped `delim`; a regular expression (`regex`)
    /// skips bracket expressions whole. An unescaped newline ends it unfinished.
    fn delimited(&mut self, delim: char, regex: bool) -> Result<(), String> {
        let unfinished = || "an unfinished sed regular expression or replacement".to_owned();
        loop {
            let c = self.next().ok_or_else(unfinished)?;
            if c == '\n' {
                return Err(unfinished());
            }
            if c == delim {
                return Ok(());
            }
            if c == '\\' {
                self.next().ok_or_else(unfinished)?;
            } else if c == '[' && regex && !self.bracket() {
                return Err(unfinished());
            }
        }
    }

    /// `snarf_char_class`: a bracket expression after its `[`; `false` when a newline or the
    /// end comes first.
    fn bracket(&mut self) -> bool {
        if self.peek() == Some('^') {
            self.at += 1;
        }
        if self.peek() == Some(']') {
            self.at += 1;
        }
        // 0 outside a class, 1 after `[`, 2 after the opening `.`/`:`/`=`, 3 after the closing.
        let mut state = 0;
        let mut delim = ' ';
        loop {
            let Some(c) = self.next() else {
                return false;
            };
            match c {
                '\n' => return false,
                '.' | ':' | '=' if state == 1 => {
                    delim = c;
                    state = 2;
                    continue;
                }
                '.' | ':' | '=' if state == 2 && c == delim => {
                    state = 3;
                    continue;
                }
                '[' => {
                    if state == 0 {
                        state = 1;
                    }
                    continue;
                }
                ']' if state == 0 || state == 1 => return true,
                ']' if state == 3 => state = 0,
                _ => {}
            }
            state &= !1;
        }
    }

    /// One address (`compile_address`); `false` when there is none here.
    fn address(&mut self) -> Result<bool, String> {
        match self.peek() {
            Some('/') => {
                self.at += 1;
                self.regex_address('/')?;
            }
            Some('\\') => {
                self.at += 1;
                let delim = self.delimiter()?;
                self.regex_address(delim)?;
            }
            Some(d) if d.is_ascii_digit() => {
                self.digits();
                self.skip_blanks();
                if self.peek() == Some('~') {
                    self.at += 1;
                    self.skip_blanks();
                    self.digits();
                }
            }
            Some('+' | '~') => {
                self.at += 1;
                self.skip_blanks();
                self.digits();
            }
            Some('$') => self.at += 1,
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn regex_address(&mut self, delim: char) -> Result<(), String> {
        self.delimited(delim, true)?;
        loop {
            self.skip_blanks();
            match self.peek() {
                Some('I' | 'M') => self.at += 1,
                _ => return Ok(()),
            }
        }
    }

    /// `read_end_of_cmd`: blanks, then `;`, a newline, the end, or `}`/`#` (left unread).
    fn end_of_command(&mut self) -> Result<(), String> {
        match self.nonblank() {
            None | Some(';' | '\n') => Ok(()),
            Some('}' | '#') => {
                self.at -= 1;
                Ok(())
            }
            Some(other) => Err(format!("`{other}` after a sed command")),
        }
    }

    /// `read_label`: blanks, then up to blanks, a newline, `;`, `}` or `#`.
    fn label(&mut self) -> String {
        self.skip_blanks();
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| !matches!(c, '\n' | ' ' | '\t' | ';' | '}' | '#'))
        {
            self.at += 1;
        }
        self.chars[start..self.at].iter().collect()
    }

    /// `read_filename`: blanks, then up to the end of the line.
    fn filename(&mut self) -> String {
        self.skip_blanks();
        let start = self.at;
        self.rest_of_line();
        self.chars[start..self.at].iter().collect()
    }

    /// Up to (not past) the next newline.
    fn rest_of_line(&mut self) {
        while self.peek().is_some_and(|c| c != '\n') {
            self.at += 1;
        }
    }

    /// The text of `a`, `i`, `c` or `e` (`read_text`): after blanks, an optional `\` whose
    /// next character is taken as it is, then up to the first newline not escaped by `\`.
    fn text(&mut self) -> Result<String, String> {
        self.skip_blanks();
        let mut text = String::new();
        match self.next() {
            None => return Err("`a`, `i` or `c` without text".into()),
            Some('\\') => match self.next() {
                Some('\n') | None => {}
                Some(c) => text.push(c),
            },
            Some(_) => self.at -= 1,
        }
        while let Some(c) = self.next() {
            match c {
                '\n' => break,
                '\\' => {
                    text.push('\\');
                    if let Some(escaped) = self.next() {
                        text.push(escaped);
                    }
                }
                c => text.push(c),
            }
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_sed_scripts_are_vouched_for() {
        for script in [
            "1,5p",
            "/foo/p",
            "s/a/b/gp",
            r"s/(a)/\1/p",
            "$p",
            "p;n",
            "1~2{p;d}",
            "y/ab/cd/",
        ] {
            assert_eq!(sed(script), Program::default(), "{script}");
        }
    }

    #[test]
    fn sed_commands_that_run_or_write_are_not() {
        assert_eq!(sed("1e id").runs, ["id"]);
        assert!(sed("s/x/id/e").unreadable);
        assert!(sed("e").unreadable);
        for script in ["w out", "s/a/b/w out", "1W out", "r /etc/passwd", "1{e id"] {
            assert!(!sed(script).hazards.is_empty(), "{script}");
        }
    }

    #[test]
    fn labels_and_versions_end_where_gnu_sed_ends_them() {
        assert_eq!(sed(":a e id").runs, ["id"]);
        assert_eq!(sed("v 4.2 e id").runs, ["id"]);
        assert_eq!(sed("b end; e id").runs, ["id"]);
        assert_eq!(sed(":a\te id").runs, ["id"]);
        assert!(sed(":a;N;ba").hazards.is_empty());
    }
    #[test]
    fn text_regexes_and_comments_end_where_gnu_sed_ends_them() {
        for script in [
            "/[/]/p",
            "s/[/]/x/g",
            "s/a/b/ # e id",
            "s/a/b/g p",
            "1\tp",
            "a foo\\\ne id",
            "1a\\\ne id",
            "/x/I,+3!s/a\\/b/c/gp",
            "\\%a\\%b%p",
            "s\\a\\b\\",
        ] {
            assert_eq!(sed(script), Program::default(), "{script:?}");
        }
        for script in [
            "1i\\\ns|x\ne touch CANARY\ns|||",
            "a foo\\\\\ne id",
            "y/a/b/;e id",
            "/[/]/e id",
            "p # x\ne id",
        ] {
            assert!(
                sed(script)
                    .runs
                    .iter()
                    .any(|r| r.contains("id") || r.contains("CANARY")),
                "{script:?}"
            );
        }
    }

    #[test]
    fn continued_command_text_is_unreadable() {
        let read = sed("e echo \\\nrm -rf x");
        assert!(read.unreadable);
        assert_eq!(read.runs, ["echo \nrm -rf x"]);
    }

    #[test]
    fn scripts_gnu_sed_rejects_are_refused() {
        for script in [
            "/a\nb/p",
            "s/a\nb/c/",
            "s/a/b/q",
            "p x",
            "1#c",
            "s\u{e9}a\u{e9}b\u{e9}",
        ] {
            assert!(!sed(script).hazards.is_empty(), "{script:?}");
        }
    }
}
