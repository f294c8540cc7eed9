//! Something that is not braid on the port a client reaches: the error says
//! the peer is not braid and what it sent. Loopback only.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;

use common::client;

/// A listener that answers its first connection with `banner` and holds it
/// open a little, as an ssh or web server would.
fn impostor(banner: &'static [u8]) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let _ = s.write_all(banner);
            let mut sink = [0u8; 4096];
            let _ = s.read(&mut sink);
            thread::sleep(std::time::Duration::from_millis(500));
        }
    });
    addr
}

#[test]
fn an_ssh_server_on_the_port_is_named_as_such() {
    let addr = impostor(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
    let o = client(&["bench", "-t", "1", &addr], None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("is not a braid peer")
            && err.contains("ssh server")
            && err.contains("SSH-2.0-OpenSSH_9.2p1"),
        "{err}"
    );
    assert!(!err.contains("frame of length"), "{err}");
}

#[test]
fn binary_from_something_else_is_shown_as_hex() {
    let addr = impostor(&[0xff, 0xfe, 0x00, 0x01, 0x02]);
    let o = client(&["bench", "-t", "1", &addr], None);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("is not a braid peer") && err.contains("ff fe 00 01"),
        "{err}"
    );
}
