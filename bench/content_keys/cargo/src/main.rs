// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

cfg_if::cfg_if! {
    if #[cfg(unix)] { fn os() -> &'static str { "unix" } } else { fn os() -> &'static str { "other" } }
}
fn main() { println!("{} {}", os(), env!("HELLO_FROM_BUILD")); }
