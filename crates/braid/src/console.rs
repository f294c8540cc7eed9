//! Lines for the terminal, written the way Unix tools write them.
//!
//! Rust ignores SIGPIPE so that a socket or a child's pipe whose reader went
//! away fails with EPIPE instead of killing the program; braid relies on that
//! for its streams and its ssh children. `println!` then panics when stdout is
//! a pipe closed early (`braid send ... --json | head -1`), and a panic on a
//! side thread leaves the rest waiting for ever. Here a closed stdout or
//! stderr ends the whole program by SIGPIPE, as it ends `cat`: quietly, with
//! the status a shell expects (141), and nothing half-done is reported as done.

use std::fmt;
use std::io::{self, ErrorKind, Write};

/// Writes a line to stdout; a reader that went away ends the program.
pub fn out(args: fmt::Arguments<'_>) {
    let mut w = io::stdout().lock();
    settle(w.write_fmt(args).and_then(|()| w.flush()));
}

/// Writes a line to stderr; a reader that went away ends the program.
pub fn err(args: fmt::Arguments<'_>) {
    let mut w = io::stderr().lock();
    settle(w.write_fmt(args).and_then(|()| w.flush()));
}

/// What to do with a console write's outcome: a broken pipe ends the program;
/// any other failure (a full disk behind a redirect) loses the line and
/// nothing else, since there is nowhere left to say so.
pub fn settle(r: io::Result<()>) {
    if let Err(e) = r {
        if e.kind() == ErrorKind::BrokenPipe {
            die_of_sigpipe();
        }
    }
}

/// Ends the process by SIGPIPE, as the kernel would have had braid not
/// ignored it.
pub fn die_of_sigpipe() -> ! {
    // SAFETY: signal and raise are called with valid constants; restoring the
    // default disposition and raising the signal ends the process here.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Only reached were the signal blocked: the same status a shell reports.
    std::process::exit(128 + libc::SIGPIPE)
}

/// `println!` that ends the program quietly when stdout's reader is gone.
#[macro_export]
macro_rules! outln {
    () => { $crate::console::out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::out(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprintln!` that ends the program quietly when stderr's reader is gone.
#[macro_export]
macro_rules! errln {
    () => { $crate::console::err(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::err(format_args!("{}\n", format_args!($($t)*))) };
}
