//! zklock patch: process-wide state that starts afresh in a child made by
//! `fork()`.
//!
//! The child of a `fork()` has a copy of the parent's memory but only the
//! thread that called `fork()`: threads this crate started are gone, locks
//! they held stay locked, and kernel objects (epoll, eventfd) are shared
//! with the parent. A [`PerProcess`] value is made again, on first use, in
//! every process; the parent's copy is leaked in the child (it cannot be
//! dropped safely there).

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Once;

/// How many `fork()`s led to this process (0 in the process that first
/// used this crate); moved by the `pthread_atfork` child handler.
static FORKS: AtomicUsize = AtomicUsize::new(0);

#[cfg(unix)]
extern "C" fn count_fork() {
    // Async-signal-safe: one atomic add.
    FORKS.fetch_add(1, Ordering::SeqCst);
}

/// This process's generation: different in every process forked after
/// the first call.
pub(crate) fn generation() -> usize {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: registers a handler that only does an atomic add.
        #[cfg(unix)]
        let _ = unsafe { libc::pthread_atfork(None, None, Some(count_fork)) };
    });
    FORKS.load(Ordering::SeqCst)
}

/// A lazily made `&'static T`, made again in every forked child.
pub(crate) struct PerProcess<T: 'static> {
    slot: AtomicPtr<(usize, T)>,
}

impl<T: 'static> PerProcess<T> {
    pub(crate) const fn new() -> Self {
        PerProcess { slot: AtomicPtr::new(std::ptr::null_mut()) }
    }

    /// This process's value, and whether this call made it. `init` may run
    /// on several threads at once; one value wins, the others are dropped.
    pub(crate) fn get_or_init(&'static self, init: impl Fn() -> T) -> (&'static T, bool) {
        let generation = generation();
        loop {
            let current = self.slot.load(Ordering::Acquire);
            // SAFETY: a stored pointer comes from Box::into_raw below and is
            // never freed (values are leaked, so `&'static` holds).
            if let Some((made, value)) = unsafe { current.as_ref() } {
                if *made == generation {
                    return (value, false);
                }
            }
            let fresh = Box::into_raw(Box::new((generation, init())));
            match self.slot.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire) {
                // The previous value (the parent's, or none) is leaked.
                // SAFETY: `fresh` is now stored and never freed.
                Ok(_) => return (unsafe { &(*fresh).1 }, true),
                // Another thread stored one: drop ours and use that.
                // SAFETY: `fresh` was not shared.
                Err(_) => drop(unsafe { Box::from_raw(fresh) }),
            }
        }
    }
}
