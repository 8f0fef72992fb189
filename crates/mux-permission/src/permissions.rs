//! The policy: scopes merged, rules matched, the mode applied.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLockReadGuard};

use mux_tool::builtin::{Bash, Sandbox, SandboxPolicy};
use mux_tool::{PathFilter, Subject, ToolSpec};
use serde_json::Value;

use crate::Walls;
use crate::prepared::Prepared;
use crate::sandbox::{SandboxError, SandboxSettings};
use crate::wall::{BashWall, WallCheck};
use crate::{
    Family, GateVerdict, Mode, PathContext, Rule, RuleKind, RuleSet, Scope, ScopeRules, Verdict,
};

/// A policy over every scope's rules, checked for each call.
///
/// ```
/// use mux_permission::{Permissions, PathContext, RuleSet, Scope, ScopeRules, Verdict, builtin};
/// use mux_tool::Subject;
///
/// let project = ScopeRules::new(RuleSet::new().with_allow("Bash(git diff:*)")?.with_deny("Bash(rm:*)")?);
/// let permissions = Permissions::builder(PathContext::new("."))
///     .scope(Scope::Project, project)
///     .build();
/// let bash = builtin::spec("Bash").unwrap();
///
/// let check = |command: &str| permissions.check(&bash, &Subject::command(command)).verdict;
/// assert_eq!(check("git diff HEAD"), Verdict::Allow);
/// assert_eq!(check("git diff && git push"), Verdict::Ask);
/// assert_eq!(check("git diff $(rm -rf ~)"), Verdict::Deny);
/// # Ok::<(), mux_permission::RuleError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Permissions {
    layers: Vec<(Scope, ScopeRules)>,
    context: PathContext,
    /// [`unset`](Permissions::unset): read-only tools run whatever they touch.
    unset: bool,
    /// The OS sandbox of the `bash` tool, fixed when the policy was built.
    wall: BashWall,
}

/// Builds [`Permissions`].
#[derive(Debug)]
pub struct PermissionsBuilder {
    layers: Vec<(Scope, ScopeRules)>,
    context: PathContext,
    bash_policy: Option<SandboxPolicy>,
}

impl PermissionsBuilder {
    /// Adds a scope's rules. A scope given twice contributes both handles. Without a session
    /// scope, [`build`](Self::build) adds an empty one.
    pub fn scope(mut self, scope: Scope, rules: ScopeRules) -> Self {
        self.layers.push((scope, rules));
        self
    }

    /// Declares the OS sandbox the `bash` tool runs under: the one value that configures the
    /// tool ([`Permissions::bash`], [`Permissions::bash_policy`]) and tells the policy
    /// whether a wall bounds its commands ([`Permissions::sandboxed`]). Without it, only a
    /// settings file's `sandbox.enabled: true` puts the wall up for the policy.
    pub fn bash_wall(mut self, policy: SandboxPolicy) -> Self {
        self.bash_policy = Some(policy);
        self
    }

    /// The policy.
    pub fn build(mut self) -> Permissions {
        if !self
            .layers
            .iter()
            .any(|(scope, _)| *scope == Scope::Session)
        {
            self.layers.push((Scope::Session, ScopeRules::default()));
        }
        self.layers.sort_by_key(|(scope, _)| *scope);
        let enabled = SandboxSettings::merged(
            self.layers
                .iter()
                .map(|(_, rules)| rules.read().sandbox.clone())
                .collect::<Vec<_>>()
                .iter(),
        )
        .enabled;
        Permissions {
            layers: self.layers,
            context: self.context,
            unset: false,
            wall: BashWall::new(self.bash_policy, enabled),
        }
    }
}

impl Permissions {
    /// A builder anchored at `context`.
    pub fn builder(context: PathContext) -> PermissionsBuilder {
        PermissionsBuilder {
            layers: Vec::new(),
            context,
            bash_policy: None,
        }
    }

