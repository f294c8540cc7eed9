//! How many streams carry a session and with which control: the fixed
//! modes' plan (`plan`: each stream's control and braid-cc settings), and
//! the steers that set them while a session runs (`auto`, braid's default;
//! `falcon`, the search it is measured against). A steer is a state machine
//! behind `proto::steer::Steer`; `session` applies what it says.

pub mod auto;
pub mod falcon;
pub mod plan;
