//! Delta debugging: the smallest subsequence that still fails, found with few tests.

/// Delta debugging (Zeller's ddmin): a 1-minimal subsequence of `items` for which `fails`
/// holds, given that it holds for all of them.
pub fn ddmin<T: Clone>(items: Vec<T>, fails: &mut dyn FnMut(&[T]) -> bool) -> Vec<T> {
    let mut items = items;
    let mut n = 2usize;
    while items.len() >= 2 {
        let len = items.len();
        let n_now = n.min(len);
        let chunk = len.div_ceil(n_now);
        let ranges: Vec<(usize, usize)> = (0..len)
            .step_by(chunk)
            .map(|s| (s, (s + chunk).min(len)))
            .collect();
        let mut reduced = false;
        for &(a, b) in &ranges {
            let part = items[a..b].to_vec();
            if fails(&part) {
                items = part;
                n = 2;
                reduced = true;
                break;
            }
        }
        if !reduced && ranges.len() > 2 {
            for &(a, b) in &ranges {
                let mut rest = items[..a].to_vec();
                rest.extend_from_slice(&items[b..]);
                if fails(&rest) {
                    items = rest;
                    n = (ranges.len() - 1).max(2);
                    reduced = true;
                    break;
                }
            }
        }
        if !reduced {
            if n_now >= len {
                break;
            }
            n = (n_now * 2).min(len);
        }
    }
    if items.len() == 1 && fails(&[]) {
        items.clear();
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_the_two_items_that_matter() {
        let items: Vec<u32> = (0..40).collect();
        let mut tests = 0;
        let out = ddmin(items, &mut |s| {
            tests += 1;
            s.contains(&7) && s.contains(&31)
        });
        assert_eq!(out, vec![7, 31]);
        assert!(tests < 80, "{tests} tests");
    }
}
