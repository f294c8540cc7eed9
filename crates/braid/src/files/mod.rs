//! What a transfer moves and where it lands: the listing of local files
//! (`manifest`), every path below a root reached without a link
//! (`beneath`), paths that cross the wire (`pathsafe`), what a receiver holds
//! of a file (`ranges`), and a file's BLAKE3 assembled from its blocks
//! (`treehash`).

pub mod beneath;
pub mod filter;
pub mod manifest;
pub mod pathsafe;
pub mod ranges;
pub mod treehash;
