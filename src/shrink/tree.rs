//! Steps as a tree: leaf paths, removal, normalisation.

use crate::scenario::Step;

/// Removes empty containers, unwraps one-element ones and flattens nested sequences.
pub fn normalise(steps: Vec<Step>) -> Vec<Step> {
    let mut out = Vec::new();
    for s in steps {
        match s {
            Step::Sequence(inner) => out.extend(normalise(inner)),
            Step::Concurrent(inner) => {
                let mut inner: Vec<Step> = inner
                    .into_iter()
                    .filter_map(|s| match s {
                        Step::Sequence(v) => {
                            let mut v = normalise(v);
                            match v.len() {
                                0 => None,
                                1 => v.pop(),
                                _ => Some(Step::Sequence(v)),
                            }
                        }
                        Step::Concurrent(v) => {
                            let v = normalise(vec![Step::Concurrent(v)]);
                            (!v.is_empty()).then_some(Step::Sequence(v))
                        }
                        other => Some(other),
                    })
                    .collect();
                match inner.len() {
                    0 => {}
                    1 => {
                        let only = inner.pop().expect("one");
                        out.extend(normalise(vec![only]));
                    }
                    _ => out.push(Step::Concurrent(inner)),
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Paths to every leaf, in order.
pub fn leaves(steps: &[Step]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    fn walk(steps: &[Step], prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        for (i, s) in steps.iter().enumerate() {
            prefix.push(i);
            match s {
                Step::Concurrent(v) | Step::Sequence(v) => walk(v, prefix, out),
                _ => out.push(prefix.clone()),
            }
            prefix.pop();
        }
    }
    walk(steps, &mut Vec::new(), &mut out);
    out
}

/// The leaf at `path`.
pub fn get<'a>(steps: &'a [Step], path: &[usize]) -> &'a Step {
    let s = &steps[path[0]];
    match (s, path.len()) {
        (_, 1) => s,
        (Step::Concurrent(v) | Step::Sequence(v), _) => get(v, &path[1..]),
        _ => s,
    }
}

/// A copy with the leaf at `path` replaced (`None` removes it), normalised.
pub fn replace(steps: &[Step], path: &[usize], with: Option<Step>) -> Vec<Step> {
    fn go(steps: &mut Vec<Step>, path: &[usize], with: Option<Step>) {
        if path.len() == 1 {
            match with {
                Some(s) => steps[path[0]] = s,
                None => {
                    steps.remove(path[0]);
                }
            }
            return;
        }
        if let Step::Concurrent(v) | Step::Sequence(v) = &mut steps[path[0]] {
            go(v, &path[1..], with);
        }
    }
    let mut out = steps.to_vec();
    go(&mut out, path, with);
    normalise(out)
}

/// A copy with every leaf mapped.
pub fn map(steps: &[Step], f: &mut dyn FnMut(&Step) -> Step) -> Vec<Step> {
    steps
        .iter()
        .map(|s| match s {
            Step::Concurrent(v) => Step::Concurrent(map(v, f)),
            Step::Sequence(v) => Step::Sequence(map(v, f)),
            other => f(other),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::kill;

    #[test]
    fn removing_a_leaf_unwraps_what_is_left() {
        let k = |i: usize| Step::Fault(kill::Kill(crate::host::Host::Replica(i)).into());
        let steps = vec![Step::Concurrent(vec![
            Step::Sequence(vec![Step::UntilMs(5), k(0)]),
            Step::Sequence(vec![k(1)]),
        ])];
        let paths = leaves(&steps);
        assert_eq!(paths.len(), 3);
        let out = replace(&steps, &paths[2], None);
        assert_eq!(out, vec![Step::UntilMs(5), k(0)]);
    }
}
