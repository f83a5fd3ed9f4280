//! Callbacks that can be taken back: the listeners of a lock's states and
//! of a client's connection ([`Subscription`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// A registered callback.
pub(crate) type Listener<T> = Arc<dyn Fn(T) + Send + Sync>;

/// The callbacks registered on one thing (a held lock, a client).
pub(crate) struct Listeners<T> {
    next: AtomicU64,
    list: Mutex<Vec<(u64, Listener<T>)>>,
}

impl<T> Default for Listeners<T> {
    fn default() -> Self {
        Listeners { next: AtomicU64::new(1), list: Mutex::new(Vec::new()) }
    }
}

impl<T: 'static> Listeners<T> {
    /// Registers `cb`; the subscription takes it back.
    pub(crate) fn add(self: &Arc<Self>, cb: Listener<T>) -> Subscription {
        self.add_with_id(cb).0
    }

    /// [`Listeners::add`], also giving the callback's id.
    pub(crate) fn add_with_id(self: &Arc<Self>, cb: Listener<T>) -> (Subscription, u64) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut list) = self.list.lock() {
            list.push((id, cb));
        }
        let weak: Weak<dyn Remove> = Arc::downgrade(self) as Weak<dyn Remove>;
        (Subscription { id, from: weak }, id)
    }

    /// Tells every callback registered now `value`, each through `post`
    /// (the client's event thread); a callback cancelled before its turn
    /// comes is skipped.
    pub(crate) fn notify(self: &Arc<Self>, value: T, post: impl Fn(Box<dyn FnOnce() + Send>))
    where
        T: Copy + Send,
    {
        let list: Vec<(u64, Listener<T>)> = self.list.lock().map(|l| l.clone()).unwrap_or_default();
        for (id, cb) in list {
            self.post_one(id, cb, value, &post);
        }
    }

    /// Tells the callback `id` (`cb`) `value` through `post`, unless it is
    /// cancelled before its turn.
    pub(crate) fn post_one(
        self: &Arc<Self>,
        id: u64,
        cb: Listener<T>,
        value: T,
        post: &impl Fn(Box<dyn FnOnce() + Send>),
    ) where
        T: Copy + Send,
    {
        let me = Arc::downgrade(self);
        post(Box::new(move || {
            if me.upgrade().is_some_and(|l| l.has(id)) {
                cb(value);
            }
        }));
    }

    fn has(&self, id: u64) -> bool {
        self.list.lock().is_ok_and(|l| l.iter().any(|(i, _)| *i == id))
    }

    /// Forgets every callback.
    pub(crate) fn clear(&self) {
        if let Ok(mut list) = self.list.lock() {
            list.clear();
        }
    }
}

/// What a [`Subscription`] needs of its [`Listeners`], whatever their type.
trait Remove: Send + Sync {
    fn remove(&self, id: u64);
}

impl<T: 'static> Remove for Listeners<T> {
    fn remove(&self, id: u64) {
        if let Ok(mut list) = self.list.lock() {
            list.retain(|(i, _)| *i != id);
        }
    }
}

/// A callback registered with [`crate::Guard::on_state_change`] or
/// [`crate::Client::on_connection_state`]: [`Subscription::cancel`] takes
/// it back. Dropping the subscription does not (keep the callback by
/// ignoring it). `Send + Sync`, cheap to clone.
#[derive(Clone)]
pub struct Subscription {
    id: u64,
    from: Weak<dyn Remove>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").field("id", &self.id).finish()
    }
}

impl Subscription {
    /// Takes the callback back: it is not called after this returns (a
    /// call running on the event thread at that moment finishes).
    /// Idempotent; any thread, the callback itself included; never blocks.
    pub fn cancel(&self) {
        if let Some(listeners) = self.from.upgrade() {
            listeners.remove(self.id);
        }
    }
}