    /// The policy of an agent that sets none, at `root`: no rules, and the one default every
    /// face shares. A read-only tool runs unasked whatever it touches (a file outside the
    /// root, a URL: `web_fetch` too); any other call asks, where a face can ask, and is
    /// refused where none can. Internal addresses still ask, as under any policy. The session
    /// scope holds what the person adds: a mode, an "always" answer's rule, a "reject always".
    ///
    /// ```
    /// use mux_permission::{Permissions, Verdict, builtin};
    /// use mux_tool::Subject;
    ///
    /// let unset = Permissions::unset("/work/project");
    /// let fetch = builtin::spec("WebFetch").unwrap();
    /// let bash = builtin::spec("Bash").unwrap();
    /// let verdict = |spec, subject| unset.check(spec, &subject).verdict;
    /// assert_eq!(verdict(&fetch, Subject::url("https://example.com/")), Verdict::Allow);
    /// assert_eq!(verdict(&bash, Subject::command("ls")), Verdict::Ask);
    /// assert!(unset.is_unset());
    /// ```
    pub fn unset(root: impl Into<PathBuf>) -> Permissions {
        Permissions {
            unset: true,
            ..Permissions::builder(PathContext::new(root)).build()
        }
    }

    /// Whether this is [`unset`](Self::unset)'s policy (or a session of it): no one set a
    /// policy.
    pub fn is_unset(&self) -> bool {
        self.unset
    }

    /// The same policy for a new session: every other scope is shared, the session scope
    /// starts empty.
    pub fn new_session(&self) -> Permissions {
        let mut layers: Vec<_> = self
            .layers
            .iter()
            .filter(|(scope, _)| *scope != Scope::Session)
            .cloned()
            .collect();
        layers.push((Scope::Session, ScopeRules::default()));
        Permissions {
            layers,
            context: self.context.clone(),
            unset: self.unset,
            wall: self.wall,
        }
    }

    /// [`new_session`](Self::new_session) for a session rooted at `root` (a face's working
    /// directory): relative paths and the project root are anchored there; the home directory
    /// and every scope but the session's are kept.
    pub fn new_session_at(&self, root: impl Into<PathBuf>) -> Permissions {
        let mut session = self.new_session();
        session.context = PathContext::with_home(root, self.context.home().map(Path::to_path_buf));
        session
    }

    /// The root and home directory paths are anchored at.
    pub fn context(&self) -> &PathContext {
        &self.context
    }

    /// The `sandbox` settings of every scope, merged: lists join, and each single value comes
    /// from the highest scope that sets it.
    pub fn sandbox(&self) -> SandboxSettings {
        let layers = self.read_layers();
        SandboxSettings::merged(layers.iter().map(|(_, rules)| &rules.sandbox))
    }

    /// The walls around a sandboxed command: the merged `sandbox` settings and every scope's
    /// rules compiled by [`SandboxSettings::walls`], anchored at this policy's
    /// [`context`](Self::context). A managed scope that allows only its own rules keeps the
    /// other scopes' allow rules out of the walls too.
    pub fn walls(&self) -> Result<Walls, SandboxError> {
        let settings = self.sandbox();
        let layers = self.read_layers();
        let managed_only = layers
            .iter()
            .any(|(scope, rules)| *scope == Scope::Managed && rules.managed_rules_only);
        let mut merged = RuleSet::new();
        for (scope, rules) in &layers {
            for kind in [RuleKind::Allow, RuleKind::Ask, RuleKind::Deny] {
                if kind == RuleKind::Allow && managed_only && *scope != Scope::Managed {
                    continue;
                }
                for rule in rules.list(kind) {
                    merged.add(kind, rule.clone());
                }
            }
        }
        drop(layers);
        settings.walls(&merged, &self.context)
    }

