//! Fixed-capacity FIFO used for work queues and response queues.

/// A FIFO of at most `N` elements with indexed access from the front.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ring<T: Copy, const N: usize> {
    slots: [Option<T>; N],
    head: usize,
    len: usize,
}

impl<T: Copy, const N: usize> Ring<T, N> {
    pub(crate) const fn new() -> Self {
        Ring {
            slots: [None; N],
            head: 0,
            len: 0,
        }
    }

    fn slot(&self, i: usize) -> Option<usize> {
        if i >= self.len {
            return None;
        }
        self.head.wrapping_add(i).checked_rem(N)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len >= N
    }

    pub(crate) fn free(&self) -> usize {
        N.saturating_sub(self.len)
    }

    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        let s = self.slot(i)?;
        self.slots.get(s)?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        let s = self.slot(i)?;
        self.slots.get_mut(s)?.as_mut()
    }

    pub(crate) fn front(&self) -> Option<&T> {
        self.get(0)
    }

    pub(crate) fn front_mut(&mut self) -> Option<&mut T> {
        self.get_mut(0)
    }

    pub(crate) fn back_mut(&mut self) -> Option<&mut T> {
        let last = self.len.checked_sub(1)?;
        self.get_mut(last)
    }

    pub(crate) fn push(&mut self, v: T) -> Result<(), T> {
        if self.is_full() {
            return Err(v);
        }
        let s = match self.head.wrapping_add(self.len).checked_rem(N) {
            Some(s) => s,
            None => return Err(v),
        };
        match self.slots.get_mut(s) {
            Some(slot) => {
                *slot = Some(v);
                self.len = self.len.wrapping_add(1);
                Ok(())
            }
            None => Err(v),
        }
    }

    /// Push, dropping the oldest element if full.
    pub(crate) fn push_overwrite(&mut self, v: T) {
        if self.is_full() {
            let _ = self.pop();
        }
        let _ = self.push(v);
    }

    pub(crate) fn pop(&mut self) -> Option<T> {
        let s = self.slot(0)?;
        let v = self.slots.get_mut(s)?.take();
        self.head = self.head.wrapping_add(1).checked_rem(N).unwrap_or(0);
        self.len = self.len.saturating_sub(1);
        v
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len).filter_map(move |i| self.get(i))
    }
}
