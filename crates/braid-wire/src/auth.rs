//! Challenge-response on a shared token, with BLAKE3's keyed mode.
//!
//! Both ends derive an authentication key from the token; each proves it
//! holds it by a MAC over both nonces and its role, so a proof cannot be
//! replayed in another session or reflected back. The session key that data
//! connections present comes from the same nonces, so it is fresh per session
//! and never sent.

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

/// The client's proof (`Proof`).
pub fn client_proof(token: &[u8], client_nonce: &[u8; 16], server_nonce: &[u8; 16]) -> [u8; 32] {
    mac(&auth_key(token), &[b"client", client_nonce, server_nonce])
}

/// The server's proof (`Welcome`).
pub fn server_proof(token: &[u8], client_nonce: &[u8; 16], server_nonce: &[u8; 16]) -> [u8; 32] {
    mac(&auth_key(token), &[b"server", client_nonce, server_nonce])
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
        let p = client_proof(b"secret", &C, &S);
        assert!(verify(&p, &client_proof(b"secret", &C, &S)));
        assert!(!verify(&p, &client_proof(b"secret!", &C, &S)));
        assert!(!verify(&p, &client_proof(b"secret", &S, &C)));
        assert!(
            !verify(&p, &server_proof(b"secret", &C, &S)),
            "a client proof must not pass as the server's"
        );
        let k = session_key(b"secret", &C, &S);
        assert_ne!(k, session_key(b"secret", &C, &[3; 16]));
        assert_ne!(attach_proof(&k, 1, 0, 0), attach_proof(&k, 1, 1, 0));
        assert_ne!(attach_proof(&k, 1, 0, 0), attach_proof(&k, 2, 0, 0));
        assert_ne!(attach_proof(&k, 1, 0, 0), attach_proof(&k, 1, 0, 1));
    }

    #[test]
    fn known_answer() {
        // Pinned so that two builds of braid always agree.
        let p = client_proof(b"token", &[0; 16], &[0; 16]);
        assert_eq!(&p[..4], &KNOWN[..]);
    }

    const KNOWN: [u8; 4] = [195, 162, 221, 239];
}