    /// The OS sandbox the `bash` tool must run under: the one declared with
    /// [`PermissionsBuilder::bash_wall`] (default
    /// [`WorkspaceWrite`](SandboxPolicy::WorkspaceWrite)), raised from `FullAccess` to
    /// `WorkspaceWrite` when a settings file sets `sandbox.enabled: true`. Settings never
    /// lower it.
    pub fn bash_policy(&self) -> SandboxPolicy {
        self.wall.policy()
    }

    /// Whether the wall is up for the policy: the `bash` tool runs under a policy other than
    /// `FullAccess`, declared with [`PermissionsBuilder::bash_wall`] or by `sandbox.enabled:
    /// true`, and no settings file sets `sandbox.enabled: false`. Then
    /// `autoAllowBashIfSandboxed` lets commands that would ask run, and
    /// `excludedCommands` and `allowUnsandboxedCommands` apply. Fixed when the policy is
    /// built (as the tool built from it is): a scope changed later does not move the wall.
    pub fn sandboxed(&self) -> bool {
        self.wall.is_up()
    }

    /// The `bash` tool over `sandbox`, under [`bash_policy`](Self::bash_policy): built from
    /// the same value the policy judges its commands by. While the wall is up
    /// ([`sandboxed`](Self::sandboxed)), the [`walls`](Self::walls) become its walls: hidden
    /// and read-only paths and extra writable ones (a [`FilePolicy`](mux_tool::builtin::FilePolicy)), and the network through
    /// the agent's proxy, to the allowed domains (a [`NetworkPolicy`](mux_tool::builtin::NetworkPolicy); a domain no rule
    /// covers is asked about on the run's face).
    ///
    /// Fails when a wall entry set in code (not loaded from a file, which checks them) is
    /// unusable.
    pub fn bash(&self, sandbox: Sandbox) -> Result<Bash, SandboxError> {
        let bash = Bash::new(sandbox).sandbox_policy(self.bash_policy());
        if !self.sandboxed() {
            return Ok(bash);
        }
        let judge = self.clone();
        let bash = bash.leaves_wall_when(move |command, requested| {
            judge.outside_wall(command, requested).is_some()
        });
        let walls = self.walls()?;
        let network = walls.network_policy().map_err(|err| SandboxError::Entry {
            key: "sandbox.network domains".into(),
            entry: err.to_string(),
            problem: "is not a domain the egress proxy reads".into(),
        })?;
        Ok(bash
            .file_policy(walls.file_policy(self.sandbox().hides_default_secrets(), &self.context))
            .network_policy(network))
    }

    /// Why `command` would run outside the wall, when the wall is up and it would: one of
    /// its commands matches `sandbox.excludedCommands`, or `requested` (the call's
    /// `dangerouslyDisableSandbox`) is set. The `bash` tool runs such a command without the
    /// OS sandbox; every other command of a walled `bash` runs inside it.
    pub fn outside_wall(&self, command: &str, requested: bool) -> Option<crate::Outside> {
        if !self.wall.is_up() {
            return None;
        }
        let prepared = Prepared::new(&Subject::command(command), &self.context);
        WallCheck::new(&self.sandbox(), &prepared, requested, &self.context).outside
    }

    /// The first handle of a scope, if the policy has one.
    pub fn scope(&self, scope: Scope) -> Option<&ScopeRules> {
        self.layers
            .iter()
            .find(|(s, _)| *s == scope)
            .map(|(_, r)| r)
    }

    /// The mode in force: that of the highest scope that sets one.
    pub fn mode(&self) -> Mode {
        self.layers
            .iter()
            .find_map(|(_, rules)| rules.read().mode)
            .unwrap_or_default()
    }

    /// Decides whether a call to `spec` touching `subject` may run. Emits a `tracing` event
    /// (target `mux_permission`) with the verdict, rule and scope.
    pub fn check(&self, spec: &ToolSpec, subject: &Subject) -> GateVerdict {
        self.check_call(spec, subject, &Value::Null)
    }

