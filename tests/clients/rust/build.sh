#!/usr/bin/env bash
# Builds the kube-rs test client (the reflector of this folder) once per machine with the
# machine's cargo (Rust 1.89 or newer, kube's minimum; Debian 12's own is older), crates from
# crates.io at the versions of Cargo.lock. Cargo's home (the crates), its target folder and the
# built binary live under ~/.cache/kube-cache-proxy/rust; the binary sits in a folder named by
# the kube version, the compiler's version and a hash of this folder's sources, so a second run
# costs a second. Prints that folder on stdout (the last line): FOLDER/kube-rs-informer is the
# client.
#
#   KCP_RUST_CACHE=DIR   the cache root (default ~/.cache/kube-cache-proxy/rust)
#   KCP_BUILD_JOBS=N     cargo's jobs (default 2)
set -euo pipefail
cd "$(dirname "$0")"

command -v cargo >/dev/null || PATH="$HOME/.cargo/bin:$PATH"   # rustup's, when PATH lacks it
command -v cargo >/dev/null && command -v rustc >/dev/null ||
  { echo "kube-rs build: no cargo/rustc (Rust 1.89 or newer)" >&2; exit 1; }
cache=${KCP_RUST_CACHE:-$HOME/.cache/kube-cache-proxy/rust}
kube=$(sed -n 's/^kube = { version = "=\([^"]*\)".*/\1/p' Cargo.toml)
rustc=$(rustc --version | cut -d' ' -f2)
out="$cache/kube-rs-$kube-rustc-$rustc-$( (cat Cargo.toml Cargo.lock; find src -type f | sort | xargs cat) | sha256sum | cut -c1-12)"
[ -f "$out/.built" ] && { echo "$out"; exit 0; }

SECONDS=0
echo "building the kube-rs $kube test client into $out (first build on this machine: a few minutes)" >&2
export CARGO_HOME="$cache/cargo" CARGO_TARGET_DIR="$cache/target"
cargo build --locked --quiet -j "${KCP_BUILD_JOBS:-2}" >&2
rm -rf "$out" && mkdir -p "$out"
cp "$CARGO_TARGET_DIR/debug/kube-rs-informer" "$out/"
touch "$out/.built"
echo "kube-rs test client built in $SECONDS s" >&2
echo "$out"
