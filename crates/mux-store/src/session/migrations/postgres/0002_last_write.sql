-- Schema 2: the token of the last write to each session, so a write whose commit went
-- unanswered (a connection that hung, a server that crashed) is known to have landed or not,
-- and is never stored twice.
ALTER TABLE mux_sessions ADD COLUMN last_write TEXT;
