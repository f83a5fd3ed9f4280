//! What a holder knows about its lock ([`LockState`]) and what a release
//! did ([`ReleaseStatus`]).

/// What a holder knows about its lock (protocol doc section 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum LockState {
    /// Held, and the session is connected and answering.
    Held = 1,
    /// The connection is lost or the server stopped answering: the lock may
    /// still be ours, but that cannot be known; act as if it is not. Goes
    /// back to `Held` after reconnecting with the same session and finding
    /// our node still ours.
    Suspended = 2,
    /// Lost for good: session expired, our node deleted, or the re-check
    /// after a reconnect failed. Another client may hold the lock.
    Lost = 3,
    /// Released by us.
    Released = 4,
}

/// The outcome of [`crate::Guard::release`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseStatus {
    /// Our node is deleted (or this was an inner reentrant release and the
    /// lock stays held by the handle's other guards).
    Released,
    /// The delete could not be confirmed (connection trouble); it is retried
    /// in the background until it succeeds or the session ends, or until
    /// ZooKeeper refuses it (`NoAuth`: an ACL without the delete right; a
    /// warning is logged and the node stays until the session ends).
    Pending,
}

impl LockState {
    /// The state's name, the same in every language: `"HELD"`,
    /// `"SUSPENDED"`, `"LOST"`, `"RELEASED"` (the front ends show these;
    /// C has the enum `zklock_state` of the same names).
    pub fn name(self) -> &'static str {
        match self {
            LockState::Held => "HELD",
            LockState::Suspended => "SUSPENDED",
            LockState::Lost => "LOST",
            LockState::Released => "RELEASED",
        }
    }
}

impl ReleaseStatus {
    /// `"RELEASED"` or `"PENDING"`.
    pub fn name(self) -> &'static str {
        match self {
            ReleaseStatus::Released => "RELEASED",
            ReleaseStatus::Pending => "PENDING",
        }
    }
}
