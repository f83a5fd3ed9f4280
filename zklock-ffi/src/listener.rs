//! `zklock_subscription`: a client's connection listener
//! (`zklock_client_on_connection_state`) or a guard's state callback
//! (`zklock_guard_on_state_change`), taken back by freeing it.

use std::ffi::c_void;
use std::sync::Arc;

use zklock_core::{ConnectionState, Subscription};

use crate::client::zklock_client;
use crate::error::{zklock_code, zklock_error};
use crate::guard::Gate;
use crate::util::{arg_ref, call, null_arg, out_arg, UserData};

pub use crate::vocabulary::zklock_connection_state;

/// A connection listener: `userdata` as given to
/// `zklock_client_on_connection_state`, `state` the change. It runs on the
/// client's event thread, one callback at a time, in order (with the
/// locks' state callbacks); it must not block for long and must not unwind.
/// It may call zklock functions, `zklock_subscription_free` of its own
/// subscription included.
pub type zklock_connection_cb = Option<unsafe extern "C" fn(userdata: *mut c_void, state: zklock_connection_state)>;

/// A registered connection listener or state callback;
/// `zklock_subscription_free` takes it back. Thread-safe.
pub struct zklock_subscription {
    sub: Subscription,
    gate: Arc<Gate>,
}

impl zklock_subscription {
    /// A new subscription for the caller to free: `sub` taken back and
    /// `gate` closed by `zklock_subscription_free`.
    pub(crate) fn new(sub: Subscription, gate: Arc<Gate>) -> *mut zklock_subscription {
        Box::into_raw(Box::new(zklock_subscription { sub, gate }))
    }
}

/// Registers `cb` to be called with `userdata` on every change of the
/// client's connection (see `zklock_connection_state`): lost (suspended),
/// back with the same session, session lost, new session. `*out` receives
/// the subscription: `zklock_subscription_free` takes the listener back.
/// Not called once the client is closed.
///
/// # Errors
/// `ZKLOCK_INVALID_ARGUMENT` for a NULL `client`, `cb` or `out`.
///
/// # Safety
/// `client` is NULL or a live client; `userdata` must stay usable by `cb`
/// on the event thread until the subscription is freed; `out` and `err`
/// are NULL or valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn zklock_client_on_connection_state(
    client: *const zklock_client,
    cb: zklock_connection_cb,
    userdata: *mut c_void,
    out: *mut *mut zklock_subscription,
    err: *mut *mut zklock_error,
) -> zklock_code {
    const F: &str = "zklock_client_on_connection_state";
    // SAFETY: pointers as documented (caller's contract).
    unsafe {
        call(F, err, || {
            let client = arg_ref(client, F, "client")?;
            let cb = cb.ok_or_else(|| null_arg(F, "cb"))?;
            let out = out_arg(out, F, "out")?;
            let gate = Arc::new(Gate::default());
            let sub = client.inner.on_connection_state(listener(cb, UserData(userdata), gate.clone()));
            out.write(zklock_subscription::new(sub, gate));
            Ok(())
        })
    }
}

/// The core listener that calls the C callback through its gate.
fn listener(
    cb: unsafe extern "C" fn(*mut c_void, zklock_connection_state),
    userdata: UserData,
    gate: Arc<Gate>,
) -> impl Fn(ConnectionState) + Send + Sync + 'static {
    move |state| {
        let state = zklock_connection_state::from(state);
        // SAFETY: cb and userdata as promised by the caller of
        // zklock_client_on_connection_state; the gate keeps this from
        // running after zklock_subscription_free.
        gate.run(|| unsafe { cb(userdata.get(), state) });
    }
}

/// Takes the listener back and frees the subscription: the callback is
/// never called after this returns (it waits for a call in progress on
/// another thread; from the callback itself it returns at once), so its
/// `userdata` may be freed then. NULL: nothing.
///
/// # Safety
/// `sub` is NULL or a subscription not yet freed.
#[no_mangle]
pub unsafe extern "C" fn zklock_subscription_free(sub: *mut zklock_subscription) {
    if sub.is_null() {
        return;
    }
    // SAFETY: `sub` came from Box::into_raw and is freed once (caller's
    // contract).
    let sub = unsafe { Box::from_raw(sub) };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sub.sub.cancel();
        sub.gate.close();
    }));
}
