//! Per-output damage tracking: what changed since each output's last frame.

use std::collections::HashMap;

use crate::geometry::Rect;
use crate::output::OutputLayout;
use crate::region::Region;

/// Collects damage in global coordinates and hands each output the part it must redraw,
/// in output-local coordinates. An output that has never rendered gets full damage.
#[derive(Debug, Default)]
pub struct DamageTracker {
    pending: HashMap<String, Region>,
    rendered_once: HashMap<String, bool>,
}

impl DamageTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records damage (a surface commit, a window move) on every output it touches.
    pub fn damage(&mut self, layout: &OutputLayout, rect: Rect) {
        for output in layout.outputs_touching(&rect) {
            let geometry = output.geometry();
            if let Some(local) = rect.intersection(&geometry) {
                let local = local.translate(crate::geometry::Point::new(-geometry.loc.x, -geometry.loc.y));
                self.pending.entry(output.name.clone()).or_default().add(local);
            }
        }
    }

    /// Takes the damage for one output's next frame, clearing it.
    pub fn take_for_output(&mut self, layout: &OutputLayout, name: &str) -> Region {
        let Some(output) = layout.outputs().iter().find(|output| output.name == name) else {
            return Region::new();
        };
        let size = output.logical_size();
        let full = Rect::new(0, 0, size.w, size.h);
        let first = !self.rendered_once.insert(name.to_owned(), true).unwrap_or(false);
        let pending = self.pending.remove(name).unwrap_or_default();
        if first {
            Region::from_rect(full)
        } else {
            pending.clipped(&full)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::Size;
    use crate::output::{Mode, Output};

    fn layout() -> OutputLayout {
        let mut layout = OutputLayout::new();
        let mode = Mode { size: Size::new(100, 100), refresh_mhz: 60_000 };
        layout.push(Output::new("A", mode));
        layout.push(Output::new("B", mode));
        layout
    }

    #[test]
    fn the_first_frame_of_an_output_is_fully_damaged() {
        let layout = layout();
        let mut tracker = DamageTracker::new();
        assert_eq!(tracker.take_for_output(&layout, "A").area(), 100 * 100);
        assert!(tracker.take_for_output(&layout, "A").is_empty());
    }

    #[test]
    fn damage_across_two_outputs_is_split_in_local_coordinates() {
        let layout = layout();
        let mut tracker = DamageTracker::new();
        tracker.take_for_output(&layout, "A");
        tracker.take_for_output(&layout, "B");
        tracker.damage(&layout, Rect::new(90, 10, 20, 10));
        assert_eq!(tracker.take_for_output(&layout, "A").rects(), &[Rect::new(90, 10, 10, 10)]);
        assert_eq!(tracker.take_for_output(&layout, "B").rects(), &[Rect::new(0, 10, 10, 10)]);
    }
}
