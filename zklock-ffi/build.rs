//! Gives the shared library its SONAME: `libzklock.so.0` (ABI major version 0).
//! `make install` installs `libzklock.so.0.1.0` with the symlinks
//! `libzklock.so.0` (the SONAME, used at run time) and `libzklock.so` (used
//! by the linker).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "freebsd" || os == "netbsd" || os == "openbsd" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libzklock.so.0");
    }
}
