//! The bottleneck's rate µ, from when the receiving end's bytes arrive.
//!
//! Packets that leave the bottleneck back to back reach the receiver spaced by
//! their size over µ, whoever else shares it (packet pairs, Keshav 1991):
//! cross traffic between two of them, or a moment the bottleneck idles, only
//! widens the gap, and a sender's bursts (TSO, the ACK clock) queue at any
//! bottleneck slower than the sender's own link, so most of a stream's
//! packets leave it right behind another of its own. A TCP socket with
//! SO_TIMESTAMPNS tells each read when the last segment it returned arrived.
//! After the bottleneck, though, the receiving host bunches packets (a NIC's
//! interrupt moderation, a late wake of whatever forwards them) and stamps a
//! bunch at its own speed, two to four times µ: so a rate is read over a
//! span of one reader's reads longer than a bunch ([`SPAN_NS`]), the bytes
//! since the latest stamp a span before over the time since it. The fastest
//! strong cluster of those rates, each weighted by its read's bytes, is µ.
//! It needs no privileges and knows nothing of the link; it needs prompt
//! reads (a reader that drains what queued while it was busy elsewhere sees
//! that pause's average, not the spacing).
//!
//! A span needs a train as long as itself: a group that moves a small part of
//! a busy path sends none, and its spans read its own spacing, below µ. µ is
//! the route's, so the most a window has read stands while no train shows
//! another ([`HOLD`]). A read is told, and held, as far as the window without
//! its newest second repeats it: one second's reads alone (a transfer's
//! first, a few trains the receiving host bunched) may be far from µ, and a
//! hold would keep them a minute.
//!
//! Pure: [`Arrivals`] turns one reader's stamps into rates, [`Dispersion`]
//! keeps a window of rates from any number of readers and answers µ.

/// Each band of rates is this much wider than the one below it: fine beside
/// the stamps' scatter ([`SPREAD`] bands), which the clusters are read over.
pub const BAND: f64 = 0.02;

/// The reads of one cluster scatter over this many bands either side of
/// its rate (the stamps' jitter: a few µs on the tens a packet takes at
/// 1 Gb/s); µ's scattered within 6 % on the development paths.
const SPREAD: usize = 3;

/// Rates (bytes a second) below this are gaps, not dispersion: a read that
/// waited this long for 1500 bytes is an idle moment of the sender.
const SLOWEST: f64 = 1e4;
/// Rates above this (8 Tb/s) are stamps closer than any link spaces them:
/// segments merged into one read's stamp.
const FASTEST: f64 = 1e12;

/// How long one slot of the window covers.
const SLOT_NS: u64 = 1_000_000_000;
/// Slots in the window. µ is the path's and changes only with its route, so
/// the window is long beside one second's scatter (a second's estimate can
/// miss by several bands where the stream has few packets in it; tens of
/// seconds did not on any development path), and short beside a transfer
/// that needs it.
const SLOTS: usize = 16;
/// Seconds the most a window read stands after it was last read: four
/// windows, so a group whose share of a busy path stays too small for trains
/// keeps for a minute what its slow start read, and a route that became
/// slower is forgotten within a minute and a quarter.
const HOLD: u64 = 4 * SLOTS as u64;
/// Reads the window needs before it answers: the densest of the few dozen
/// bands that reads fill is then no accident of a handful.
const MIN_READS: u64 = 100;

/// Whether a peer's word on µ is one this module could have measured: within
/// the rates it counts at all. Anything else (zero, a rate past any link) is
/// a broken or hostile peer's, and no rule may act on it.
pub fn plausible(bytes_per_sec: u64) -> bool {
    (SLOWEST..=FASTEST).contains(&(bytes_per_sec as f64))
}

fn bands() -> usize {
    ((FASTEST / SLOWEST).ln() / (1.0 + BAND).ln()).ceil() as usize + 1
}

fn band_of(rate: f64) -> Option<usize> {
    if !(SLOWEST..FASTEST).contains(&rate) {
        return None;
    }
    Some(((rate / SLOWEST).ln() / (1.0 + BAND).ln()).round() as usize)
}

fn rate_of(band: usize) -> f64 {
    SLOWEST * (1.0 + BAND).powi(band as i32)
}

