//! What TCP streams move over a path, as models (`model`: Mathis, Padhye,
//! CUBIC's and BBR's response to loss, the aggregate and its knee), and what
//! `braid plan` advises from them (`advice`). Pure functions of the path.

pub mod advice;
pub mod model;
