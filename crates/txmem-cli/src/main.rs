//! `txmem`: the command of the txmem toolkit (see the `txmem_cli` library).

use std::process::ExitCode;

fn main() -> ExitCode {
    txmem_cli::run()
}