/// A rate is read over a span of one reader's consecutive reads at least
/// this long: longer than a receiving host holds packets before it stamps
/// them (a NIC's interrupt moderation, up to about 100 µs; a software link's
/// late wake, braid-link's at most 0.1 ms at the 99th percentile): a bunch
/// then moves a span's rate by at most its share of the span, where it
/// makes a single read's rate the host's own speed. At 1 Gb/s a span is
/// eleven packets.
const SPAN_NS: u64 = 128_000;

/// Stamps a reader keeps while its span fills: a span's worth of reads of a
/// packet each up to 96 Gb/s of 1500-byte packets (a host that fast returns
/// many a read).
const HISTORY: usize = 1024;

/// One reader's stamps.
#[derive(Clone, Debug, Default)]
pub struct Arrivals {
    /// (stamp, the reader's bytes up to and with that read), oldest first;
    /// the front the latest stamp at least a span before the back.
    recent: std::collections::VecDeque<(u64, u64)>,
    total: u64,
}

impl Arrivals {
    pub fn new() -> Self {
        Self::default()
    }

    /// The rate, bytes a second, of the reads since the latest stamp at
    /// least [`SPAN_NS`] before `at_ns` (the last of them this one, of
    /// `bytes`): none until a reader has such a stamp. A read stamped no
    /// later than the one before (a segment returned in pieces) counts its
    /// bytes with that one's, and has no rate of its own.
    pub fn rate(&mut self, at_ns: u64, bytes: usize) -> Option<f64> {
        self.total += bytes as u64;
        if let Some(last) = self.recent.back_mut() {
            if at_ns <= last.0 {
                last.1 = self.total;
                return None;
            }
        }
        self.recent.push_back((at_ns, self.total));
        if self.recent.len() > HISTORY {
            self.recent.pop_front();
        }
        while self.recent.len() > 2 && at_ns - self.recent[1].0 >= SPAN_NS {
            self.recent.pop_front();
        }
        let &(from, before) = self.recent.front()?;
        if at_ns - from < SPAN_NS || bytes == 0 {
            return None;
        }
        Some((self.total - before) as f64 * 1e9 / (at_ns - from) as f64)
    }
}

/// One second of rates: the bytes that arrived in each band.
#[derive(Clone, Debug)]
struct Slot {
    /// Which second (stamp / SLOT_NS) it holds.
    second: u64,
    bytes: Vec<u64>,
    reads: u64,
}

/// The rates of the last [`SLOTS`] seconds of reads, from every reader.
#[derive(Clone, Debug)]
pub struct Dispersion {
    slots: Vec<Slot>,
    newest: u64,
    /// The most a window has read, and the second it was last read.
    most: Option<(f64, u64)>,
}

impl Default for Dispersion {
    fn default() -> Self {
        Self::new()
    }
}

impl Dispersion {
    pub fn new() -> Self {
        let slot = Slot {
            second: u64::MAX,
            bytes: vec![0; bands()],
            reads: 0,
        };
        Dispersion {
            slots: vec![slot; SLOTS],
            newest: 0,
            most: None,
        }
    }

    /// A read of `bytes` that came at `rate` bytes a second, stamped `at_ns`.
    /// A stamp older than the window counts for nothing.
    pub fn add(&mut self, at_ns: u64, rate: f64, bytes: usize) {
        let second = at_ns / SLOT_NS;
        if second + (SLOTS as u64) <= self.newest {
            return;
        }
        let Some(band) = band_of(rate) else { return };
        self.newest = self.newest.max(second);
        let slot = &mut self.slots[(second % SLOTS as u64) as usize];
        if slot.second != second {
            slot.second = second;
            slot.bytes.fill(0);
            slot.reads = 0;
        }
        slot.bytes[band] += bytes as u64;
        slot.reads += 1;
    }

    /// µ, bytes a second: the most the window has read ([`Self::window_before`]) in
    /// the last [`HOLD`] seconds of stamps, each read as far as the window
    /// without its newest second repeats it; none until both hold
    /// [`MIN_READS`].
    ///
    /// A read that rests on one second's reads alone (a transfer's first
    /// second, a few slow-start trains the receiving host bunched) may be
    /// far from µ, and the hold would keep it a minute; the window without
    /// that second says whether the reads before it agree.
    pub fn estimate(&mut self) -> Option<f64> {
        let read = self
            .window_before(self.newest + 1)
            .zip(self.window_before(self.newest))
            .map(|(all, older)| all.min(older));
        let most = match (self.most, read) {
            (Some((m, at)), r) if r.is_none_or(|r| m > r) && at + HOLD > self.newest => {
                Some((m, at))
            }
            (_, r) => r.map(|r| (r, self.newest)),
        };
        self.most = most;
        most.map(|(m, _)| m)
    }

