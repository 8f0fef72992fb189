//! Issue 15, class 7: an address is the same however it is spelled. Hosts are read as the
//! fetcher's URL parser reads them, and loopback, link-local, cloud metadata and unspecified
//! addresses are denied in every mode, bypass included, unless an allow rule names them.

use mux_permission::{
    Mode, PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict, builtin,
};
use mux_tool::Subject;

const ALLOW: Verdict = Verdict::Allow;
const ASK: Verdict = Verdict::Ask;
const DENY: Verdict = Verdict::Deny;

fn policy(name: &str) -> Permissions {
    let rules = match name {
        // Nothing but the mode that allows everything.
        "bypass" => RuleSet::new().with_mode(Mode::Bypass),
        // Two internal hosts named by allow rules, in the default mode.
        "named" => RuleSet::new()
            .with_allow("WebFetch(domain:localhost)")
            .unwrap()
            .with_allow("WebFetch(domain:0x7f.1)")
            .unwrap(),
        // A rule allowing every fetch does not name an internal host.
        "any" => RuleSet::new().with_allow("WebFetch").unwrap(),
        // A deny rule spelled one way catches every spelling; it beats an allow rule.
        "denied" => RuleSet::new()
            .with_mode(Mode::Bypass)
            .with_allow("WebFetch(domain:0xA9FEA9FE)")
            .unwrap()
            .with_deny("WebFetch(domain:2852039166)")
            .unwrap(),
        "plan" => RuleSet::new().with_mode(Mode::Plan),
        "dontAsk" => RuleSet::new()
            .with_mode(Mode::DontAsk)
            .with_allow("WebFetch(domain:[::1])")
            .unwrap(),
        other => panic!("no policy {other}"),
    };
    Permissions::builder(PathContext::new("."))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build()
}

#[rustfmt::skip]
const TABLE: &[(&str, &str, Verdict)] = &[
    // Cloud metadata, 169.254.169.254, every way the URL parser accepts it.
    ("http://169.254.169.254/latest/meta-data/",     "bypass", DENY),
    ("http://2852039166/",                           "bypass", DENY),
    ("http://0xA9FEA9FE/",                           "bypass", DENY),
    ("http://0xa9.0xfe.0xa9.0xfe/",                  "bypass", DENY),
    ("http://0251.0376.0251.0376/",                  "bypass", DENY),
    ("http://169.254.43518/",                        "bypass", DENY),
    ("http://169.16689662/",                         "bypass", DENY),
    ("http://[::ffff:169.254.169.254]/",             "bypass", DENY),
    ("http://[::ffff:a9fe:a9fe]/",                   "bypass", DENY),
    ("http://[64:ff9b::a9fe:a9fe]/",                 "bypass", DENY),
    ("http://169.254.169.254./",                     "bypass", DENY),
    ("http://%31%36%39.254.169.254/",                "bypass", DENY),
    ("http://example.com@169.254.169.254/",          "bypass", DENY),
    ("http://example.com:80@169.254.169.254:80/",    "bypass", DENY),
    ("http://169.254.169.254\\@example.com/",        "bypass", DENY),
    ("HTTP://169.254.169.254:80/",                   "bypass", DENY),
    ("http:/169.254.169.254/",                       "bypass", DENY),
    ("http:\\\\169.254.169.254\\",                   "bypass", DENY),
    ("  http://169.254.169.254/  ",                  "bypass", DENY),
    ("http://metadata.google.internal/computeMetadata/v1/", "bypass", DENY),
    ("http://METADATA.GOOGLE.INTERNAL./",            "bypass", DENY),
    ("http://[fd00:ec2::254]/",                      "bypass", DENY),
    ("http://100.100.100.200/",                      "bypass", DENY),
    // Link-local.
    ("http://169.254.1.1/",                          "bypass", DENY),
    ("http://[fe80::1]/",                            "bypass", DENY),
    // Loopback.
    ("http://127.0.0.1:8080/",                       "bypass", DENY),
    ("http://127.1/",                                "bypass", DENY),
    ("http://0x7f000001/",                           "bypass", DENY),
    ("http://017700000001/",                         "bypass", DENY),
    ("http://2130706433/",                           "bypass", DENY),
    ("http://127.000.000.001/",                      "bypass", DENY),
    ("http://\u{2460}\u{2461}\u{2466}.0.0.1/",       "bypass", DENY),
    ("http://127.0.0.1%2f@example.com@127.0.0.1/",   "bypass", DENY),
    ("http://[::1]/",                                "bypass", DENY),
    ("http://[0:0:0:0:0:0:0:1]/",                    "bypass", DENY),
    ("http://[::ffff:127.0.0.1]/",                   "bypass", DENY),
    ("http://localhost/",                            "bypass", DENY),
    ("http://LocalHost./",                           "bypass", DENY),
    ("http://api.localhost/",                        "bypass", DENY),
    // Unspecified.
    ("http://0.0.0.0/",                              "bypass", DENY),
    ("http://0/",                                    "bypass", DENY),
    ("http://[::]/",                                 "bypass", DENY),
    // Not internal: bypass allows.
    ("https://example.com/",                         "bypass", ALLOW),
    ("http://169.255.0.1/",                          "bypass", ALLOW),
    ("http://[2001:db8::1]/",                        "bypass", ALLOW),
    ("http://localhost.example.com/",                "bypass", ALLOW),
    ("http://127.0.0.1%2f@example.com/",             "bypass", ALLOW),
    // A host the parser cannot read (a zone id) cannot be ruled out: ask, even in bypass.
    ("http://[fe80::1%25eth0]/",                     "bypass", ASK),
    ("http://[::ffff:127.0.0.1/",                    "bypass", ASK),
    // Named by an allow rule: allowed, in each spelling of that host only.
    ("http://localhost:3000/",                       "named",  ALLOW),
    ("http://LOCALHOST./",                           "named",  ALLOW),
    ("http://127.0.0.1/",                            "named",  ALLOW),
    ("http://2130706433/",                           "named",  ALLOW),
    ("http://[::ffff:7f00:1]/",                      "named",  ALLOW),
    ("http://127.0.0.2/",                            "named",  DENY),
    ("http://[::1]/",                                "named",  DENY),
    ("http://api.localhost/",                        "named",  DENY),
    ("http://169.254.169.254/",                      "named",  DENY),
    ("https://example.com/",                         "named",  ASK),
    // `WebFetch` alone names no host.
    ("http://127.0.0.1/",                            "any",    DENY),
    ("http://0251.0376.0251.0376/",                  "any",    DENY),
    ("https://example.com/",                         "any",    ALLOW),
    // Deny rules match the normalised host, whatever their spelling and the URL's.
    ("http://169.254.169.254/",                      "denied", DENY),
    ("http://[::ffff:a9fe:a9fe]/",                   "denied", DENY),
    ("http://169.254.43518/",                        "denied", DENY),
    // Plan and dontAsk: refused, and an unreadable host cannot ask.
    ("http://127.0.0.1/",                            "plan",   DENY),
    ("http://[fe80::1%25eth0]/",                     "plan",   DENY),
    ("https://example.com/",                         "plan",   ASK),   // plan mode asks before an unallowed host
    ("http://[::1]:8080/",                           "dontAsk", ALLOW),
    ("http://[0::1]/",                               "dontAsk", ALLOW),
    ("http://localhost/",                            "dontAsk", DENY),
];

