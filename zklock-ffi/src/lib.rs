//! # zklock-ffi: the C ABI of zklock
//!
//! This crate builds `libzklock.so` (SONAME `libzklock.so.0`) and
//! `libzklock.a`; `include/zklock.h` is generated from it by cbindgen (the
//! doc comments here become the header's comments). It contains no lock
//! logic: every function converts its arguments, calls `zklock-core` and
//! converts the result.
//!
//! Conventions (house style, "The C ABI"):
//! - names `zklock_<object>_<verb>`, opaque handles with `_new` / `_free`,
//!   `_free(NULL)` is a no-op;
//! - fallible functions return a [`zklock_code`](error::zklock_code), write their outputs only on
//!   success and take an optional last `zklock_error **err`;
//! - every exported function catches panics (they become `ZKLOCK_INTERNAL`
//!   or a documented default) and checks its pointers for NULL.

#![allow(non_camel_case_types)]

pub mod cancel;
pub mod client;
pub mod error;
pub mod fenced;
pub mod guard;
pub mod listener;
pub mod lock;
pub mod logger;
pub mod metrics;
pub mod multi;
pub mod participants;
mod util;
pub mod vocabulary;

use std::ffi::c_char;

/// The version of the zklock library, e.g. `"0.1.0"` (a static string;
/// do not free it).
///
/// # Threads
/// Any thread.
#[no_mangle]
pub extern "C" fn zklock_version() -> *const c_char {
    static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr().cast()
}
