//! ACP session modes as mux permission modes.

use agent_client_protocol::v1::schema::{SessionMode, SessionModeId, SessionModeState};
use mux_permission::Mode;

/// The modes a session offers: id, name, description, mux mode.
const MODES: [(&str, &str, &str, Mode); 4] = [
    (
        "default",
        "Default",
        "Asks before edits and commands the rules do not allow",
        Mode::Default,
    ),
    (
        "acceptEdits",
        "Accept edits",
        "File edits in the project run without asking",
        Mode::AcceptEdits,
    ),
    (
        "plan",
        "Plan",
        "Read-only: only tools that read may run",
        Mode::Plan,
    ),
    (
        "bypassPermissions",
        "Bypass permissions",
        "Everything runs without asking; deny rules still hold",
        Mode::Bypass,
    ),
];

/// The mux mode of an ACP mode id.
pub(crate) fn mode_of(id: &str) -> Option<Mode> {
    MODES
        .iter()
        .find(|(m, ..)| *m == id)
        .map(|(.., mode)| *mode)
}

/// The ACP mode id of a mux mode (`dontAsk` shows as `default`, which it refines).
pub(crate) fn id_of(mode: Mode) -> &'static str {
    MODES
        .iter()
        .find(|(.., m)| *m == mode)
        .map_or("default", |(id, ..)| *id)
}

/// The mode state a session reports in `session/new` and `session/load`.
pub(crate) fn state(current: Mode) -> SessionModeState {
    let modes = MODES
        .iter()
        .map(|(id, name, description, _)| {
            SessionMode::new(SessionModeId::new(*id), *name).description(description.to_string())
        })
        .collect();
    SessionModeState::new(SessionModeId::new(id_of(current)), modes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips() {
        for (id, .., mode) in MODES {
            assert_eq!(mode_of(id), Some(mode));
            assert_eq!(id_of(mode), id);
        }
        assert_eq!(mode_of("yolo"), None);
    }
}