#[test]
fn internal_addresses_are_denied_however_spelled() {
    let fetch = builtin::spec("WebFetch").unwrap();
    let mut failures = Vec::new();
    for (url, name, expected) in TABLE {
        let decision = policy(name).check(&fetch, &Subject::url(*url));
        if decision.verdict != *expected {
            failures.push(format!(
                "{url:?} under {name}: expected {expected:?}, got {:?} ({})",
                decision.verdict, decision.reason
            ));
        }
    }
    let denied = TABLE.iter().filter(|row| row.2 == DENY).count();
    assert!(TABLE.len() >= 30 && denied >= 30, "the table shrank");
    assert!(
        failures.is_empty(),
        "{} of {} rows failed:\n{}",
        failures.len(),
        TABLE.len(),
        failures.join("\n")
    );
}

#[test]
fn the_reason_names_the_kind_of_address() {
    let fetch = builtin::spec("WebFetch").unwrap();
    let decision = policy("bypass").check(&fetch, &Subject::url("http://0xA9FEA9FE/"));
    assert_eq!(decision.verdict, DENY);
    assert!(
        decision
            .reason
            .contains("`169.254.169.254` is a cloud metadata address"),
        "{}",
        decision.reason
    );
    assert_eq!(decision.rule, None);
}

/// Every spelling the URL parser accepts of one IPv4 address.
fn spellings(ip: std::net::Ipv4Addr) -> Vec<String> {
    let n = u32::from(ip);
    let [a, b, c, d] = ip.octets();
    vec![
        format!("{ip}"),
        format!("{n}"),
        format!("0x{n:x}"),
        format!("0X{n:08X}"),
        format!("0{n:o}"),
        format!("0x{a:x}.0x{b:x}.0x{c:x}.0x{d:x}"),
        format!("0{a:o}.0{b:o}.0{c:o}.0{d:o}"),
        format!("{a}.{}", n & 0x00ff_ffff),
        format!("{a}.{b}.{}", n & 0xffff),
        format!("{ip}."),
        format!("[::ffff:{ip}]"),
        format!("[::ffff:{:x}:{:x}]", n >> 16, n & 0xffff),
        format!("user:pass@{ip}:8080"),
    ]
}

#[test]
fn every_spelling_of_an_address_gets_the_verdict_of_the_address() {
    use mux_permission::host_of;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let fetch = builtin::spec("WebFetch").unwrap();
    let bypass = policy("bypass");
    // Half the cases from the internal ranges, half from anywhere.
    let internal = prop_oneof![
        (0u8..=255, 0u8..=255, 0u8..=255).prop_map(|(b, c, d)| [127, b, c, d]),
        (0u8..=255, 0u8..=255).prop_map(|(c, d)| [169, 254, c, d]),
        (0u8..=255, 0u8..=255, 0u8..=255).prop_map(|(b, c, d)| [0, b, c, d]),
    ];
    let address = prop_oneof![internal, any::<[u8; 4]>()].prop_map(std::net::Ipv4Addr::from);
    let mut runner = TestRunner::new(Config::with_cases(500));
    runner
        .run(&address, |ip| {
            let expected = if mux_tool::address::classify_ip(ip.into()).is_some() {
                DENY
            } else {
                ALLOW
            };
            for spelling in spellings(ip) {
                let url = format!("http://{spelling}/x");
                prop_assert_eq!(host_of(&url), Some(ip.to_string()), "{}", url);
                let verdict = bypass.check(&fetch, &Subject::url(&url)).verdict;
                prop_assert_eq!(verdict, expected, "{}", url);
            }
            Ok(())
        })
        .unwrap();
}
