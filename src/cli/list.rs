//! `a2a-chaos list`: the models, routing strategies, faults and invariants.

use crate::check;
use crate::model::Profile;

pub fn cmd_list() {
    println!("models (models/*.toml, or a path to your own profile):");
    for name in crate::model::names() {
        let p = Profile::load(name).expect("built-in profiles load");
        println!("  {name:<26} {}", p.description);
    }
    println!("routing strategies:");
    for name in crate::router::names() {
        println!("  {name}");
    }
    println!("faults ([faults] keys):");
    for (name, fault) in crate::faults::FAULTS {
        println!("  {name:<12} {}", fault.describe());
    }
    println!("invariants:");
    for checker in check::CHECKERS {
        println!(
            "  {:<22} {:<10} {}",
            checker.name(),
            checker.class().word(),
            checker.describe()
        );
    }
}
