//! What the engine's loopback tests share: a `braid serve` of the library on
//! a free port, in a thread of the test's own.
#![allow(dead_code)] // each test file uses its own part

use std::path::Path;
use std::thread;

use braid::cancel::Cancel;
use braid::session::server::{self, Server};
use braid::session::{SocketOptions, Token};
use braid::telemetry::Output;

pub const TOKEN: &str = "loopback-test-token";

/// A server below `root` on `listen`, with `limits`, allowing unsealed
/// sessions where `allow_plain`; its address.
pub fn serve_with(root: &Path, listen: &str, limits: server::Limits, allow_plain: bool) -> String {
    let srv = Server::bind(server::Config {
        listen: listen.parse().unwrap(),
        root: root.to_owned(),
        token: Token::new(TOKEN).unwrap(),
        sock: SocketOptions::default(),
        pin_dir: braid_cc::DEFAULT_PIN_DIR.into(),
        output: Output::Quiet,
        once: false,
        wait: None,
        limit_bps: None,
        allow_plain,
        limits,
        cancel: Cancel::new(),
    })
    .unwrap();
    let addr = srv.local_addr().to_string();
    thread::spawn(move || srv.run());
    addr
}
