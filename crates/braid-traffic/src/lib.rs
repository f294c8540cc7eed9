//! Traffic and probes for the laboratory, as pure logic: no sockets, no
//! clocks (every function takes the time it needs as an argument).
//!
//! - [`shape`]: how fast a source sends at time t, and when its next packet
//!   is due (the stiff sinusoid of Hacker 2004 Eq. 3, a constant rate, Poisson
//!   arrivals);
//! - [`packet`]: the header every braid traffic datagram carries;
//! - [`tally`]: what a sink makes of the datagrams it receives (rate and loss
//!   per interval of the sender's clock);
//! - [`icmp`]: ICMP echo framing for the RTT prober;
//! - [`stats`]: quantiles and reordering of probe samples.
//!
//! The sockets live in `braid traffic` (crates/braid-cli).

pub mod icmp;
pub mod packet;
pub mod shape;
pub mod stats;
pub mod tally;
