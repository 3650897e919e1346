//! Integer geometry in the compositor's logical coordinate space.

/// A position in logical coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

impl Point {
    pub const fn new(x: i32, y: i32) -> Self {
        Self { x, y }
    }
}

/// A width and height; never negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Size {
    pub w: i32,
    pub h: i32,
}

impl Size {
    pub const fn new(w: i32, h: i32) -> Self {
        Self { w, h }
    }
}

/// An axis-aligned rectangle: `loc` is the top-left corner, the right and bottom edges are exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Rect {
    pub loc: Point,
    pub size: Size,
}

impl Rect {
    pub const fn new(x: i32, y: i32, w: i32, h: i32) -> Self {
        Self { loc: Point::new(x, y), size: Size::new(w, h) }
    }

    pub fn is_empty(&self) -> bool {
        self.size.w <= 0 || self.size.h <= 0
    }

    pub fn right(&self) -> i32 {
        self.loc.x + self.size.w
    }

    pub fn bottom(&self) -> i32 {
        self.loc.y + self.size.h
    }

    pub fn area(&self) -> i64 {
        if self.is_empty() {
            0
        } else {
            i64::from(self.size.w) * i64::from(self.size.h)
        }
    }

    pub fn contains(&self, point: Point) -> bool {
        point.x >= self.loc.x && point.x < self.right() && point.y >= self.loc.y && point.y < self.bottom()
    }

    /// The overlap of two rectangles, if they overlap at all.
    pub fn intersection(&self, other: &Rect) -> Option<Rect> {
        let x = self.loc.x.max(other.loc.x);
        let y = self.loc.y.max(other.loc.y);
        let right = self.right().min(other.right());
        let bottom = self.bottom().min(other.bottom());
        let rect = Rect::new(x, y, right - x, bottom - y);
        (!rect.is_empty()).then_some(rect)
    }

    /// The smallest rectangle containing both.
    pub fn union_bounds(&self, other: &Rect) -> Rect {
        if self.is_empty() {
            return *other;
        }
        if other.is_empty() {
            return *self;
        }
        let x = self.loc.x.min(other.loc.x);
        let y = self.loc.y.min(other.loc.y);
        Rect::new(x, y, self.right().max(other.right()) - x, self.bottom().max(other.bottom()) - y)
    }

    /// The parts of `self` not covered by `other`: at most four rectangles.
    pub fn subtract(&self, other: &Rect) -> Vec<Rect> {
        let Some(cut) = self.intersection(other) else {
            return if self.is_empty() { Vec::new() } else { vec![*self] };
        };
        let pieces = [
            Rect::new(self.loc.x, self.loc.y, self.size.w, cut.loc.y - self.loc.y),
            Rect::new(self.loc.x, cut.bottom(), self.size.w, self.bottom() - cut.bottom()),
            Rect::new(self.loc.x, cut.loc.y, cut.loc.x - self.loc.x, cut.size.h),
            Rect::new(cut.right(), cut.loc.y, self.right() - cut.right(), cut.size.h),
        ];
        pieces.into_iter().filter(|piece| !piece.is_empty()).collect()
    }

    pub fn translate(&self, by: Point) -> Rect {
        Rect::new(self.loc.x + by.x, self.loc.y + by.y, self.size.w, self.size.h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intersection_of_overlapping_rectangles() {
        let a = Rect::new(0, 0, 100, 100);
        let b = Rect::new(50, 50, 100, 100);
        assert_eq!(a.intersection(&b), Some(Rect::new(50, 50, 50, 50)));
        assert_eq!(a.intersection(&Rect::new(100, 0, 10, 10)), None);
    }

    #[test]
    fn subtracting_the_middle_leaves_four_pieces_with_the_right_area() {
        let outer = Rect::new(0, 0, 30, 30);
        let pieces = outer.subtract(&Rect::new(10, 10, 10, 10));
        assert_eq!(pieces.len(), 4);
        assert_eq!(pieces.iter().map(Rect::area).sum::<i64>(), 900 - 100);
    }
}
