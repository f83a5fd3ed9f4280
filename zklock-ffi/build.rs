//! Gives the shared library its SONAME: `libzklock.so.0` (ABI major version 0),
//! and keeps the linker's section-boundary symbols (`__start_*`/`__stop_*`
//! of the SASL mechanism registry) out of its exports: rustc already exports
//! only the `#[no_mangle]` C API (`zklock_*`), which run.sh checks against
//! include/zklock.h.
//! `make install` installs `libzklock.so.0.1.0` with the symlinks
//! `libzklock.so.0` (the SONAME, used at run time) and `libzklock.so` (used
//! by the linker).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "freebsd" || os == "netbsd" || os == "openbsd" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libzklock.so.0");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,start-stop-visibility=hidden");
    }
}
