//! Rebuild the core when the web UI changes: release builds embed `ui/dist` (rust-embed),
//! and cargo does not otherwise notice files added to it. While `ui/dist` is missing cargo
//! reruns this script on every build (build the UI once: `cd ui && npm run build`).
fn main() {
    println!("cargo:rerun-if-changed=../../ui/dist");
    println!("cargo:rerun-if-changed=build.rs");
}
