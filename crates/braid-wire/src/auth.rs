//! Challenge-response on a shared token, with BLAKE3's keyed mode.
//!
//! Both ends derive an authentication key from the token; each proves it
//! holds it by a MAC over both nonces, its role and what the handshake
//! agreed (the version, the client's offer, the server's announcement, the
//! suite), so a proof cannot be replayed in another session or reflected
//! back, and a relay cannot change what was agreed. The session key, from which every record
//! key is derived (see [`crate::seal`]) and with which data connections prove
//! their attach, comes from the same nonces: fresh per session, never sent.
//!
//! The token is the only secret: someone who records a handshake can try
//! tokens offline against its proofs, so a token must be random (`braid
//! serve` makes 128-bit ones), not a word a person chose.

const CONTEXT_AUTH: &str = "braid 2026 token authentication v1";
const CONTEXT_SESSION: &str = "braid 2026 session key v1";

fn auth_key(token: &[u8]) -> [u8; 32] {
    blake3::derive_key(CONTEXT_AUTH, token)
}

fn mac(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut h = blake3::Hasher::new_keyed(key);
    for p in parts {
        h.update(&(p.len() as u32).to_be_bytes());
        h.update(p);
    }
    *h.finalize().as_bytes()
}

/// The client's proof (`Proof`): over both nonces, the protocol version, the
/// client's offer of suites and the server's announcement of its own (its
/// `Challenge`), so that a relay that changes either (to ask for an unsealed
/// session, or to strip a suite) makes the proof fail.
pub fn client_proof(
    token: &[u8],
    client_nonce: &[u8; 16],
    server_nonce: &[u8; 16],
    offer: u8,
    announced: u8,
) -> [u8; 32] {
    mac(
        &auth_key(token),
        &[
            b"client",
            client_nonce,
            server_nonce,
            &crate::VERSION.to_be_bytes(),
            &[offer, announced],
        ],
    )
}

/// The server's proof (`Welcome`): over the same, and the suite both chose.
pub fn server_proof(
    token: &[u8],
    client_nonce: &[u8; 16],
    server_nonce: &[u8; 16],
    offer: u8,
    announced: u8,
    suite: u8,
) -> [u8; 32] {
    mac(
        &auth_key(token),
        &[
            b"server",
            client_nonce,
            server_nonce,
            &crate::VERSION.to_be_bytes(),
            &[offer, announced, suite],
        ],
    )
}

/// The session's key, derived by both ends after the handshake.
pub fn session_key(token: &[u8], client_nonce: &[u8; 16], server_nonce: &[u8; 16]) -> [u8; 32] {
    let mut material = Vec::with_capacity(token.len() + 32);
    material.extend_from_slice(token);
    material.extend_from_slice(client_nonce);
    material.extend_from_slice(server_nonce);
    blake3::derive_key(CONTEXT_SESSION, &material)
}

/// What a data connection presents in `Attach`: the counter makes every
/// attach of a session distinct, so the server can refuse a replayed one.
pub fn attach_proof(session_key: &[u8; 32], session: u64, stream: u16, counter: u64) -> [u8; 32] {
    mac(
        session_key,
        &[
            b"attach",
            &session.to_be_bytes(),
            &stream.to_be_bytes(),
            &counter.to_be_bytes(),
        ],
    )
}

/// Compares MACs in time independent of where they differ.
pub fn verify(expected: &[u8; 32], got: &[u8; 32]) -> bool {
    expected
        .iter()
        .zip(got)
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: [u8; 16] = [1; 16];
    const S: [u8; 16] = [2; 16];

    #[test]
    fn proofs_depend_on_token_role_and_both_nonces() {
        let p = client_proof(b"secret", &C, &S, 3, 7);
        assert!(verify(&p, &client_proof(b"secret", &C, &S, 3, 7)));
        assert!(!verify(&p, &client_proof(b"secret!", &C, &S, 3, 7)));
        assert!(!verify(&p, &client_proof(b"secret", &S, &C, 3, 7)));
        assert!(
            !verify(&p, &client_proof(b"secret", &C, &S, 7, 7)),
            "a changed offer must not pass"
        );
        assert!(
            !verify(&p, &client_proof(b"secret", &C, &S, 3, 3)),
            "nor a changed announcement"
        );
        assert!(
            !verify(&p, &server_proof(b"secret", &C, &S, 3, 7, 1)),
            "a client proof must not pass as the server's"
        );
        let w = server_proof(b"secret", &C, &S, 3, 7, 1);
        assert!(!verify(&w, &server_proof(b"secret", &C, &S, 3, 7, 0)));
        assert!(!verify(&w, &server_proof(b"secret", &C, &S, 3, 3, 1)));
        let k = session_key(b"secret", &C, &S);
        assert_ne!(k, session_key(b"secret", &C, &[3; 16]));
        assert_ne!(attach_proof(&k, 1, 0, 0), attach_proof(&k, 1, 1, 0));
        assert_ne!(attach_proof(&k, 1, 0, 0), attach_proof(&k, 2, 0, 0));
        assert_ne!(attach_proof(&k, 1, 0, 0), attach_proof(&k, 1, 0, 1));
    }

    #[test]
    fn known_answer() {
        // Pinned so that two builds of braid of one protocol version always
        // agree (the version is in the proof: a new one changes it).
        let p = client_proof(b"token", &[0; 16], &[0; 16], 3, 7);
        assert_eq!(&p[..4], &KNOWN[..]);
    }

    const KNOWN: [u8; 4] = [19, 107, 1, 181];
}