    /// What the reads of the last [`SLOTS`] seconds show µ to be.
    ///
    /// Reads of packets that left the bottleneck back to back cluster at
    /// µ; whatever separated two of them (others' packets, a moment the
    /// sender paused, a read that came late) makes a rate below it, and
    /// those may cluster too (a paced or ACK-clocked stream's own spacing,
    /// its reads many bytes each); only a compression after the bottleneck
    /// longer than a span (segments stamped together) makes one above it,
    /// at a multiple of µ and with a fraction of µ's bytes. So µ is the
    /// fastest cluster, no slower than what arrived, that holds at least
    /// half the bytes of the strongest such, and within it the reads' mean
    /// rate (geometric, weighted by bytes).
    ///
    /// A cluster is a peak of the bytes over the bands that stands apart
    /// from any stronger one: between them the bytes fall to half its
    /// height or less (two peaks resolved at half their maximum). Where the
    /// stamps scatter widely (tens of percent at 1 Gb/s, where a packet
    /// takes 12 µs and the receiving host's wakeups a few), µ's cluster is
    /// one broad hill, and a bump on its fast flank is the scatter's, not a
    /// second cluster.
    ///
    /// Only the window's seconds before `end` count.
    fn window_before(&self, end: u64) -> Option<f64> {
        let live: Vec<&Slot> = self
            .slots
            .iter()
            .filter(|s| s.second != u64::MAX && s.second + (SLOTS as u64) > self.newest)
            .filter(|s| s.second < end)
            .collect();
        if live.iter().map(|s| s.reads).sum::<u64>() < MIN_READS {
            return None;
        }
        let n = bands();
        let bytes: Vec<u64> = (0..n)
            .map(|b| live.iter().map(|s| s.bytes[b]).sum())
            .collect();
        let around = |b: usize| b.saturating_sub(SPREAD)..(b + SPREAD + 1).min(n);
        let mass: Vec<u64> = (0..n).map(|b| bytes[around(b)].iter().sum()).collect();
        // The bottleneck carries at least what arrives here: a cluster slower
        // than that is the streams' own spacing (many paced streams, each
        // with its packets in twos, show little else).
        let arrived = bytes.iter().sum::<u64>() as f64 / live.len() as f64;
        let first = band_of(arrived).unwrap_or(0);
        let strongest = *mass[first..].iter().max()?;
        if strongest == 0 {
            return None;
        }
        // The strongest band is a peak that stands: there is always one.
        let counted = &mass[first..];
        let peak = first
            + (0..counted.len())
                .rev()
                .filter(|&b| 2 * counted[b] >= strongest && is_peak(counted, b))
                .find(|&b| stands_apart(&counted[..=b]))?;
        let (weight, logs) = around(peak).fold((0.0, 0.0), |(w, l), b| {
            let x = bytes[b] as f64;
            (w + x, l + x * rate_of(b).ln())
        });
        Some((logs / weight).exp())
    }
}

/// Whether band `b` tops its neighbours: at least the one below it (a
/// plateau's fast end counts once) and more than the one above.
fn is_peak(mass: &[u64], b: usize) -> bool {
    let below = b.checked_sub(1).map_or(0, |a| mass[a]);
    let above = mass.get(b + 1).copied().unwrap_or(0);
    mass[b] > 0 && mass[b] >= below && mass[b] > above
}