    /// [`check`](Self::check) for a call with its `input`: a `bash` call whose input sets
    /// [`dangerouslyDisableSandbox`](crate::sandbox::DANGEROUSLY_DISABLE_SANDBOX) (to
    /// anything but `false`) asks to run outside the OS sandbox. Under a wall that is
    /// refused when `sandbox.allowUnsandboxedCommands` is `false`, and asks otherwise, in
    /// every mode; the verdict says so in [`GateVerdict::unsandboxed`](mux_tool::GateVerdict::unsandboxed).
    pub fn check_call(&self, spec: &ToolSpec, subject: &Subject, input: &Value) -> GateVerdict {
        let requested = crate::wall::requests_unsandboxed(spec, input);
        let decision = self.decide(spec, subject, requested);
        tracing::info!(
            target: "mux_permission",
            tool = spec.name.as_str(),
            verdict = decision.verdict.as_str(),
            rule = decision.rule.as_deref().unwrap_or(""),
            scope = decision.scope.map(Scope::as_str).unwrap_or(""),
            reason = decision.reason.as_str(),
            unsandboxed = decision.unsandboxed,
            "permission verdict"
        );
        decision
    }

    fn decide(&self, spec: &ToolSpec, subject: &Subject, requested: bool) -> GateVerdict {
        let prepared = Prepared::new(subject, &self.context);
        let wall = self.wall_check(spec, &prepared, requested);
        let verdict = self.judge(spec, subject, &prepared, wall.as_ref());
        match &wall {
            Some(wall) => wall.finish(verdict, self.mode()),
            None => verdict,
        }
    }

    /// The wall's part in a call to the walled `bash` tool, when the wall is up.
    fn wall_check(
        &self,
        spec: &ToolSpec,
        prepared: &Prepared,
        requested: bool,
    ) -> Option<WallCheck> {
        if !self.wall.is_up() || !crate::wall::is_walled_tool(spec) {
            return None;
        }
        let Prepared::Command(_) = prepared else {
            return None;
        };
        Some(WallCheck::new(
            &self.sandbox(),
            prepared,
            requested,
            &self.context,
        ))
    }

