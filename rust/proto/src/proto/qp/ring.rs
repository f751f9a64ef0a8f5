//! Fixed-capacity FIFO used for work queues and response queues, over
//! storage the caller provides (an array, or a buffer the kernel allocated
//! for the QP's queue depths).

/// Storage for the elements of a queue: a slice of `Option<T>` whose
/// length is the queue's capacity.
pub trait Slots<T> {
    /// The slots.
    fn slots(&self) -> &[Option<T>];
    /// The slots, writable.
    fn slots_mut(&mut self) -> &mut [Option<T>];
}

impl<T, const N: usize> Slots<T> for [Option<T>; N] {
    fn slots(&self) -> &[Option<T>] {
        self
    }
    fn slots_mut(&mut self) -> &mut [Option<T>] {
        self
    }
}

/// A FIFO of at most `capacity` elements with indexed access from the front.
pub(crate) struct Ring<T: Copy, B: Slots<T>> {
    slots: B,
    head: usize,
    len: usize,
    _t: core::marker::PhantomData<T>,
}

impl<T: Copy, B: Slots<T>> core::fmt::Debug for Ring<T, B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Ring")
            .field("capacity", &self.capacity())
            .field("head", &self.head)
            .field("len", &self.len)
            .finish()
    }
}

impl<T: Copy, B: Slots<T>> Ring<T, B> {
    /// An empty ring over `slots` (whatever they held is dropped).
    pub(crate) fn new(mut slots: B) -> Self {
        slots.slots_mut().iter_mut().for_each(|s| *s = None);
        Ring {
            slots,
            head: 0,
            len: 0,
            _t: core::marker::PhantomData,
        }
    }

    /// Empties the ring, keeping its storage.
    pub(crate) fn clear(&mut self) {
        self.slots.slots_mut().iter_mut().for_each(|s| *s = None);
        self.head = 0;
        self.len = 0;
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.slots().len()
    }

    fn slot(&self, i: usize) -> Option<usize> {
        if i >= self.len {
            return None;
        }
        self.head.wrapping_add(i).checked_rem(self.capacity())
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub(crate) fn is_full(&self) -> bool {
        self.len >= self.capacity()
    }

    pub(crate) fn free(&self) -> usize {
        self.capacity().saturating_sub(self.len)
    }

    pub(crate) fn get(&self, i: usize) -> Option<&T> {
        let s = self.slot(i)?;
        self.slots.slots().get(s)?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        let s = self.slot(i)?;
        self.slots.slots_mut().get_mut(s)?.as_mut()
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
        let Some(s) = self
            .head
            .wrapping_add(self.len)
            .checked_rem(self.capacity())
        else {
            return Err(v);
        };
        match self.slots.slots_mut().get_mut(s) {
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
        let v = self.slots.slots_mut().get_mut(s)?.take();
        self.head = self
            .head
            .wrapping_add(1)
            .checked_rem(self.capacity())
            .unwrap_or(0);
        self.len = self.len.saturating_sub(1);
        v
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len).filter_map(move |i| self.get(i))
    }
}
