//! Per-connection storage that is written at the back and released from the front, as commands queue up and
//! leave: one `Vec` per kind of item (argument bytes, argument spans, reply lengths), addressed by a virtual
//! position that keeps counting up, so releasing the front never renumbers what is still held. Storage is
//! compacted when more than a quarter of it is released, and reused from then on: no allocation per command or
//! argument once a connection has warmed up.

/// Where one argument (or field name) sits, relative to the start of its command's (or reply's) bytes.
/// An argument whose bytes were not kept (too long to store, or cut by a gap) has `start == ELIDED` and
/// reads as empty: it must not be mistaken for a real empty argument (see `ArgsView::is_elided`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub len: u32,
}

/// A FIFO of items in one contiguous `Vec`, addressed by virtual positions.
#[derive(Debug)]
pub(crate) struct Fifo<T> {
    items: Vec<T>,
    /// Virtual position of `items[0]`.
    base: u64,
    /// Items before this virtual position are released.
    released: u64,
}

/// `Span::start` of an argument whose bytes were not kept.
pub(crate) const ELIDED: u32 = u32::MAX;

impl Span {
    #[inline]
    fn range(&self) -> std::ops::Range<usize> {
        if self.start == ELIDED {
            return 0..0;
        }
        self.start as usize..(self.start + self.len) as usize
    }
}

impl<T: Copy> Fifo<T> {
    pub fn new() -> Fifo<T> {
        Fifo { items: Vec::new(), base: 0, released: 0 }
    }

    /// Virtual position of the next item pushed.
    #[inline]
    pub fn end(&self) -> u64 {
        self.base + self.items.len() as u64
    }

    #[inline]
    pub fn push(&mut self, item: T) {
        self.items.push(item);
    }

    #[inline]
    pub fn extend(&mut self, items: &[T]) {
        self.items.extend_from_slice(items);
    }

    /// Appends `src[start..start + n]`. Short runs with room after them in `src` are copied as one
    /// fixed-size block and cut back, which compiles to a few moves instead of a call to memcpy.
    #[inline]
    pub fn extend_from(&mut self, src: &[T], start: usize, n: usize) {
        const BLOCK: usize = 16;
        if n <= BLOCK && start + BLOCK <= src.len() {
            let len = self.items.len();
            self.items.extend_from_slice(&src[start..start + BLOCK]);
            self.items.truncate(len + n);
        } else {
            self.items.extend_from_slice(&src[start..start + n]);
        }
    }

    /// Items from virtual position `start`, `len` of them. Positions must be held (not released, pushed).
    #[inline]
    pub fn slice(&self, start: u64, len: usize) -> &[T] {
        let from = (start - self.base) as usize;
        &self.items[from..from + len]
    }

    /// Drops everything from virtual position `end` on (an unfinished command being abandoned).
    pub fn truncate(&mut self, end: u64) {
        self.items.truncate((end - self.base) as usize);
    }

    /// Releases everything before virtual position `upto`; compacts when most of the storage is released.
    pub fn release(&mut self, upto: u64) {
        self.released = self.released.max(upto);
        let dead = (self.released - self.base) as usize;
        if dead == self.items.len() {
            self.base = self.released;
            self.items.clear();
        } else if dead > 4096 && dead * 4 > self.items.len() {
            // At a quarter rather than half released: the storage stays within 4/3 of what is held (a
            // connection whose replies never come holds its full share for the whole capture), for 3 moves
            // per released item at most.
            self.items.drain(..dead);
            self.base = self.released;
        }
    }

    /// Items held (released ones included until compaction), for memory accounting.
    pub fn held(&self) -> usize {
        self.items.len()
    }
}

/// The arguments of one command: `args.get(0)` is the command name as sent.
#[derive(Clone, Copy, Debug)]
pub struct ArgsView<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) spans: &'a [Span],
}

impl<'a> ArgsView<'a> {
    pub fn len(&self) -> usize {
        self.spans.len()
    }
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        let s = self.spans.get(i)?;
        Some(&self.bytes[s.range()])
    }
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let bytes = self.bytes;
        self.spans.iter().map(move |s| &bytes[s.range()])
    }
    /// Argument `i` was not kept (too long to store, or its bytes were lost): it reads as empty but is
    /// not the empty string, and its real bytes are unknown.
    pub fn is_elided(&self, i: usize) -> bool {
        self.spans.get(i).is_some_and(|s| s.start == ELIDED)
    }
}

/// The arguments of one command read from elsewhere than a connection (a line of a text trace), held so
/// that the capture's row builder can take them as a `Command`'s: reused from one command to the next.
#[derive(Debug, Default)]
pub struct OwnedArgs {
    bytes: Vec<u8>,
    spans: Vec<Span>,
}

impl OwnedArgs {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }
    pub fn push(&mut self, arg: &[u8]) {
        let start = u32::try_from(self.bytes.len()).unwrap_or(ELIDED);
        self.spans.push(Span { start, len: arg.len() as u32 });
        self.bytes.extend_from_slice(arg);
    }
    pub fn view(&self) -> ArgsView<'_> {
        ArgsView { bytes: &self.bytes, spans: &self.spans }
    }
}

/// The field names of an HGETALL reply, in the order the server sent them.
pub type FieldsView<'a> = ArgsView<'a>;
