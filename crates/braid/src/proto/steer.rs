//! Steering a running session: something that watches every stream's
//! TCP_INFO on a regular tick and decides how many streams carry blocks and
//! which control each one runs. The sending end's driver asks it, and does
//! what it says on live sockets (streams join and leave, a socket's control
//! and braid-cc settings change mid-transfer).

use std::time::Duration;

use braid_cc::TcpInfo;

use braid_cc::SocketSettings;

/// One stream's control: `None` keeps the system default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamControl {
    pub cc: Option<String>,
    pub settings: SocketSettings,
}

/// One stream as a steer sees it on a tick.
#[derive(Clone, Debug, Default)]
pub struct StreamView {
    pub stream: usize,
    /// Whether it carries blocks now (a leaving or gone stream does not).
    pub wanted: bool,
    /// Payload bytes this end moved on it, over all its connections.
    pub bytes: u64,
    /// Its current connection's TCP_INFO, if it has one.
    pub info: Option<TcpInfo>,
}

/// What a steer tells of itself in a `steer` record.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SteerState {
    pub strength: Option<f64>,
    pub queue_us: Option<u32>,
    pub utility: Option<f64>,
    /// Whether others share the path's queue, as the steer last found (auto).
    pub shared: Option<bool>,
    /// The cap the streams' caps add up to, bytes a second (auto).
    pub share_bps: Option<f64>,
    /// The steer's phase (auto: start, grow, full, yield, test, fair).
    pub phase: Option<&'static str>,
    /// The bottleneck's rate the steer knows, bytes a second (auto: the receiver's word).
    pub bottleneck_bps: Option<f64>,
}

/// What a steer asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Steering {
    /// Carry blocks on this many streams (at least one).
    Streams(usize),
    /// Give stream `i` this control: now on its live socket, and on every
    /// connection it makes later (also one that has not joined yet).
    Control(usize, StreamControl),
    /// Cap stream `i`'s live socket's sending rate, in bytes per second
    /// (SO_MAX_PACING_RATE); `None` lifts the cap (the kernel still paces
    /// it, at TCP's own rate). Only the connection it has now: a cap is a
    /// moment's measure, not the stream's setting.
    Pace(usize, Option<u64>),
}

pub trait Steer: Send {
    /// How often [`Steer::tick`] is called.
    fn interval(&self) -> Duration;
    /// `elapsed` since the session's streams started.
    fn tick(&mut self, elapsed: Duration, streams: &[StreamView]) -> Vec<Steering>;
    /// Its state for the session's report (a `steer` record), if it has one.
    fn state(&self) -> Option<SteerState> {
        None
    }
    /// The receiving end's latest word on the path's bottleneck, payload
    /// bytes a second (`path::dispersion`), before a tick; a steer that
    /// does not use it ignores it.
    fn bottleneck(&mut self, _bytes_per_sec: f64) {}
    /// When to look at the streams between this tick and the next (None:
    /// never), asked after each tick (and once before the first).
    fn looks(&self) -> Option<Looks> {
        None
    }
    /// Whether the streams' connections are paced by the kernel (SO_MAX_PACING_RATE
    /// with no cap: TCP's own pacing rate) from the first tick at which the
    /// receiving end's word on the bottleneck is known, and every connection
    /// from its start after that, not only once the steer caps them.
    fn paces(&self) -> bool {
        false
    }
    /// A look at the streams between ticks, for what changes faster than a
    /// tick: a queue that fills and drains within one shows in no single
    /// reading of it. It asks nothing; the next tick does. The looks of a
    /// tick come before it, in the order they were taken, where the engine
    /// may take them as the streams' own senders get round to it: `elapsed`
    /// is when each was taken, not when it is told.
    fn sample(&mut self, _elapsed: Duration, _streams: &[StreamView]) {}
}

/// The looks a steer asks for between two ticks: the first `first` after
/// the tick, then one every `every` until the next tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Looks {
    pub first: Duration,
    pub every: Duration,
}

impl Looks {
    /// The point of a grid of step `every` through `due` that comes first
    /// after `now` (any one clock's nanoseconds, `now >= due`): a look taken
    /// late does not move the next off the grid the tick planned.
    pub fn next_on_grid(due: u64, every: u64, now: u64) -> u64 {
        let every = every.max(1);
        due + every * (now.saturating_sub(due) / every + 1)
    }
}

/// A fixed list of steerings at given times; for tests and experiments that
/// change a session on a schedule.
pub struct Script {
    steps: Vec<(Duration, Steering)>,
    interval: Duration,
}

impl Script {
    pub fn new(mut steps: Vec<(Duration, Steering)>, interval: Duration) -> Self {
        steps.sort_by_key(|s| s.0);
        steps.reverse();
        Script { steps, interval }
    }
}

impl Steer for Script {
    fn interval(&self) -> Duration {
        self.interval
    }

    fn tick(&mut self, elapsed: Duration, _: &[StreamView]) -> Vec<Steering> {
        let mut due = Vec::new();
        while self.steps.last().is_some_and(|(t, _)| *t <= elapsed) {
            due.push(self.steps.pop().expect("checked").1);
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_look_keeps_the_next_on_the_grid() {
        // On time: the next is one step on.
        assert_eq!(Looks::next_on_grid(100, 10, 100), 110);
        // Late within a step, or by several: the next grid point after now.
        assert_eq!(Looks::next_on_grid(100, 10, 105), 110);
        assert_eq!(Looks::next_on_grid(100, 10, 110), 120);
        assert_eq!(Looks::next_on_grid(100, 10, 137), 140);
        // A step of zero is read as the smallest step, never a division by it.
        assert_eq!(Looks::next_on_grid(100, 0, 100), 101);
    }

    #[test]
    fn a_script_gives_each_step_once_in_time_order() {
        let ms = Duration::from_millis;
        let mut s = Script::new(
            vec![
                (ms(300), Steering::Streams(1)),
                (ms(100), Steering::Streams(4)),
                (ms(100), Steering::Streams(5)),
            ],
            ms(50),
        );
        assert!(s.tick(ms(50), &[]).is_empty());
        assert_eq!(
            s.tick(ms(150), &[]),
            [Steering::Streams(4), Steering::Streams(5)]
        );
        assert!(s.tick(ms(250), &[]).is_empty());
        assert_eq!(s.tick(ms(999), &[]), [Steering::Streams(1)]);
        assert!(s.tick(ms(9999), &[]).is_empty());
    }
}
