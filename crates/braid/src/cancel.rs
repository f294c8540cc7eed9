//! A stop signal that a caller hands to the sessions it starts: the CLI
//! fires it on Ctrl-C, a test or an embedding program when it likes. Whatever
//! waits on something else (a channel, a socket) registers a wake-up, so a
//! cancelled session stops at once instead of noticing on its next poll.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

type Wake = Box<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct Inner {
    fired: AtomicBool,
    next: AtomicU64,
    wakes: Mutex<HashMap<u64, Wake>>,
}

/// Cheap to clone; every clone is the same signal.
#[derive(Clone, Default)]
pub struct Cancel(Arc<Inner>);

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cancel({})", self.is_cancelled())
    }
}

impl Cancel {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fires the signal and runs every registered wake-up once. Not for a
    /// signal handler (it takes a lock): the CLI's handler writes to a pipe
    /// whose reader calls this.
    pub fn cancel(&self) {
        if self.0.fired.swap(true, Ordering::SeqCst) {
            return;
        }
        let wakes: Vec<Wake> = self
            .0
            .wakes
            .lock()
            .unwrap()
            .drain()
            .map(|(_, w)| w)
            .collect();
        for w in wakes {
            w();
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.fired.load(Ordering::SeqCst)
    }

    /// Runs `wake` when the signal fires (now, if it has); the registration
    /// ends when the returned guard is dropped.
    pub fn on_cancel(&self, wake: impl Fn() + Send + Sync + 'static) -> WakeGuard {
        let id = self.0.next.fetch_add(1, Ordering::Relaxed);
        self.0.wakes.lock().unwrap().insert(id, Box::new(wake));
        // Fired between the check a caller made and the insert: run it here.
        if self.is_cancelled() {
            if let Some(w) = self.0.wakes.lock().unwrap().remove(&id) {
                w();
            }
        }
        WakeGuard {
            inner: Arc::clone(&self.0),
            id,
        }
    }
}

/// Keeps a wake-up registered; a session drops it when it ends, so a
/// long-lived server's signal does not collect the wake-ups of old sessions.
pub struct WakeGuard {
    inner: Arc<Inner>,
    id: u64,
}

impl Drop for WakeGuard {
    fn drop(&mut self) {
        self.inner.wakes.lock().unwrap().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_wake_runs_once_when_fired_and_not_after_its_guard_is_dropped() {
        let c = Cancel::new();
        let hits = Arc::new(AtomicUsize::new(0));
        let (a, b) = (Arc::clone(&hits), Arc::clone(&hits));
        let kept = c.on_cancel(move || {
            a.fetch_add(1, Ordering::SeqCst);
        });
        drop(c.on_cancel(move || {
            b.fetch_add(100, Ordering::SeqCst);
        }));
        assert!(!c.clone().is_cancelled());
        c.clone().cancel();
        c.cancel();
        assert!(c.is_cancelled());
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        drop(kept);
        assert!(c.0.wakes.lock().unwrap().is_empty());
    }

    #[test]
    fn a_wake_registered_after_the_signal_runs_at_once() {
        let c = Cancel::new();
        c.cancel();
        let hit = Arc::new(AtomicBool::new(false));
        let h = Arc::clone(&hit);
        let _g = c.on_cancel(move || h.store(true, Ordering::SeqCst));
        assert!(hit.load(Ordering::SeqCst));
    }
}
