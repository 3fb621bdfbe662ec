//! The architecture as a test: the top-level modules of `src/` form layers, and code may
//! only use the layers below its own. Arrows point down; no circle between modules.
//!
//! Bottom to top (a module may use any module listed before it):
//!
//! | layer | modules |
//! |---|---|
//! | base | `seed`, `engine` (the event engine: hosts on one paused runtime, its network), `host` (host ids, parsed once at the input edge), `activity` (work in flight), `error`, `input` (the bounded reader of every input file), `files` (output files never written through a link; the output folder's lock), `names` (names that become file names), `logging`, `net`, `faults` (fault kinds as data), `trace`, `protocol`, `model`, `auth` |
//! | hosts | `buggify`, `store`, `ground` (ledger, webhook, push egress), `card`, `router`, `replica`, `client` |
//! | drive | `workload`, `scenario`, `world` (the turmoil world and its driver) |
//! | judge | `check` |
//! | runs | `experiment`, `sim` (the front door) |
//! | tools | `sweep`, `output`, `shrink`, `strategies`, `live`, `fidelity`, `bench` |
//! | shell | `cli` |
//!
//! A use inside a `#[cfg(test)]` module, or in a comment, does not count. When this test
//! fails it names the file, the line and the two modules: move the item the lower module
//! needs further down (as `protocol` holds the ports and the agent card that the router,
//! the card publisher and the replicas share), or the code further up.
//!
//! The docs are held to the code the same way: every link in a Markdown file to a file of
//! the repository, or to one of its headings, must resolve
//! (`every_local_markdown_link_resolves`).

use std::path::Path;

/// Every top-level module, bottom to top.
const ORDER: &[&str] = &[
    "seed",
    "engine",
    "host",
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

// ------------------------------------------------------------------ the docs' links

/// Every Markdown file of the repository (not under `target/`, `.git/` or `node_modules/`).
fn markdown_files(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the repository is readable") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !matches!(name, "target" | ".git" | "node_modules") {
                markdown_files(&path, files);
            }
        } else if name.ends_with(".md") {
            files.push(path);
        }
    }
}

/// The lines of a Markdown file outside fenced code blocks, with their numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// A heading's anchor as GitHub writes it: lower case, only letters, digits, spaces, `-` and
/// `_` kept (a link in the heading counts as its text), spaces as `-`.
fn anchor_of(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](target)` counts as `text`.
    while let Some(open) = rest.find('[') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](").and_then(|close| {
            let end = after[close..].find(')')? + close;
            Some((close, end))
        }) {
            Some((close, end)) => {
                text.push_str(&after[..close]);
                rest = &after[end + 1..];
            }
            None => {
                text.push('[');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated one gets `-1`, `-2`, ...).
fn anchors(text: &str) -> std::collections::BTreeSet<String> {
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut out = std::collections::BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let anchor = anchor_of(&line[hashes..]);
            let n = seen.entry(anchor.clone()).or_default();
            out.insert(if *n == 0 {
                anchor
            } else {
                format!("{anchor}-{n}")
            });
            *n += 1;
        }
    }
    out
}

/// The targets of the inline links `[text](target)` on a line, outside code spans.
fn link_targets(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut in_code = false;
    let mut i = 0;
    let bytes = line.as_bytes();
    while i < bytes.len() {
        match bytes[i] {
            b'`' => in_code = !in_code,
            b']' if !in_code && bytes.get(i + 1) == Some(&b'(') => {
                let start = i + 2;
                if let Some(len) = line[start..].find(')') {
                    let target = &line[start..start + len];
                    if !target.contains(char::is_whitespace) {
                        out.push(target);
                    }
                    i = start + len;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Every link in the Markdown files to a file of the repository, or to a heading of one,
/// resolves: moving a section or renaming a heading cannot leave a dead link behind.
#[test]
fn every_local_markdown_link_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    markdown_files(root, &mut files);
    files.sort();
    assert!(
        files.iter().any(|f| f.ends_with("docs/README.md")),
        "{files:?}"
    );
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("a Markdown file is readable");
        for (n, line) in prose_lines(&text) {
            for target in link_targets(line) {
                let scheme = target.split_once(':').is_some_and(|(s, _)| {
                    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphabetic())
                });
                if scheme {
                    continue;
                }
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let linked = if path.is_empty() {
                    file.clone()
                } else {
                    file.parent().expect("a file has a folder").join(path)
                };
                let at = format!("{}:{n}", file.strip_prefix(root).unwrap_or(file).display());
                if !linked.exists() {
                    broken.push(format!("{at}: no file {target}"));
                } else if !anchor.is_empty() {
                    let headings = std::fs::read_to_string(&linked)
                        .map(|t| anchors(&t))
                        .unwrap_or_default();
                    if !headings.contains(anchor) {
                        broken.push(format!("{at}: no heading #{anchor} in {path}"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "dead links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_are_written_as_github_writes_them() {
    assert_eq!(
        anchor_of(" Real sockets: `serve`, `live` and `fidelity`"),
        "real-sockets-serve-live-and-fidelity"
    );
    assert_eq!(
        anchor_of(" Hazards × models, as measured by the pinned scenarios"),
        "hazards--models-as-measured-by-the-pinned-scenarios"
    );
    assert_eq!(
        anchor_of(" Your own task store in the a2a-python peer: `--store module:Class`"),
        "your-own-task-store-in-the-a2a-python-peer---store-moduleclass"
    );
    assert_eq!(
        link_targets("see [a](b.md#c), `[d](e)` and [f](https://x)"),
        ["b.md#c", "https://x"]
    );
}