    fn judge(
        &self,
        spec: &ToolSpec,
        subject: &Subject,
        prepared: &Prepared,
        wall: Option<&WallCheck>,
    ) -> GateVerdict {
        let layers = self.read_layers();
        let (mode, mode_scope) = layers
            .iter()
            .find_map(|(scope, rules)| rules.mode.map(|m| (m, Some(*scope))))
            .unwrap_or((Mode::Default, None));
        let managed_only = layers
            .iter()
            .any(|(scope, rules)| *scope == Scope::Managed && rules.managed_rules_only);
        let tool = spec.name.as_str();
        let family = Family::of(spec, subject);
        let applicable = |kind: RuleKind| applicable(&layers, tool, family, kind);
        let deny_rules = applicable(RuleKind::Deny);

        // 1. Deny rules hold in every mode and look at everything the call touches.
        for &(scope, rule) in &deny_rules {
            if prepared.caught_by(rule, &self.context) {
                let reason = match prepared.unreadable() {
                    Some(why) => format!(
                        "denied by the rule `{rule}`: part of the command cannot be read ({why})"
                    ),
                    None => format!("denied by the rule `{rule}`"),
                };
                return GateVerdict::new(Verdict::Deny, reason).by(rule.as_str(), scope);
            }
        }
        // 1b. A command that would leave the OS sandbox, where the settings forbid that.
        if let Some(refused) = wall.and_then(WallCheck::refusal) {
            return refused;
        }
        // 2. Internal addresses (loopback, link-local, cloud metadata): refused in every mode
        //    unless an allow rule names them.
        if let Prepared::Url(_) = prepared {
            let allow_rules = applicable(RuleKind::Allow);
            let allow_rules = allow_rules
                .iter()
                .copied()
                .filter(|(scope, _)| !managed_only || *scope == Scope::Managed);
            if let Some(decision) = crate::address::internal_address(prepared, allow_rules) {
                return match (decision.verdict, mode) {
                    (Verdict::Ask, Mode::DontAsk | Mode::Plan) => {
                        refuse(decision, mode, mode_scope)
                    }
                    _ => decision,
                };
            }
        }
        // 3. Part of the call cannot be read, and a deny rule could match that part: at most
        //    ask, in every mode (bypass included); refused in dontAsk and plan mode.
        if let Some((scope, rule)) = deny_rules
            .iter()
            .copied()
            .find(|(_, rule)| prepared.hides_from(rule))
        {
            let why = prepared
                .hazard()
                .unwrap_or_else(|| "its specifier does not apply to what this call touches".into());
            let decision = GateVerdict::new(
                Verdict::Ask,
                format!("the deny rule `{rule}` cannot be ruled out: {why}"),
            )
            .by(rule.as_str(), scope);
            return match mode {
                Mode::DontAsk | Mode::Plan => refuse(decision, mode, mode_scope),
                _ => decision,
            };
        }
        // 4. Plan mode runs read-only tools only.
        if mode == Mode::Plan && !spec.annotations.read_only {
            return GateVerdict::new(
                Verdict::Deny,
                format!("plan mode allows only read-only tools, and `{tool}` is not one"),
            )
            .in_scope(mode_scope);
        }
        // 5. An edit of a file that governs the agent: only an allow rule naming it may let it
        //    through, in any mode.
        let protected = match family {
            Some(Family::Edit) => {
                prepared.protected(self.layers.iter().filter_map(|(_, rules)| rules.file()))
            }
            _ => None,
        };
        // 6. Ask rules, then constructs no rule can vouch for, then allow rules.
        let asked = applicable(RuleKind::Ask)
            .into_iter()
            .find(|(_, rule)| prepared.caught_by(rule, &self.context))
            .map(|(scope, rule)| {
                GateVerdict::new(Verdict::Ask, format!("the rule `{rule}` asks"))
                    .by(rule.as_str(), scope)
            })
            .or_else(|| {
                prepared.hazard().map(|why| {
                    let ask =
                        GateVerdict::new(Verdict::Ask, format!("no rule can allow this: {why}"));
                    // Under the wall, the analysis' doubt need not ask: the wall bounds it.
                    match wall {
                        Some(wall) => wall.auto_allow(ask),
                        None => ask,
                    }
                })
            });
        let outcome = match asked {
            Some(ask) => ask,
            None => {
                let allow_rules = applicable(RuleKind::Allow);
                let allow_rules = allow_rules.iter().copied().filter(|(scope, rule)| {
                    (!managed_only || *scope == Scope::Managed)
                        && protected.as_ref().is_none_or(|p| p.named_by(rule))
                });
                match (allowed(prepared, allow_rules, &self.context), &protected) {
                    (Some(decision), _) => decision,
                    (None, Some(protected)) => GateVerdict::new(
                        Verdict::Ask,
                        format!(
                            "`{}` is {}; in every mode, only an allow rule that names `{}` lets a call change it",
                            protected.path.display(),
                            protected.what,
                            protected.name
                        ),
                    ),
                    (None, None) => {
                        let decision = unmatched(spec, prepared, mode, mode_scope, self);
                        return match wall {
                            Some(wall) if mode != Mode::Plan => wall.auto_allow(decision),
                            _ => decision,
                        };
                    }
                }
            }
        };
        match (outcome.verdict, mode) {
            (Verdict::Ask, Mode::Bypass) if protected.is_none() => GateVerdict::new(
                Verdict::Allow,
                format!("bypass mode allows what would ask ({})", outcome.reason),
            )
            .in_scope(mode_scope),
            (Verdict::Ask, Mode::DontAsk) => refuse(outcome, mode, mode_scope),
            _ => outcome,
        }
    }

    fn read_layers(&self) -> Vec<(Scope, RwLockReadGuard<'_, RuleSet>)> {
        self.layers
            .iter()
            .map(|(scope, rules)| (*scope, rules.read()))
            .collect()
    }

