//! The wall clock that `zklock-bench load`'s runner and its driver
//! processes share (one machine, so one clock).

/// The current time in microseconds since the Unix epoch: the drivers'
/// grant times and the runner's marks (release, kill) are on this clock.
pub(crate) fn unix_us() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}
