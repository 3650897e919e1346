//! Outputs (monitors) and their place in the global layout.

use crate::geometry::{Point, Rect, Size};

/// A display mode: resolution in physical pixels and refresh rate in millihertz, as KMS reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mode {
    pub size: Size,
    pub refresh_mhz: u32,
}

/// How the output's content is rotated or flipped (`wl_output.transform`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transform {
    #[default]
    Normal,
    Rotate90,
    Rotate180,
    Rotate270,
}

impl Transform {
    /// Whether width and height swap under this transform.
    pub fn swaps_axes(self) -> bool {
        matches!(self, Transform::Rotate90 | Transform::Rotate270)
    }
}

/// One output: a connector with a mode, an integer scale and a position in the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub name: String,
    pub mode: Mode,
    pub scale: i32,
    pub transform: Transform,
    pub position: Point,
}

impl Output {
    pub fn new(name: impl Into<String>, mode: Mode) -> Self {
        Self { name: name.into(), mode, scale: 1, transform: Transform::Normal, position: Point::default() }
    }

    /// The output's size in logical coordinates: physical size, transformed, divided by the scale.
    pub fn logical_size(&self) -> Size {
        let Size { w, h } = self.mode.size;
        let (w, h) = if self.transform.swaps_axes() { (h, w) } else { (w, h) };
        let scale = self.scale.max(1);
        Size::new(w / scale, h / scale)
    }

    /// Where the output is in the global logical space.
    pub fn geometry(&self) -> Rect {
        let size = self.logical_size();
        Rect::new(self.position.x, self.position.y, size.w, size.h)
    }
}

/// Outputs placed left to right, as a simple compositor arranges them by default.
#[derive(Debug, Clone, Default)]
pub struct OutputLayout {
    outputs: Vec<Output>,
}

impl OutputLayout {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an output to the right of the existing ones.
    pub fn push(&mut self, mut output: Output) {
        let x = self.outputs.iter().map(|existing| existing.geometry().right()).max().unwrap_or(0);
        output.position = Point::new(x, 0);
        self.outputs.push(output);
    }

    pub fn outputs(&self) -> &[Output] {
        &self.outputs
    }

    /// The output under a point, e.g. to decide where a new window opens.
    pub fn output_at(&self, point: Point) -> Option<&Output> {
        self.outputs.iter().find(|output| output.geometry().contains(point))
    }

    /// The outputs a rectangle touches: those that must redraw when it changes.
    pub fn outputs_touching(&self, rect: &Rect) -> impl Iterator<Item = &Output> + '_ {
        let rect = *rect;
        self.outputs.iter().filter(move |output| output.geometry().intersection(&rect).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(w: i32, h: i32) -> Mode {
        Mode { size: Size::new(w, h), refresh_mhz: 60_000 }
    }

    #[test]
    fn a_rotated_scaled_output_has_swapped_logical_size() {
        let mut output = Output::new("DP-1", mode(3840, 2160));
        output.scale = 2;
        output.transform = Transform::Rotate90;
        assert_eq!(output.logical_size(), Size::new(1080, 1920));
    }

    #[test]
    fn outputs_are_laid_out_left_to_right() {
        let mut layout = OutputLayout::new();
        layout.push(Output::new("eDP-1", mode(1920, 1080)));
        layout.push(Output::new("HDMI-A-1", mode(1280, 1024)));
        assert_eq!(layout.outputs()[1].position, Point::new(1920, 0));
        assert_eq!(layout.output_at(Point::new(2000, 10)).map(|o| o.name.as_str()), Some("HDMI-A-1"));
    }
}