/// Whether the last band of `mass` is a cluster of its own beside every
/// slower band that holds more: walking down from it, the bytes fall to
/// half its height or less before they rise past it. None that holds more
/// is slower: it is the strongest there, and stands.
fn stands_apart(mass: &[u64]) -> bool {
    let Some((&top, slower)) = mass.split_last() else {
        return false;
    };
    let mut lowest = top;
    for &m in slower.iter().rev() {
        if m > top {
            return 2 * lowest <= top;
        }
        lowest = lowest.min(m);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// A stream of `size`-byte packets leaving a bottleneck of `mu` bytes a
    /// second in bursts of `burst`, each burst `gap` after the last ended,
    /// read one packet at a time from `start`; returns the stamps.
    fn bursts(start: u64, mu: f64, size: usize, burst: usize, gap: u64, n: usize) -> Vec<u64> {
        let spacing = size as f64 * 1e9 / mu;
        let mut t = start as f64;
        (0..n)
            .map(|i| {
                t += if i % burst == 0 { gap as f64 } else { spacing };
                t as u64
            })
            .collect()
    }

    fn feed(d: &mut Dispersion, a: &mut Arrivals, stamps: &[u64], size: usize) {
        for &at in stamps {
            if let Some(r) = a.rate(at, size) {
                d.add(at, r, size);
            }
        }
    }

    fn near(got: f64, want: f64) -> bool {
        (got / want - 1.0).abs() <= BAND
    }

    #[test]
    fn a_rate_is_read_over_the_reads_since_a_stamp_a_span_before() {
        let mut a = Arrivals::new();
        let us = 1_000;
        assert_eq!(
            a.rate(0, 1500),
            None,
            "the first read has nothing before it"
        );
        assert_eq!(a.rate(100 * us, 1500), None, "no stamp a span before yet");
        // Back to the stamp at 0: the reads after it, 3000 bytes in 150 µs.
        assert_eq!(a.rate(150 * us, 1500), Some(3000.0 * 1e9 / 150_000.0));
        assert_eq!(a.rate(150 * us, 700), None, "a segment returned in pieces");
        assert_eq!(a.rate(120 * us, 700), None, "a stamp from before");
        // Back to the stamp at 100 µs, the latest a span before: the read at
        // 150 µs with its pieces (2900 bytes), and this one.
        assert_eq!(a.rate(250 * us, 1500), Some(4400.0 * 1e9 / 150_000.0));
    }

    #[test]
    fn bursts_spaced_at_the_bottleneck_give_its_rate_whatever_the_gaps() {
        // 1 Gb/s: 125e6 bytes a second, bursts of 16 packets (185 µs), 2 ms
        // apart (the stream moves a tenth of the path: others fill the gaps).
        let mu = 125e6;
        let mut d = Dispersion::new();
        let mut a = Arrivals::new();
        feed(&mut d, &mut a, &bursts(0, mu, 1448, 16, 2 * MS, 8000), 1448);
        let got = d.estimate().expect("enough reads");
        assert!(near(got, mu), "{got} against {mu}");
    }

    #[test]
    fn packets_the_receiving_host_bunches_do_not_raise_mu() {
        // Packets at 1 Gb/s, held by the receiving host and stamped every
        // 50 µs, a bunch at a fifth of a µs a packet: read alone, each read
        // would come at the host's speed, thirty times µ.
        let mu = 125e6;
        let spacing = 1448.0 * 1e9 / mu;
        let hold = 50_000.0;
        let mut stamps = Vec::new();
        let (mut bunch, mut k) = (0.0, 0);
        // Two seconds and more: a read is told once the window without its
        // newest second repeats it.
        for i in 0..200_000 {
            let arrived = i as f64 * spacing;
            let release = (arrived / hold).ceil() * hold;
            if release != bunch {
                (bunch, k) = (release, 0);
            }
            stamps.push((release + 200.0 * k as f64) as u64);
            k += 1;
        }
        let mut d = Dispersion::new();
        let mut a = Arrivals::new();
        feed(&mut d, &mut a, &stamps, 1448);
        let got = d.estimate().expect("enough reads");
        // Each span is off by at most a bunch's share of it, either way (one
        // that starts at a bunch's last stamp counts the bunch's wait and not
        // its packets; one that starts at its first, the packets and not the
        // wait): µ is not raised, and lowered by no more than that share.
        let low = 1.0 - hold / SPAN_NS as f64;
        assert!(
            got <= mu * (1.0 + BAND) && got >= mu * low,
            "{got} against {mu}"
        );
    }

    #[test]
    fn mu_read_stands_while_no_train_shows_another_then_follows_the_window() {
        // Trains at µ for 4 s, then a paced stream at a tenth of µ (a packet
        // every ten packet times, no two back to back): its spans read its
        // own rate, which says nothing of µ.
        let mu = 125e6;
        let spacing = (1448.0 * 1e9 / mu) as u64;
        let mut d = Dispersion::new();
        let mut a = Arrivals::new();
        feed(&mut d, &mut a, &bursts(0, mu, 1448, 16, MS, 30_000), 1448);
        assert!(near(d.estimate().unwrap(), mu));
        let mut at = 5 * SLOT_NS;
        let mut told = Vec::new();
        while at < 5 * SLOT_NS + (HOLD + SLOTS as u64 + 2) * SLOT_NS {
            let second_end = at + SLOT_NS;
            while at < second_end {
                at += 10 * spacing;
                if let Some(r) = a.rate(at, 1448) {
                    d.add(at, r, 1448);
                }
            }
            told.push(d.estimate().unwrap());
        }
        // The trains' last estimate was at second 2 and told[i] is second
        // 5 + i: µ stands at least until second 2 + HOLD.
        assert!(
            told[..HOLD as usize - 3].iter().all(|&m| near(m, mu)),
            "held"
        );
        let last = *told.last().unwrap();
        assert!(
            near(last, mu / 10.0),
            "{last}: the paced rate, once µ's reads are old"
        );
    }

    #[test]
    fn a_read_of_one_second_alone_is_not_told_nor_held() {
        // In the first second, reads of a few slow-start trains the
        // receiving host bunched cluster at twice µ, with more than half µ's
        // bytes: read alone, that second tells twice µ. The seconds after
        // read µ.
        let mu = 125e6;
        let mut d = Dispersion::new();
        scattered(&mut d, 0, mu, 0.05, 1448, 400);
        scattered(&mut d, 0, 2.0 * mu, 0.05, 1448, 300);
        let alone = d.window_before(1).expect("a second's reads");
        assert!(near(alone, 2.0 * mu), "{alone}");
        assert_eq!(d.estimate(), None, "one second's reads alone");
        for second in 1..6 {
            scattered(&mut d, second * SLOT_NS, mu, 0.05, 1448, 700);
            let got = d.estimate().expect("two seconds of reads");
            assert!(near(got, mu), "second {second}: {got} against {mu}");
        }
    }

    #[test]
    fn two_readers_of_one_path_agree_and_count_together() {
        let mu = 12.5e6;
        let mut d = Dispersion::new();
        let (mut a, mut b) = (Arrivals::new(), Arrivals::new());
        // Each over two and a half seconds, too few reads alone.
        let one = bursts(0, mu, 1448, 4, 100 * MS, 100);
        let two = bursts(MS, mu, 1448, 4, 100 * MS, 100);
        feed(&mut d, &mut a, &one, 1448);
        assert_eq!(d.estimate(), None, "fewer reads than the window needs");
        feed(&mut d, &mut b, &two, 1448);
        let got = d.estimate().expect("both readers' reads count");
        assert!(near(got, mu), "{got} against {mu}");
    }

    #[test]
    fn a_reader_that_drains_late_sees_the_streams_average_not_the_spacing() {
        // The same arrivals, read every 4 ms in one go: each read's rate is
        // what the stream moved over 4 ms, a tenth of µ. Prompt reads matter.
        let mu = 125e6;
        let stamps = bursts(0, mu, 1448, 8, 2 * MS, 8000);
        let mut d = Dispersion::new();
        let mut a = Arrivals::new();
        let mut since = 0;
        let mut held = 0;
        for &at in &stamps {
            held += 1448;
            if at - since >= 4 * MS {
                if let Some(r) = a.rate(at, held) {
                    d.add(at, r, held);
                }
                (since, held) = (at, 0);
            }
        }
        let got = d.estimate().expect("enough reads");
        assert!(got < mu / 4.0, "{got} against {mu}");
    }

    #[test]
    fn the_window_forgets_a_route_it_no_longer_has() {
        let mut d = Dispersion::new();
        let mut a = Arrivals::new();
        let slow = bursts(0, 12.5e6, 1448, 4, 3 * MS, 20_000);
        feed(&mut d, &mut a, &slow, 1448);
        assert!(near(d.estimate().unwrap(), 12.5e6));
        let after = *slow.last().unwrap() + 1_000 * MS;
        let fast = bursts(after, 125e6, 1448, 16, MS, 20_000);
        feed(&mut d, &mut a, &fast, 1448);
        // Once the old route's seconds have left the window, only the new one counts.
        let later = *fast.last().unwrap() + SLOTS as u64 * SLOT_NS;
        feed(
            &mut d,
            &mut a,
            &bursts(later, 125e6, 1448, 16, MS, 40_000),
            1448,
        );
        let got = d.estimate().unwrap();
        assert!(near(got, 125e6), "{got}");
    }

    /// Reads at `rate` scattered ±`jitter` (a fraction) by the stamps, one a ms.
    fn scattered(d: &mut Dispersion, from: u64, rate: f64, jitter: f64, bytes: usize, n: u64) {
        for i in 0..n {
            let wobble = 1.0 + jitter * (((i * 7919) % 201) as f64 / 100.0 - 1.0);
            d.add(from + i * MS, rate * wobble, bytes);
        }
    }

    #[test]
    fn the_fastest_strong_cluster_is_mu_not_the_streams_own_spacing() {
        // One-packet reads at µ, and reads of many packets at the stream's
        // own rate (a tenth of µ) that bring more bytes than µ's.
        let mu = 12.5e6;
        let mut d = Dispersion::new();
        scattered(&mut d, 0, mu, 0.05, 1448, 3000);
        scattered(&mut d, 0, mu / 10.0, 0.02, 6000, 1000);
        let got = d.estimate().unwrap();
        assert!(near(got, mu), "{got} against {mu}");
    }

    #[test]
    fn a_cluster_slower_than_what_arrived_is_not_mu_however_strong() {
        // Sixteen paced streams, each at a sixteenth of what arrives: their
        // own spacing holds twice the bytes µ's reads do.
        let mu = 125e6;
        let mut d = Dispersion::new();
        scattered(&mut d, 0, mu, 0.05, 1448, 2000);
        scattered(&mut d, 0, 3.5e6, 0.02, 2 * 1448, 2000);
        // 2000 reads of each over two seconds: 4.3 MB a second arrived.
        let got = d.estimate().unwrap();
        assert!(near(got, mu), "{got} against {mu}");
    }

    #[test]
    fn segments_stamped_together_after_the_bottleneck_do_not_raise_mu() {
        let mu = 125e6;
        let mut d = Dispersion::new();
        scattered(&mut d, 0, mu, 0.05, 1448, 3000);
        scattered(&mut d, 0, 2.0 * mu, 0.05, 1448, 600);
        let got = d.estimate().unwrap();
        assert!((got / mu - 1.0).abs() < 0.01, "{got} against {mu}");
    }

    #[test]
    fn a_bump_on_the_flank_of_a_broad_cluster_is_its_scatter_not_mu() {
        // Stamps scattered ±35 % around µ (a hill fifteen bands either side
        // of it), with a bump thirteen bands up its fast flank that holds
        // more than half the hill's top: no valley parts them, so µ is the
        // hill's top, not the bump.
        let mu = 125e6;
        let mut reads = Vec::new();
        for k in -15i32..=15 {
            reads.push((k, 100 - 5 * k.unsigned_abs()));
        }
        for k in 11..=15 {
            reads.push((k, 40));
        }
        let mut d = Dispersion::new();
        let mut at = 0;
        for (k, count) in reads {
            for _ in 0..count {
                at += MS;
                d.add(at, mu * (1.0 + BAND).powi(k), 1448);
            }
        }
        let got = d.estimate().unwrap();
        assert!(near(got, mu), "{got} against {mu}");
    }

    #[test]
    fn a_peers_word_outside_what_could_be_measured_is_not_taken() {
        assert!(!plausible(0));
        assert!(!plausible(1_000), "slower than any gap counted");
        assert!(!plausible(u64::MAX), "past any link");
        assert!(plausible(125_000_000));
        // Whatever the estimate answers is a word the peer may send.
        let mut d = Dispersion::new();
        scattered(&mut d, 0, 125e6, 0.05, 1448, 3000);
        let own = d.estimate().unwrap() as u64;
        assert!(plausible(own), "{own}");
    }

    #[test]
    fn rates_past_any_link_or_below_any_sender_are_not_counted() {
        let mut d = Dispersion::new();
        for i in 0..200 {
            d.add(i * MS, FASTEST * 2.0, 65_536);
            d.add(i * MS, SLOWEST / 2.0, 65_536);
        }
        assert_eq!(d.estimate(), None);
    }
}
