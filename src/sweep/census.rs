//! What a sharded sweep's folder holds: its `shard-K-of-N/` folders, grouped into shard
//! sets by count, and the state of each shard (done, unfinished, or not there at all).
//!
//! A shard folder is *done* when it holds its manifest (`shard.json`, written last, after
//! `runs.csv`), *unfinished* when it holds only a journal (the task was killed, cancelled or
//! is still running), and known by its name alone when it holds neither. The journal's first
//! line names the configuration's fingerprint and the shard
//! ([`crate::sweep::journal::head`]), so an unfinished shard is placed without its manifest.
//!
//! `merge` reads the census to report what is missing before it writes anything, and
//! `--shard auto` ([`crate::sweep::batch`]) reads it to check the batch system's word
//! against the shards already on disk.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::InputError;
use crate::sweep::journal;
use crate::sweep::shard::{Manifest, Shard, MANIFEST};

/// One shard folder found on disk.
#[derive(Debug, Clone)]
pub struct Found {
    /// The folder.
    pub dir: PathBuf,
    /// Which shard it is: from the manifest, else the journal, else the folder's name.
    pub shard: Shard,
    /// The experiment's name, when the manifest or journal says.
    pub experiment: Option<String>,
    /// The configuration's fingerprint, when the manifest or journal says.
    pub fingerprint: Option<String>,
    /// The manifest, once the shard is done.
    pub manifest: Option<Manifest>,
    /// Runs in a journal in the folder (an unfinished run, or a rerun under way).
    pub journaled: Option<u64>,
}

impl Found {
    /// Whether the shard finished (its manifest is written).
    pub fn done(&self) -> bool {
        self.manifest.is_some()
    }

    /// The shard's state in a few words, for reports.
    pub fn state(&self) -> String {
        match (&self.manifest, self.journaled) {
            (Some(m), None) => format!("done ({} runs)", m.runs),
            (Some(m), Some(j)) => format!(
                "done ({} runs; a journal of {j} runs beside it: a rerun is under way or was stopped)",
                m.runs
            ),
            (None, Some(j)) => format!("unfinished ({j} runs in its journal)"),
            (None, None) => "unfinished (nothing written yet)".to_string(),
        }
    }
}

/// Reads one folder: `Ok(None)` when it is not a shard folder (no manifest, no journal,
/// and not named `shard-K-of-N`). A manifest that cannot be read is an error.
pub fn inspect(dir: &Path) -> Result<Option<Found>, InputError> {
    let journal = journal::head(dir);
    let journaled = journal.as_ref().map(|h| h.runs);
    if dir.join(MANIFEST).exists() {
        let m = Manifest::read(dir)?;
        return Ok(Some(Found {
            dir: dir.to_path_buf(),
            shard: m.shard,
            experiment: Some(m.experiment.clone()),
            fingerprint: Some(m.fingerprint.clone()),
            manifest: Some(m),
            journaled,
        }));
    }
    if let Some(h) = journal {
        // The key is `<fingerprint>/<K>/<N>` for a shard, `<fingerprint>/all` otherwise.
        let shard = h
            .key
            .split_once('/')
            .and_then(|(fp, rest)| Some((fp, Shard::parse(rest).ok()?)));
        if let Some((fp, shard)) = shard {
            return Ok(Some(Found {
                dir: dir.to_path_buf(),
                shard,
                experiment: Some(h.experiment),
                fingerprint: Some(fp.to_string()),
                manifest: None,
                journaled,
            }));
        }
    }
    let named = dir
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(Shard::from_dir_name);
    Ok(named.map(|shard| Found {
        dir: dir.to_path_buf(),
        shard,
        experiment: None,
        fingerprint: None,
        manifest: None,
        journaled,
    }))
}

/// The shard folders (`shard-*`) inside a sweep's folder, sorted by count, then index.
/// A folder that does not exist holds none.
pub fn scan(sweep: &Path) -> Result<Vec<Found>, InputError> {
    let entries = match std::fs::read_dir(sweep) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(InputError::new(
                sweep.display().to_string(),
                format!("cannot read: {e}"),
            ))
        }
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("shard-") && e.path().is_dir())
        .map(|e| e.path())
        .collect();
    dirs.sort();
    let mut found = Vec::new();
    for d in dirs {
        if let Some(f) = inspect(&d)? {
            found.push(f);
        }
    }
    found.sort_by_key(|f| (f.shard.count, f.shard.index));
    Ok(found)
}

/// The shards of one count: one way the sweep was cut.
#[derive(Debug, Clone)]
pub struct Set {
    /// The shard count.
    pub count: u64,
    /// The shards found, by index.
    pub shards: BTreeMap<u64, Found>,
}

impl Set {
    /// Indexes with no folder at all.
    pub fn missing(&self) -> Vec<u64> {
        (0..self.count)
            .filter(|k| !self.shards.contains_key(k))
            .collect()
    }

    /// Indexes whose folder holds no manifest yet.
    pub fn unfinished(&self) -> Vec<u64> {
        self.shards
            .values()
            .filter(|f| !f.done())
            .map(|f| f.shard.index)
            .collect()
    }

    /// Indexes not done, missing or unfinished, in order.
    pub fn open(&self) -> Vec<u64> {
        (0..self.count)
            .filter(|k| !self.shards.get(k).is_some_and(Found::done))
            .collect()
    }

    /// Whether every shard is done.
    pub fn complete(&self) -> bool {
        self.open().is_empty()
    }

    /// The distinct fingerprints its shards name.
    pub fn fingerprints(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .shards
            .values()
            .filter_map(|f| f.fingerprint.as_deref())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The first task id of the Slurm array that ran the set, as its manifests recorded it
    /// (`None` when none did, or they disagree).
    pub fn array_first(&self) -> Option<u64> {
        let mut firsts = self
            .shards
            .values()
            .filter_map(|f| f.manifest.as_ref()?.shard.array_first);
        let first = firsts.next()?;
        firsts.all(|f| f == first).then_some(first)
    }

    /// One line per shard, for reports: `shard-1-of-4  unfinished (12 runs in its journal)`.
    pub fn report(&self) -> Vec<String> {
        (0..self.count)
            .map(|k| match self.shards.get(&k) {
                Some(f) => format!("{}  {}", f.dir.display(), f.state()),
                None => format!("shard-{k}-of-{}  missing", self.count),
            })
            .collect()
    }
}

/// Groups shard folders into sets by count. The same shard twice is an error.
pub fn group(found: Vec<Found>) -> Result<BTreeMap<u64, Set>, InputError> {
    let mut sets: BTreeMap<u64, Set> = BTreeMap::new();
    for f in found {
        let set = sets.entry(f.shard.count).or_insert_with(|| Set {
            count: f.shard.count,
            shards: BTreeMap::new(),
        });
        if let Some(other) = set.shards.get(&f.shard.index) {
            return Err(InputError::new(
                f.dir.display().to_string(),
                format!(
                    "shard {} is given twice ({} and {})",
                    f.shard,
                    other.dir.display(),
                    f.dir.display()
                ),
            ));
        }
        set.shards.insert(f.shard.index, f);
    }
    Ok(sets)
}

/// A list of indexes as `1, 3`.
pub fn list(indexes: &[u64]) -> String {
    indexes
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
