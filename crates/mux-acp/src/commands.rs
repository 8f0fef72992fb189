//! Slash commands: prompts the application names (`/review`, `/explain`), offered to the
//! editor with `available_commands_update` and expanded when a prompt starts with one.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate,
    UnstructuredCommandInput,
};

/// A prompt offered as `/name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Command {
    pub(crate) name: String,
    pub(crate) description: String,
    /// The prompt; `$ARGUMENTS` stands for the text after the command.
    pub(crate) prompt: String,
}

/// The update that offers `commands`.
pub(crate) fn update(commands: &[Command]) -> SessionUpdate {
    let available = commands
        .iter()
        .map(|c| {
            AvailableCommand::new(c.name.clone(), c.description.clone()).input(
                AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(
                    "what the command works on",
                )),
            )
        })
        .collect();
    SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(available))
}

/// `text` with a leading `/name` replaced by that command's prompt; other text is unchanged.
pub(crate) fn expand(commands: &[Command], text: String) -> String {
    let Some(rest) = text.strip_prefix('/') else {
        return text;
    };
    let (name, arguments) = rest
        .split_once(char::is_whitespace)
        .map_or((rest, ""), |(name, args)| (name, args.trim()));
    let Some(command) = commands.iter().find(|c| c.name == name) else {
        return text;
    };
    if command.prompt.contains("$ARGUMENTS") {
        command.prompt.replace("$ARGUMENTS", arguments)
    } else if arguments.is_empty() {
        command.prompt.clone()
    } else {
        format!("{}\n\n{arguments}", command.prompt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands() -> Vec<Command> {
        vec![
            Command {
                name: "review".into(),
                description: "Review a file".into(),
                prompt: "Review $ARGUMENTS for bugs.".into(),
            },
            Command {
                name: "explain".into(),
                description: "Explain".into(),
                prompt: "Explain this project.".into(),
            },
        ]
    }

    #[test]
    fn a_command_expands_with_its_arguments() {
        let cases = [
            ("/review src/lib.rs", "Review src/lib.rs for bugs."),
            ("/explain", "Explain this project."),
            ("/explain briefly", "Explain this project.\n\nbriefly"),
            ("/unknown x", "/unknown x"),
            ("no command", "no command"),
        ];
        for (text, expected) in cases {
            assert_eq!(expand(&commands(), text.to_owned()), expected, "{text}");
        }
    }

    #[test]
    fn the_update_lists_every_command() {
        let wire = serde_json::to_value(update(&commands())).unwrap_or_default();
        assert_eq!(wire["sessionUpdate"], "available_commands_update");
        assert_eq!(wire["availableCommands"][0]["name"], "review");
        assert_eq!(
            wire["availableCommands"][0]["input"]["hint"],
            "what the command works on"
        );
    }
}