    /// Whether a search by `spec` must leave `path` (absolute) out of its results: a deny or
    /// ask rule that reaches the tool's family covers it. A search cannot ask about each file
    /// it meets, so what a rule would ask about is withheld too.
    pub fn withholds(&self, spec: &ToolSpec, path: &Path) -> bool {
        let layers = self.read_layers();
        let subject = Subject::Path(path.to_path_buf());
        let family = Family::of(spec, &subject);
        let tool = spec.name.as_str();
        let mut rules = applicable(&layers, tool, family, RuleKind::Deny);
        rules.extend(applicable(&layers, tool, family, RuleKind::Ask));
        if rules.is_empty() {
            return false;
        }
        let prepared = Prepared::new(&subject, &self.context);
        rules
            .iter()
            .any(|(_, rule)| prepared.caught_by(rule, &self.context) || prepared.hides_from(rule))
    }

    /// The filter a search by `spec` applies to what it walks (see [`withholds`](Self::withholds)),
    /// or `None` when no deny or ask rule reaches the tool's family.
    pub fn path_filter(&self, spec: &Arc<ToolSpec>) -> Option<Arc<dyn PathFilter>> {
        self.may_withhold(spec).then(|| {
            Arc::new(Withholder {
                permissions: self.clone(),
                spec: Arc::clone(spec),
            }) as Arc<dyn PathFilter>
        })
    }

    /// Whether any deny or ask rule reaches calls to `spec` with a path subject, so a search
    /// by it has anything to withhold.
    pub fn may_withhold(&self, spec: &ToolSpec) -> bool {
        let layers = self.read_layers();
        let family = Family::of(spec, &Subject::Path(PathBuf::new()));
        let tool = spec.name.as_str();
        [RuleKind::Deny, RuleKind::Ask]
            .into_iter()
            .any(|kind| !applicable(&layers, tool, family, kind).is_empty())
    }
}

/// The rules of `kind`, with their scopes, that reach a call to `tool` of `family`.
fn applicable<'a>(
    layers: &'a [(Scope, RwLockReadGuard<'_, RuleSet>)],
    tool: &str,
    family: Option<Family>,
    kind: RuleKind,
) -> Vec<(Scope, &'a Rule)> {
    layers
        .iter()
        .flat_map(|(scope, rules)| {
            rules
                .list(kind)
                .iter()
                .filter(move |rule| rule.reaches(tool, family, kind))
                .map(move |rule| (*scope, rule))
        })
        .collect()
}

/// A search's view of the policy: the paths it must leave out.
struct Withholder {
    permissions: Permissions,
    spec: Arc<ToolSpec>,
}

impl PathFilter for Withholder {
    fn withholds(&self, path: &Path) -> bool {
        self.permissions.withholds(&self.spec, path)
    }
}

fn refuse(decision: GateVerdict, mode: Mode, mode_scope: Option<Scope>) -> GateVerdict {
    GateVerdict::new(
        Verdict::Deny,
        format!("{mode} mode cannot ask: {}", decision.reason),
    )
    .in_scope(decision.scope.or(mode_scope))
    .with_rule(decision.rule)
}

/// Sets the deciding rule, or clears it.
trait WithRule {
    fn with_rule(self, rule: Option<String>) -> Self;
}

impl WithRule for GateVerdict {
    fn with_rule(mut self, rule: Option<String>) -> Self {
        self.rule = rule;
        self
    }
}

/// The allow decision, if allow rules cover the whole subject.
fn allowed<'a>(
    prepared: &Prepared,
    rules: impl Iterator<Item = (Scope, &'a Rule)> + Clone,
    context: &PathContext,
) -> Option<GateVerdict> {
    let (scope, rule) = match prepared {
        Prepared::Command(analysis) => {
            let mut first = None;
            for index in 0..analysis.commands.len() {
                let found = rules
                    .clone()
                    .find(|(_, rule)| Prepared::command_allowed_by(analysis, index, rule))?;
                first.get_or_insert(found);
            }
            first?
        }
        _ => rules
            .clone()
            .find(|(_, rule)| prepared.allowed_by(rule, context))?,
    };
    Some(
        GateVerdict::new(Verdict::Allow, format!("allowed by the rule `{rule}`"))
            .by(rule.as_str(), scope),
    )
}

