//! What TCP streams move over a path, as models (`model`: Mathis, Padhye,
//! CUBIC's and BBR's response to loss, the aggregate and its knee), and what
//! `braid plan` advises from them (`advice`), and the bottleneck's rate as
//! the receiving end sees it in its arrivals (`dispersion`). Pure functions
//! of the path.

pub mod advice;
pub mod dispersion;
pub mod model;
