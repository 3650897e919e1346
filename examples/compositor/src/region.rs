//! A region: a set of non-overlapping rectangles, as `wl_region` and damage use them.

use crate::geometry::Rect;

/// Non-overlapping rectangles. Adding a rectangle first removes what is already covered, so
/// the area is never counted twice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Region {
    rects: Vec<Rect>,
}

impl Region {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn from_rect(rect: Rect) -> Self {
        let mut region = Self::new();
        region.add(rect);
        region
    }

    pub fn rects(&self) -> &[Rect] {
        &self.rects
    }

    pub fn is_empty(&self) -> bool {
        self.rects.is_empty()
    }

    pub fn area(&self) -> i64 {
        self.rects.iter().map(Rect::area).sum()
    }

    /// Adds a rectangle (`wl_region.add`).
    pub fn add(&mut self, rect: Rect) {
        if rect.is_empty() {
            return;
        }
        let mut pieces = vec![rect];
        for existing in &self.rects {
            pieces = pieces.iter().flat_map(|piece| piece.subtract(existing)).collect();
        }
        self.rects.extend(pieces);
    }

    /// Removes a rectangle (`wl_region.subtract`).
    pub fn subtract(&mut self, rect: Rect) {
        self.rects = self.rects.iter().flat_map(|existing| existing.subtract(&rect)).collect();
    }

    /// The part of the region inside `clip`.
    pub fn clipped(&self, clip: &Rect) -> Region {
        Region { rects: self.rects.iter().filter_map(|rect| rect.intersection(clip)).collect() }
    }

    pub fn extend(&mut self, other: &Region) {
        for rect in &other.rects {
            self.add(*rect);
        }
    }

    /// The bounding box of the whole region.
    pub fn bounds(&self) -> Rect {
        self.rects.iter().fold(Rect::default(), |acc, rect| acc.union_bounds(rect))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_additions_are_not_counted_twice() {
        let mut region = Region::new();
        region.add(Rect::new(0, 0, 10, 10));
        region.add(Rect::new(5, 5, 10, 10));
        assert_eq!(region.area(), 100 + 100 - 25);
    }

    #[test]
    fn subtracting_a_hole_removes_its_area() {
        let mut region = Region::from_rect(Rect::new(0, 0, 10, 10));
        region.subtract(Rect::new(2, 2, 2, 2));
        assert_eq!(region.area(), 96);
    }
}
