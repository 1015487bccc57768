// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

fn main() { println!("cargo:rustc-env=HELLO_FROM_BUILD=42"); }
