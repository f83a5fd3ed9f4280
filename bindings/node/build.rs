//! Sets the linker flags a Node addon needs (undefined napi_* symbols).
fn main() {
    napi_build::setup();
}
