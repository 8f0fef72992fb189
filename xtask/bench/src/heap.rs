//! Heap growth of a piece of work: the bytes it left allocated, counted by the allocator.
//! RSS cannot say it: memory an earlier benchmark freed is handed out again without the
//! process growing (a row measured that way read 0 MB).
//!
//! Counting is on only inside [`growth`], so the timed benchmarks pay one relaxed load per
//! allocation and nothing else.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// The system allocator, counting while [`COUNTING`] is on.
pub(crate) struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
/// Bytes allocated minus bytes freed while counting.
static NET: AtomicI64 = AtomicI64::new(0);

fn count(delta: i64) {
    if COUNTING.load(Ordering::Relaxed) {
        NET.fetch_add(delta, Ordering::Relaxed);
    }
}

fn size(layout: Layout) -> i64 {
    i64::try_from(layout.size()).unwrap_or(i64::MAX)
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counting touches
// only two atomics and never allocates.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            count(size(layout));
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            count(size(layout));
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) };
        count(-size(layout));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract is `System`'s.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            count(i64::try_from(new_size).unwrap_or(i64::MAX) - size(layout));
        }
        new
    }
}

/// Runs `work` and says how many bytes it left allocated (what it allocated and kept, less
/// what it freed), with its result, which is kept alive by the caller.
pub(crate) fn growth<T>(work: impl FnOnce() -> T) -> (T, i64) {
    NET.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let kept = work();
    COUNTING.store(false, Ordering::SeqCst);
    (kept, NET.load(Ordering::SeqCst))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_kept_counts_and_what_is_freed_does_not() {
        let (kept, grew) = growth(|| {
            let freed = vec![0u8; 1 << 20];
            drop(freed);
            vec![0u8; 4096]
        });
        assert_eq!(kept.len(), 4096);
        // Other tests' threads may allocate meanwhile; the freed MiB must not count.
        assert!((4096..1 << 19).contains(&grew), "{grew}");
    }
}
