//! The core of a compositor, without the protocol and the GPU: where outputs are, which parts
//! of them changed since the last frame, and what must be redrawn.

pub mod damage;
pub mod geometry;
pub mod output;
pub mod region;

pub use damage::DamageTracker;
pub use geometry::{Point, Rect, Size};
pub use output::{Mode, Output, OutputLayout, Transform};
pub use region::Region;
