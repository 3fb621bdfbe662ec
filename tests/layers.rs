//! The architecture as a test: the top-level modules of `src/` form layers, and code may
//! only use the layers below its own. Arrows point down; no circle between modules.
//!
//! Bottom to top (a module may use any module listed before it):
//!
//! | layer | modules |
//! |---|---|
//! | base | `seed`, `activity` (work in flight), `error`, `input` (the bounded reader of every input file), `files` (output files never written through a link; the output folder's lock), `names` (names that become file names), `logging`, `net`, `faults` (fault kinds as data), `trace`, `protocol`, `model`, `auth` |
//! | hosts | `buggify`, `store`, `ground` (ledger, webhook, push egress), `card`, `router`, `replica`, `client` |
//! | drive | `workload`, `scenario`, `world` (the turmoil world and its driver) |
//! | judge | `check` |
//! | runs | `experiment`, `sim` (the front door) |
//! | tools | `sweep`, `output`, `shrink`, `strategies`, `live`, `bench` |
//! | shell | `cli` |
//!
//! A use inside a `#[cfg(test)]` module, or in a comment, does not count. When this test
//! fails it names the file, the line and the two modules: move the item the lower module
//! needs further down (as `protocol` holds the ports and the agent card that the router,
//! the card publisher and the replicas share), or the code further up.

use std::path::Path;

/// Every top-level module, bottom to top.
const ORDER: &[&str] = &[
    "seed",
    "activity",
    "error",
    "input",
    "files",
    "names",
    "logging",
    "net",
    "faults",
    "trace",
    "protocol",
    "model",
    "auth",
    "buggify",
    "store",
    "ground",
    "card",
    "router",
    "replica",
    "client",
    "workload",
    "scenario",
    "world",
    "check",
    "experiment",
    "sim",
    "sweep",
    "output",
    "shrink",
    "strategies",
    "live",
    "fidelity",
    "bench",
    "cli",
];

fn rank(module: &str) -> Option<usize> {
    ORDER.iter().position(|m| *m == module)
}

/// `crate::x` paths on a line of code (not in a comment).
fn uses(line: &str) -> Vec<&str> {
    let code = match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    };
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(after.len());
        out.push(&after[..name_len]);
        rest = &after[name_len..];
    }
    out
}

fn visit(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            visit(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    visit(&src, &mut files);
    files.sort();
    let mut broken = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for file in &files {
        let rel = file.strip_prefix(&src).expect("under src/");
        let top = rel
            .components()
            .next()
            .expect("a path")
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let me = rank(&top).unwrap_or_else(|| {
            panic!(
                "src/{top} is not in the layer order of tests/layers.rs: add it where it belongs"
            )
        });
        seen.insert(top.clone());
        let text = std::fs::read_to_string(file).expect("a source file");
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            if line.trim_start().starts_with("//") {
                continue;
            }
            for used in uses(line) {
                if used == top {
                    continue;
                }
                let Some(theirs) = rank(used) else {
                    broken.push(format!(
                        "{}:{}: unknown module crate::{used}",
                        rel.display(),
                        n + 1
                    ));
                    continue;
                };
                if theirs > me {
                    broken.push(format!(
                        "{}:{}: {top} uses crate::{used}, a higher layer",
                        rel.display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        broken.is_empty(),
        "layer violations:\n{}",
        broken.join("\n")
    );
    let unused: Vec<&&str> = ORDER.iter().filter(|m| !seen.contains(**m)).collect();
    assert!(
        unused.is_empty(),
        "modules in the order but not in src/: {unused:?}"
    );
}

#[test]
fn no_source_file_is_over_800_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    visit(&src, &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).ok()?.lines().count();
            (n > 800).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these: {long:?}");
}
