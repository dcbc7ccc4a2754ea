//! `docs/configuration.md` against the settings the services really take:
//! every flag and environment variable of each service's clap definition has
//! a row naming both, in the section of the service (or of both services when
//! they share it), and no row names a setting that does not exist.

use std::collections::BTreeMap;

use clap::CommandFactory as _;

use crate::polyglot::workspace_root;

const BOTH: &str = "Both services";

/// One setting as clap defines it: flag, variable, default, help.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Setting {
    flag: String,
    env: String,
    default: String,
    help: String,
}

impl Setting {
    /// The row to add to the docs for it.
    fn row(&self) -> String {
        let default = if self.default.is_empty() {
            "—".to_owned()
        } else {
            format!("`{}`", self.default)
        };
        format!(
            "| `{}` | `{}` | {default} | {} |",
            self.flag, self.env, self.help
        )
    }
}

fn settings(command: clap::Command) -> BTreeMap<String, Setting> {
    command
        .get_arguments()
        .filter_map(|arg| {
            let long = arg.get_long()?;
            if long == "help" || long == "version" {
                return None;
            }
            let env = arg
                .get_env()
                .map(|e| e.to_string_lossy().into_owned())
                .unwrap_or_default();
            let default = arg
                .get_default_values()
                .iter()
                .map(|v| v.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(",");
            let help = arg
                .get_help()
                .map(|h| h.to_string().replace('\n', " "))
                .unwrap_or_default();
            let flag = format!("--{long}");
            Some((
                flag.clone(),
                Setting {
                    flag,
                    env,
                    default,
                    help,
                },
            ))
        })
        .collect()
}

/// `(flag, variable)` of each table row, by the `##` section it is in.
fn documented(text: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let mut sections: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            section = title.trim().to_owned();
            continue;
        }
        let cells: Vec<&str> = line.split(" | ").map(str::trim).collect();
        let Some(flag) = cells.first().and_then(|c| c.strip_prefix("| `--")) else {
            continue;
        };
        let flag = format!("--{}", flag.trim_end_matches('`'));
        let env = cells
            .get(1)
            .map(|c| c.trim_matches('`').to_owned())
            .unwrap_or_default();
        sections
            .entry(section.clone())
            .or_default()
            .push((flag, env));
    }
    sections
}

#[test]
fn the_configuration_reference_names_every_setting_of_both_services() {
    let mcp = settings(switchboard_mcp_service::Config::command());
    let runs = settings(switchboard_runs_service::Config::command());
    let mut expected: BTreeMap<&str, Vec<&Setting>> = BTreeMap::new();
    for (flag, setting) in &mcp {
        let section = if runs.get(flag) == Some(setting) {
            BOTH
        } else {
            "mcp-service"
        };
        expected.entry(section).or_default().push(setting);
    }
    for (flag, setting) in &runs {
        if mcp.get(flag) != Some(setting) {
            expected.entry("runs-service").or_default().push(setting);
        }
    }

    let path = workspace_root().join("docs/configuration.md");
    let text = std::fs::read_to_string(&path).expect("docs/configuration.md exists");
    let rows = documented(&text);
    let mut problems = Vec::new();
    for (section, wanted) in &expected {
        let have = rows.get(*section).cloned().unwrap_or_default();
        for setting in wanted {
            if !have.contains(&(setting.flag.clone(), setting.env.clone())) {
                problems.push(format!(
                    "missing or misnamed in \"## {section}\":\n{}",
                    setting.row()
                ));
            }
        }
        for (flag, env) in &have {
            if !wanted.iter().any(|s| &s.flag == flag && &s.env == env) {
                problems.push(format!(
                    "\"## {section}\" names `{flag}` / `{env}`, which that service does not take"
                ));
            }
        }
    }
    for section in rows.keys() {
        if !expected.contains_key(section.as_str()) {
            problems.push(format!(
                "settings under an unknown section \"## {section}\""
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "docs/configuration.md is out of date:\n{}",
        problems.join("\n")
    );
}
