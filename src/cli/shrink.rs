//! `a2a-chaos shrink`: minimise a failing run to a scripted scenario file.
//!
//! `a2a-chaos shrink [FILE.toml] --seed N [--model M] [--routing R] [--invariant I]
//! [--out OUT.toml]`. FILE is an experiment (default: the embedded one) or a scenario; the
//! model and routing default to the file's first. The seed is run, its violation converted
//! to a scenario and minimised ([`crate::shrink`]); the file written fails the same invariant
//! under `a2a-chaos check`. Exit 0 when a file was written, 1 when the seed has nothing to
//! shrink or does not reproduce as a scenario, 2 for unusable input.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::error::InputError;
use crate::experiment::Experiment;
use crate::model::Profile;
use crate::shrink::{self, Request, ShrinkError, Source};

use super::{load, Loaded};

/// The options of `a2a-chaos shrink`.
pub struct ShrinkArgs {
    /// Experiment or scenario; default: the embedded default experiment.
    pub file: Option<PathBuf>,
    /// The failing seed.
    pub seed: u64,
    /// Model; default: the file's first.
    pub model: Option<String>,
    /// Routing; default: the file's first.
    pub routing: Option<String>,
    /// The invariant to keep violated; default: the first the seed violates.
    pub invariant: Option<String>,
    /// Where to write; default `shrunk/<file>-seed-<N>-<model>-<routing>.toml`.
    pub out: Option<PathBuf>,
}

fn check_routing(r: &str) -> Result<(), InputError> {
    if crate::router::strategy(r).is_none() {
        return Err(InputError::new(
            "--routing",
            format!(
                "unknown routing `{r}`; known: {}",
                crate::router::names().join(", ")
            ),
        ));
    }
    Ok(())
}

/// A file-name-safe word.
fn slug(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Runs `a2a-chaos shrink`; returns the exit code (unusable input is the error).
pub fn cmd_shrink(args: ShrinkArgs) -> Result<i32, InputError> {
    let ShrinkArgs {
        file,
        seed,
        model,
        routing,
        invariant,
        out,
    } = args;
    if let Some(i) = &invariant {
        crate::check::validate_names(std::slice::from_ref(i), "--invariant")?;
    }
    // Validated: the name is a built-in invariant's.
    let asked = invariant.as_deref().and_then(crate::check::invariant);
    let loaded = match &file {
        Some(p) => load(p)?,
        None => Loaded::Experiment(Box::new(Experiment::default_experiment())),
    };
    // The stem names the shrunk scenario and its default file: a plain file name.
    let stem = file.as_ref().and_then(|p| p.file_stem()).map_or_else(
        || "default".to_string(),
        |s| crate::names::slug(&s.to_string_lossy()),
    );
    let (source, profile_name, routing) = match loaded {
        Loaded::Experiment(exp) => {
            let profile = match &model {
                Some(m) => Profile::load(m)?,
                None => exp.profiles[0].clone(),
            };
            if crate::faults::any_card_fault(exp.file.faults.rates.keys()) {
                crate::card::check_profile(&profile, "--model")?;
            }
            let routing = routing.unwrap_or_else(|| exp.file.routing[0].clone());
            check_routing(&routing)?;
            let name = profile.name.clone();
            (
                Source::Experiment {
                    exp,
                    profile,
                    routing: routing.clone(),
                },
                name,
                routing,
            )
        }
        Loaded::Scenario(mut script) => {
            if let Some(m) = &model {
                script.file.model = m.clone();
            }
            let profile = Profile::load(&script.file.model)?;
            let routing = routing.unwrap_or_else(|| script.file.routing.clone());
            check_routing(&routing)?;
            script.file.routing = routing.clone();
            let name = profile.name.clone();
            (
                Source::Scenario {
                    script,
                    profile,
                    routing: routing.clone(),
                },
                name,
                routing,
            )
        }
    };
    let mut command = String::from("a2a-chaos shrink");
    if let Some(p) = &file {
        command.push_str(&format!(" {}", p.display()));
    }
    command.push_str(&format!(
        " --seed {seed} --model {profile_name} --routing {routing}"
    ));
    if let Some(i) = &invariant {
        command.push_str(&format!(" --invariant {i}"));
    }
    let name = format!("{stem}-seed-{seed}-{}", slug(&profile_name));
    let out = out.unwrap_or_else(|| {
        Path::new("shrunk").join(format!(
            "{stem}-seed-{seed}-{}-{}.toml",
            slug(&profile_name),
            slug(&routing)
        ))
    });
    println!("{command}");
    let started = Instant::now();
    let result = shrink::shrink(&Request {
        source,
        seed,
        invariant: asked,
        command: command.clone(),
        name,
    });
    let shrunk = match result {
        Ok(s) => s,
        Err(ShrinkError::Input(e)) => return Err(e),
        Err(e) => {
            eprintln!("shrink: {e}");
            return Ok(1);
        }
    };
    println!(
        "seed {seed} violates {}: {}",
        shrunk.invariant, shrunk.original_detail
    );
    for note in &shrunk.notes {
        println!("  {note}");
    }
    println!(
        "shrunk: {} steps -> {} steps (replicas {} -> {}, faults {} -> {}) in {} scenario runs, {:.1} s",
        shrunk.before.steps,
        shrunk.after.steps,
        shrunk.before.replicas,
        shrunk.after.replicas,
        shrunk.before.faults,
        shrunk.after.faults,
        shrunk.runs,
        started.elapsed().as_secs_f64()
    );
    println!("it still violates {}: {}", shrunk.invariant, shrunk.detail);
    let text = shrunk.script.to_toml();
    println!();
    print!("{text}");
    println!();
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            InputError::new(dir.display().to_string(), format!("cannot create: {e}"))
        })?;
    }
    crate::files::write_atomic(&out, text.as_bytes())
        .map_err(|e| InputError::new(out.display().to_string(), format!("cannot write: {e}")))?;
    println!("wrote {}", out.display());
    println!(
        "check it: a2a-chaos check {}   (replace the postmortem placeholder before pinning it)",
        out.display()
    );
    Ok(0)
}
