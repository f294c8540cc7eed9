//! A sink's accounting: datagrams binned by the sender's clock.
//!
//! Binning by send time (the header's offset from the source's start) makes
//! a bin's byte count comparable with the source's schedule whatever the
//! path's delay, and needs no synchronised clocks. Loss is seen as gaps in
//! the sequence; a gap is charged to the bin of the packet that revealed it,
//! and a late packet that fills a gap takes its loss back.

use std::collections::BTreeMap;

/// One interval of the sender's timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bin {
    /// Index: the bin covers [index, index + 1) * interval.
    pub index: u64,
    pub packets: u64,
    pub bytes: u64,
    pub lost: i64,
}

/// Totals over a whole flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub packets: u64,
    pub bytes: u64,
    /// Sequence gaps not filled later (plus the tail, once the source's count is known).
    pub lost: u64,
    /// Packets that arrived after a later one.
    pub reordered: u64,
    /// Data packets the source says it sent (from its Fin), if known.
    pub sent: Option<u64>,
}

impl Totals {
    pub fn loss_ratio(&self) -> f64 {
        let sent = self.sent.unwrap_or(self.packets + self.lost);
        if sent == 0 {
            0.0
        } else {
            self.lost as f64 / sent as f64
        }
    }
}

#[derive(Clone, Debug)]
pub struct Tally {
    interval_ns: u64,
    bins: BTreeMap<u64, Bin>,
    next_seq: u64,
    totals: Totals,
    newest_ns: u64,
}

impl Tally {
    /// `interval_ns` must be positive.
    pub fn new(interval_ns: u64) -> Self {
        assert!(interval_ns > 0, "a tally needs a positive interval");
        Tally {
            interval_ns,
            bins: BTreeMap::new(),
            next_seq: 0,
            totals: Totals::default(),
            newest_ns: 0,
        }
    }

    /// A data packet `seq` of `bytes`, sent `offset_ns` after the source started.
    pub fn data(&mut self, seq: u64, offset_ns: u64, bytes: u64) {
        let index = offset_ns / self.interval_ns;
        let bin = self.bins.entry(index).or_insert(Bin {
            index,
            ..Bin::default()
        });
        bin.packets += 1;
        bin.bytes += bytes;
        self.totals.packets += 1;
        self.totals.bytes += bytes;
        if seq >= self.next_seq {
            let gap = seq - self.next_seq;
            bin.lost += gap as i64;
            self.totals.lost += gap;
            self.next_seq = seq + 1;
        } else {
            bin.lost -= 1;
            self.totals.lost = self.totals.lost.saturating_sub(1);
            self.totals.reordered += 1;
        }
        self.newest_ns = self.newest_ns.max(offset_ns);
    }

    /// The source's Fin: it sent `sent` data packets; the tail it never
    /// delivered is lost.
    pub fn fin(&mut self, sent: u64) {
        if self.totals.sent.is_none() && sent > self.next_seq {
            let tail = sent - self.next_seq;
            self.totals.lost += tail;
            let index = self.newest_ns / self.interval_ns;
            self.bins
                .entry(index)
                .or_insert(Bin {
                    index,
                    ..Bin::default()
                })
                .lost += tail as i64;
            self.next_seq = sent;
        }
        self.totals.sent = Some(sent);
    }

    /// Bins that ended more than `grace_ns` before the newest send time seen:
    /// late packets for them are unlikely now.
    pub fn settled(&mut self, grace_ns: u64) -> Vec<Bin> {
        let horizon = self.newest_ns.saturating_sub(grace_ns) / self.interval_ns;
        // Called for every datagram: most of the time nothing has settled.
        if self
            .bins
            .first_key_value()
            .is_none_or(|(&oldest, _)| oldest >= horizon)
        {
            return Vec::new();
        }
        let keep = self.bins.split_off(&horizon);
        std::mem::replace(&mut self.bins, keep)
            .into_values()
            .collect()
    }

    /// Every bin still held, oldest first.
    pub fn drain(&mut self) -> Vec<Bin> {
        std::mem::take(&mut self.bins).into_values().collect()
    }

    pub fn totals(&self) -> Totals {
        self.totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn bins_by_send_time_and_charges_gaps() {
        let mut t = Tally::new(100 * MS);
        t.data(0, 10 * MS, 100);
        t.data(1, 90 * MS, 100);
        t.data(4, 150 * MS, 100); // 2 and 3 lost
        t.data(5, 250 * MS, 100);
        let bins = t.drain();
        assert_eq!(
            bins,
            vec![
                Bin {
                    index: 0,
                    packets: 2,
                    bytes: 200,
                    lost: 0
                },
                Bin {
                    index: 1,
                    packets: 1,
                    bytes: 100,
                    lost: 2
                },
                Bin {
                    index: 2,
                    packets: 1,
                    bytes: 100,
                    lost: 0
                },
            ]
        );
        assert_eq!(t.totals().lost, 2);
        assert!((t.totals().loss_ratio() - 2.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn a_late_packet_takes_its_loss_back() {
        let mut t = Tally::new(100 * MS);
        t.data(0, 0, 10);
        t.data(2, 20 * MS, 10);
        t.data(1, 10 * MS, 10);
        let tot = t.totals();
        assert_eq!((tot.lost, tot.reordered, tot.packets), (0, 1, 3));
        assert_eq!(t.drain()[0].lost, 0);
    }

    #[test]
    fn fin_counts_the_tail() {
        let mut t = Tally::new(100 * MS);
        t.data(0, 0, 10);
        t.data(1, 1, 10);
        t.fin(5);
        assert_eq!(t.totals().lost, 3);
        assert_eq!(t.totals().sent, Some(5));
        assert!((t.totals().loss_ratio() - 0.6).abs() < 1e-12);
        t.fin(5); // repeated Fins change nothing
        assert_eq!(t.totals().lost, 3);
    }

    #[test]
    fn settled_returns_only_old_bins_once() {
        let mut t = Tally::new(100 * MS);
        for (seq, at) in [(0, 50), (1, 150), (2, 250), (3, 1250)] {
            t.data(seq, at * MS, 1);
        }
        let old: Vec<u64> = t.settled(1000 * MS).iter().map(|b| b.index).collect();
        assert_eq!(old, vec![0, 1]);
        assert!(t.settled(1000 * MS).is_empty());
        let rest: Vec<u64> = t.drain().iter().map(|b| b.index).collect();
        assert_eq!(rest, vec![2, 12]);
    }
}
