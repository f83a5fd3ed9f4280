//! What a holder knows about its lock ([`LockState`]) and what a release
//! did ([`ReleaseStatus`]).

zklock_proto::vocabulary! {
    /// What a holder knows about its lock (protocol doc section 5).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    #[repr(i32)]
    pub enum LockState {
        /// Held, and the session is connected and answering.
        Held = 1, "HELD";
        /// The connection is lost or the server stopped answering: the lock may
        /// still be ours, but that cannot be known; act as if it is not. Goes
        /// back to `HELD` after reconnecting with the same session and finding
        /// our node still ours.
        Suspended = 2, "SUSPENDED";
        /// Lost for good: session expired, our node deleted, the re-check after
        /// a reconnect failed, or the client was closed. Another client may
        /// hold the lock.
        Lost = 3, "LOST";
        /// Not held by this guard or lock object: released by us (or never
        /// acquired).
        Released = 4, "RELEASED";
    }
}

zklock_proto::vocabulary! {
    /// The outcome of a release ([`crate::Guard::release`]).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum ReleaseStatus {
        /// Our node is deleted (or this was an inner reentrant release and the
        /// lock stays held by the handle's other guards).
        Released = 1, "RELEASED";
        /// The delete could not be confirmed (connection trouble); it is retried
        /// in the background until it succeeds or the session ends, or until
        /// ZooKeeper refuses it (`NoAuth`: an ACL without the delete right; a
        /// warning is logged and the node stays until the session ends).
        Pending = 2, "PENDING";
    }
}
