fn main() { println!("cargo:rustc-env=HELLO_FROM_BUILD=42"); }
