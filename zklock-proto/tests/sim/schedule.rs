//! Seeds, the scheduler's recorded choices, replay and shrinking.
//!
//! Every choice the simulator makes (the scenario, which step comes next,
//! which fault) is one `choose(n)` here, drawn from a seeded generator or
//! replayed from a list; either way it is recorded, so a failing run is its
//! list of choices. Choice 0 is always the benign one (no fault, the first
//! thing that can make progress), and a list that runs out reads as zeros:
//! shrinking drops chunks of the list and turns choices into 0 (delta
//! debugging over the choices) while the run still fails the same way.

use std::time::Instant;

/// Where choices come from.
enum Source {
    Seed(fastrand::Rng),
    List(Vec<u32>, usize),
}

/// The scheduler's source of choices, recording each.
pub struct Chooser {
    source: Source,
    /// Every choice made so far, reduced to its range.
    pub log: Vec<u32>,
}

impl Chooser {
    /// Choices drawn from `seed`.
    pub fn from_seed(seed: u64) -> Chooser {
        Chooser { source: Source::Seed(fastrand::Rng::with_seed(seed)), log: Vec::new() }
    }

    /// Choices replayed from `list` (zeros once it runs out; each taken
    /// modulo its range).
    pub fn from_list(list: Vec<u32>) -> Chooser {
        Chooser { source: Source::List(list, 0), log: Vec::new() }
    }

    /// A choice in `0..n` (`n` > 0).
    pub fn choose(&mut self, n: usize) -> usize {
        let n = n.max(1) as u32;
        let v = match &mut self.source {
            Source::Seed(rng) => rng.u32(..n),
            Source::List(list, pos) => {
                let v = list.get(*pos).copied().unwrap_or(0) % n;
                *pos += 1;
                v
            },
        };
        self.log.push(v);
        v as usize
    }

    /// True with about `percent` % chance; choice 0 is false.
    pub fn roll(&mut self, percent: u32) -> bool {
        self.choose(100) as u32 >= 100 - percent.min(100)
    }

    /// A value in `lo..=hi`.
    pub fn between(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.choose((hi - lo + 1) as usize) as u32
    }
}

/// Shrinks `choices`, on which `fails` says yes, to a shorter list on which
/// it still says yes: drop chunks (halving their size), then turn single
/// choices into 0. `fails` returns the choices the failing run consumed
/// (its canonical list), or `None` when it passes. Stops at `deadline`.
pub fn shrink(mut best: Vec<u32>, deadline: Instant, mut fails: impl FnMut(&[u32]) -> Option<Vec<u32>>) -> Vec<u32> {
    let mut chunk = best.len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        while i < best.len() {
            if Instant::now() > deadline {
                return best;
            }
            let end = (i + chunk).min(best.len());
            let mut cand = best[..i].to_vec();
            cand.extend_from_slice(&best[end..]);
            match fails(&cand) {
                Some(c) if c.len() < best.len() => best = c,
                _ => i += chunk,
            }
        }
        if chunk == 1 {
            break;
        }
        chunk = chunk.div_ceil(2);
    }
    let mut i = 0;
    while i < best.len() {
        if Instant::now() > deadline {
            break;
        }
        if best[i] != 0 {
            let mut cand = best.clone();
            cand[i] = 0;
            if let Some(c) = fails(&cand) {
                if c.len() <= best.len() {
                    best = c;
                }
            }
        }
        i += 1;
    }
    best
}