/// What the mode makes of a call no rule matched. Under [`Permissions::unset`], read-only
/// tools run in every mode but plan, whatever they touch.
fn unmatched(
    spec: &ToolSpec,
    prepared: &Prepared,
    mode: Mode,
    mode_scope: Option<Scope>,
    policy: &Permissions,
) -> GateVerdict {
    let tool = spec.name.as_str();
    let context = &policy.context;
    let unset = policy.unset;
    let decision = match mode {
        Mode::Default | Mode::AcceptEdits | Mode::DontAsk
            if unset && spec.annotations.read_only =>
        {
            GateVerdict::new(
                Verdict::Allow,
                format!("the read-only tool `{tool}` runs (no permission policy is set)"),
            )
        }
        Mode::Default if unset => GateVerdict::new(
            Verdict::Ask,
            "the tool is not read-only and no permission policy is set",
        ),
        Mode::Bypass => GateVerdict::new(Verdict::Allow, "bypass mode allows calls no rule denies"),
        Mode::Plan => match prepared {
            Prepared::Nothing => GateVerdict::new(
                Verdict::Allow,
                format!("plan mode allows the read-only tool `{tool}`"),
            ),
            Prepared::Path {
                resolved: Ok(real), ..
            } if real.starts_with(context.root_resolved()) => GateVerdict::new(
                Verdict::Allow,
                format!("plan mode allows `{tool}` to read inside the project root"),
            ),
            Prepared::Path { .. } => GateVerdict::new(
                Verdict::Ask,
                format!("plan mode asks before `{tool}` reads outside the project root"),
            ),
            Prepared::Url(_) => GateVerdict::new(
                Verdict::Ask,
                format!("plan mode asks before `{tool}` fetches from a host no rule allows"),
            ),
            Prepared::Command(_) => GateVerdict::new(
                Verdict::Ask,
                format!("plan mode asks before `{tool}` runs a command no rule allows"),
            ),
        },
        Mode::Default | Mode::AcceptEdits | Mode::DontAsk
            if is_read_inside_root(spec, prepared, context) =>
        {
            GateVerdict::new(
                Verdict::Allow,
                format!("the read-only tool `{tool}` runs inside the project root"),
            )
        }
        Mode::DontAsk => GateVerdict::new(
            Verdict::Deny,
            format!("no rule allows this call to `{tool}`, and dontAsk mode cannot ask"),
        ),
        Mode::AcceptEdits if is_edit_inside_root(spec, prepared, context) => GateVerdict::new(
            Verdict::Allow,
            format!("acceptEdits mode allows `{tool}` inside the project root"),
        ),
        Mode::Default | Mode::AcceptEdits => GateVerdict::new(
            Verdict::Ask,
            format!("no rule allows this call to `{tool}`"),
        ),
    };
    decision.in_scope(mode_scope)
}

/// A read-only tool touching nothing, or a path inside the root: what every face runs
/// unasked (as plan mode does).
fn is_read_inside_root(spec: &ToolSpec, prepared: &Prepared, context: &PathContext) -> bool {
    spec.annotations.read_only
        && match prepared {
            Prepared::Nothing => true,
            Prepared::Path {
                resolved: Ok(real), ..
            } => real.starts_with(context.root_resolved()),
            _ => false,
        }
}

fn is_edit_inside_root(spec: &ToolSpec, prepared: &Prepared, context: &PathContext) -> bool {
    match prepared {
        Prepared::Path {
            resolved: Ok(real), ..
        } => !spec.annotations.read_only && real.starts_with(context.root_resolved()),
        _ => false,
    }
}
