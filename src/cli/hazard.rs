//! `live --hazard NAME [--model M]`: a hazard's scenario chosen by the hazard, with the
//! expectations of the model the user names, or none.
//!
//! The hazard scenarios are files `tests/scenarios/<hazard>-<model>.toml` (and
//! `tests/fidelity/`): one script per hazard, copied per model with that model's `[expect]`.
//! Running one of those files on your own server holds it to the promises of the model in
//! the file's name (the `-reference` file promises message dedup, which a2a-sdk never made).
//! Here the hazard is named instead (`h03-retry-after-lost-reply`, or just `h03` when it has
//! one scenario), and:
//!
//! - with `--model M` and a file of the hazard for `M`: that file, as written (its script,
//!   M's profile and M's `[expect]`);
//! - with `--model M` and no such file: the hazard's script (from its `-reference` file, else
//!   its first), judged as model `M` with no `[expect]` of anyone's: every invariant must
//!   hold, and something must be exercised;
//! - without `--model`: the same script and no `[expect]`, judged on the profile of the file
//!   it came from with its message-dedup promise taken away (a server nobody described
//!   promised none, so `dedup-contract` stays `unknown`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::model::{DedupScope, Profile};
use crate::scenario::{Expect, Script};

/// Where hazard scenarios live, relative to the repository root.
const DIRS: &[&str] = &["tests/scenarios", "tests/fidelity"];

/// A hazard's scenario, ready to run.
pub struct Chosen {
    /// The file its script came from.
    pub file: PathBuf,
    pub script: Script,
    pub profile: Profile,
    /// Whose expectations it is held to, in words, for the output.
    pub expectations: String,
}

/// One hazard's scenario files, by the model each names, as read.
type Files = BTreeMap<String, (PathBuf, Script)>;

/// Every hazard scenario under the repository: slug (the file name less its model) → its
/// files.
fn catalogue(root: &Path) -> BTreeMap<String, Files> {
    let mut out: BTreeMap<String, Files> = BTreeMap::new();
    for dir in DIRS {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(stem) = path
                .file_stem()
                .and_then(|s| s.to_str())
                .filter(|_| path.extension().is_some_and(|e| e == "toml"))
                .filter(|s| s.starts_with('h') && s[1..].starts_with(|c: char| c.is_ascii_digit()))
            else {
                continue;
            };
            let Ok(script) = Script::load(&path) else {
                continue;
            };
            let model = script.file.model.clone();
            let slug = stem
                .strip_suffix(&format!("-{model}"))
                .unwrap_or(stem)
                .to_string();
            out.entry(slug)
                .or_default()
                .entry(model)
                .or_insert((path, script));
        }
    }
    out
}

/// The scenario `live --hazard name [--model model]` runs (see the module's header).
pub fn choose(root: &Path, name: &str, model: Option<&str>) -> Result<Chosen, InputError> {
    let mut all = catalogue(root);
    let matching: Vec<&String> = all
        .keys()
        .filter(|slug| *slug == name || slug.starts_with(&format!("{name}-")))
        .collect();
    let slug = match matching.as_slice() {
        [one] => (*one).clone(),
        [] => {
            let hazards: Vec<&str> = all
                .keys()
                .filter_map(|s| s.split('-').next())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            return Err(InputError::new(
                "--hazard",
                format!(
                    "no hazard scenario is named `{name}`; hazards: {}",
                    hazards.join(", ")
                ),
            ));
        }
        many => {
            let names: Vec<&str> = many.iter().map(|s| s.as_str()).collect();
            return Err(InputError::new(
                "--hazard",
                format!(
                    "`{name}` names {} scenarios; name one: {}",
                    many.len(),
                    names.join(", ")
                ),
            ));
        }
    };
    let mut files = all.remove(&slug).expect("a matching slug is catalogued");
    if let Some((path, script)) = model.and_then(|m| files.remove(m)) {
        let profile = Profile::load(&script.file.model)?;
        return Ok(Chosen {
            file: path,
            expectations: format!("the [expect] of {}", script.file.model),
            script,
            profile,
        });
    }
    let known: Vec<String> = files.keys().cloned().collect();
    let (source, mut script) = match files.remove("reference") {
        Some(file) => file,
        None => files
            .into_values()
            .next()
            .expect("a catalogued hazard has a file"),
    };
    script.file.expect = Expect::default();
    let (profile, expectations) = match model {
        Some(m) => {
            let profile = Profile::load(m)?;
            script.file.model = profile.name.clone();
            (
                profile,
                format!(
                    "model {m}, which has no [expect] for this hazard (those with one: {}): every invariant must hold",
                    known.join(", ")
                ),
            )
        }
        None => {
            let mut profile = Profile::load(&script.file.model)?;
            profile.dedup.scope = DedupScope::None;
            (
                profile,
                "no model's expectations (no --model): every invariant must hold; no dedup promise"
                    .to_string(),
            )
        }
    };
    Ok(Chosen {
        file: source,
        script,
        profile,
        expectations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> &'static Path {
        Path::new(env!("CARGO_MANIFEST_DIR"))
    }

    #[test]
    fn a_hazard_with_a_file_for_the_model_runs_that_file() {
        let c = choose(root(), "h03-retry-after-lost-reply", Some("reference")).unwrap();
        assert!(c
            .file
            .ends_with("h03-retry-after-lost-reply-reference.toml"));
        assert!(
            !c.script.file.expect.violations.is_empty() || c.expectations.contains("reference")
        );
    }

    #[test]
    fn without_a_model_nobody_elses_expectations_or_dedup_promise_apply() {
        let c = choose(root(), "h03-retry-after-lost-reply", None).unwrap();
        assert_eq!(c.script.file.expect.violations, Vec::<String>::new());
        assert_eq!(c.profile.dedup.scope, DedupScope::None);
        let c = choose(root(), "h03-retry-after-lost-reply", Some("mastra")).unwrap();
        assert_eq!(c.script.file.model, "mastra");
        assert!(c.script.file.expect.violations.is_empty());
        assert!(c.expectations.contains("no [expect]"));
    }

    #[test]
    fn an_ambiguous_or_unknown_hazard_is_refused_with_the_names() {
        let e = choose(root(), "h03", None)
            .err()
            .expect("h03 has several")
            .to_string();
        assert!(e.contains("h03-retry-after-lost-reply"), "{e}");
        let e = choose(root(), "h99", None)
            .err()
            .expect("no h99")
            .to_string();
        assert!(e.contains("hazards: h01"), "{e}");
    }
}
