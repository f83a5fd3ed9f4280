//! [`Hold`]: what every held thing offers, whatever made it: a [`Guard`]
//! (a lock, a read or write side, an election's leadership, a semaphore's
//! lease) and a [`MultiGuard`] (several locks held all or none). A front end
//! writes its wrapper of a held thing once, over this trait, instead of once
//! per kind.

use std::future::Future;
use std::pin::Pin;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::fenced::{FencedOp, FencedResult};
use crate::lock::Guard;
use crate::multi::MultiGuard;
use crate::state::{LockState, ReleaseStatus};

/// A boxed future of a [`Hold`] call: `Send`, owns what it needs.
pub type HoldFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// What a held thing offers: each method is the inherent method of the
/// same name of [`Guard`] and [`MultiGuard`] (see them for what each does
/// and its errors); a multi-guard's answer covers every member. The
/// futures are boxed so that the trait can be used as `dyn Hold`.
/// Implemented by the core's two held things only.
pub trait Hold: Send + Sync + 'static {
    /// The guards held: this one for a [`Guard`], one per member (in the
    /// multi-lock's order) for a [`MultiGuard`].
    fn guards(&self) -> &[Guard];

    /// Succeeds only while everything is safely held ([`Guard::check`]).
    ///
    /// # Errors
    /// As [`Guard::check`] (for a multi-guard: the first member's error,
    /// naming its path).
    fn check(&self) -> Result<()>;

    /// The state ([`Guard::state`], [`MultiGuard::state`]).
    fn state(&self) -> LockState;

    /// Resolves once no longer safely held ([`Guard::lost`]).
    fn lost(&self) -> HoldFuture<Error>;

    /// Releases, blocking the calling thread ([`Guard::release`]).
    ///
    /// # Errors
    /// As [`Guard::release`].
    fn release(&self) -> Result<ReleaseStatus>;

    /// [`Hold::release`] as a future.
    fn release_async(&self) -> HoldFuture<Result<ReleaseStatus>>;

    /// A fenced write ([`Guard::fenced_multi`]), blocking.
    ///
    /// # Errors
    /// As [`Guard::fenced_multi`].
    fn fenced_multi(&self, ops: &[FencedOp]) -> Result<Vec<FencedResult>>;

    /// [`Hold::fenced_multi`] as a future (started when called).
    fn fenced_multi_async(&self, ops: Vec<FencedOp>) -> HoldFuture<Result<Vec<FencedResult>>>;

    /// The fencing tokens, one per guard of [`Hold::guards`].
    fn fencing_tokens(&self) -> Vec<u64> {
        self.guards().iter().map(Guard::fencing_token).collect()
    }

    /// The client it was acquired through (for [`Client::spawn_then`]).
    fn client(&self) -> &Client {
        self.guards()[0].client()
    }
}

impl Hold for Guard {
    fn guards(&self) -> &[Guard] {
        std::slice::from_ref(self)
    }
    fn check(&self) -> Result<()> {
        Guard::check(self)
    }
    fn state(&self) -> LockState {
        Guard::state(self)
    }
    fn lost(&self) -> HoldFuture<Error> {
        Box::pin(Guard::lost(self))
    }
    fn release(&self) -> Result<ReleaseStatus> {
        Guard::release(self)
    }
    fn release_async(&self) -> HoldFuture<Result<ReleaseStatus>> {
        Box::pin(Guard::release_async(self))
    }
    fn fenced_multi(&self, ops: &[FencedOp]) -> Result<Vec<FencedResult>> {
        Guard::fenced_multi(self, ops)
    }
    fn fenced_multi_async(&self, ops: Vec<FencedOp>) -> HoldFuture<Result<Vec<FencedResult>>> {
        Box::pin(Guard::fenced_multi_async(self, ops))
    }
}

impl Hold for MultiGuard {
    fn guards(&self) -> &[Guard] {
        MultiGuard::guards(self)
    }
    fn check(&self) -> Result<()> {
        MultiGuard::check(self)
    }
    fn state(&self) -> LockState {
        MultiGuard::state(self)
    }
    fn lost(&self) -> HoldFuture<Error> {
        Box::pin(MultiGuard::lost(self))
    }
    fn release(&self) -> Result<ReleaseStatus> {
        MultiGuard::release(self)
    }
    fn release_async(&self) -> HoldFuture<Result<ReleaseStatus>> {
        Box::pin(MultiGuard::release_async(self))
    }
    fn fenced_multi(&self, ops: &[FencedOp]) -> Result<Vec<FencedResult>> {
        MultiGuard::fenced_multi(self, ops)
    }
    fn fenced_multi_async(&self, ops: Vec<FencedOp>) -> HoldFuture<Result<Vec<FencedResult>>> {
        Box::pin(MultiGuard::fenced_multi_async(self, ops))
    }
}
