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

/// A failing run, as the shrinker sees it: the choices it consumed, and
/// where in them each scheduler step began.
pub struct Failing {
    /// The choices consumed.
    pub choices: Vec<u32>,
    /// The index of each step's first choice.
    pub step_starts: Vec<usize>,
}

/// Shrinks a failing list of choices to a shorter one on which `fails`
/// still says yes (it returns the failing run, or `None` when it passes):
/// drop runs of whole scheduler steps (halving their number), then chunks
/// of choices, then make single choices 0 or half. Stops at `deadline`.
pub fn shrink(first: Failing, deadline: Instant, mut fails: impl FnMut(&[u32]) -> Option<Failing>) -> Vec<u32> {
    let mut best = first;
    // Rounds of the passes below until one gains nothing.
    loop {
        let before = best.choices.clone();
        best = shrink_round(best, deadline, &mut fails);
        if best.choices == before || Instant::now() > deadline {
            return best.choices;
        }
    }
}

/// Drops runs of the units that `starts` cuts the choices into (each unit
/// from its start to the next one's), halving the run's length down to one
/// unit, while `fails` still says yes; and whether `deadline` came first.
fn drop_chunks(
    first: Failing,
    deadline: Instant,
    fails: &mut impl FnMut(&[u32]) -> Option<Failing>,
    starts: impl Fn(&Failing) -> Vec<usize>,
) -> (Failing, bool) {
    let mut best = first;
    let mut chunk = starts(&best).len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        loop {
            let cuts = starts(&best);
            if i + chunk > cuts.len() {
                break;
            }
            if Instant::now() > deadline {
                return (best, true);
            }
            let from = cuts[i];
            let to = cuts.get(i + chunk).copied().unwrap_or(best.choices.len());
            let mut cand = best.choices[..from].to_vec();
            cand.extend_from_slice(&best.choices[to..]);
            match fails(&cand) {
                Some(f) if f.choices.len() < best.choices.len() => best = f,
                _ => i += chunk,
            }
        }
        if chunk == 1 {
            return (best, false);
        }
        chunk = chunk.div_ceil(2);
    }
}

/// One round of [`shrink`]'s passes.
fn shrink_round(first: Failing, deadline: Instant, fails: &mut impl FnMut(&[u32]) -> Option<Failing>) -> Failing {
    // Whole steps (later steps keep their choices), then chunks of choices.
    let (mut best, out_of_time) = drop_chunks(first, deadline, fails, |f| f.step_starts.clone());
    if out_of_time {
        return best;
    }
    let (shorter, out_of_time) = drop_chunks(best, deadline, fails, |f| (0..f.choices.len()).collect());
    best = shorter;
    if out_of_time {
        return best;
    }
    // Smaller values: 0 (no fault, the first step) or half.
    let mut i = 0;
    while i < best.choices.len() {
        if Instant::now() > deadline {
            break;
        }
        let v = best.choices[i];
        for smaller in [0, v / 2] {
            if smaller >= v {
                continue;
            }
            let mut cand = best.choices.clone();
            cand[i] = smaller;
            if let Some(f) = fails(&cand) {
                if f.choices.len() <= best.choices.len() {
                    best = f;
                    break;
                }
            }
        }
        i += 1;
    }
    best
}
