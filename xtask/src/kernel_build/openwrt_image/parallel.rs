//! `jobs` threads over a list, results in its order: device fit's device
//! trees and the steps after its shared LZMA run this way.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::Result;
use xshell::Shell;

/// `f` on each of `items` (with a shell of the thread's), `jobs` threads
/// at a time; the results in `items`' order.
pub(super) fn in_parallel<T: Send, R: Send>(
    items: Vec<T>,
    jobs: usize,
    f: impl Fn(&Shell, T) -> Result<R> + Sync,
) -> Vec<Result<R>> {
    let next = AtomicUsize::new(0);
    let items: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let results: Vec<Mutex<Option<Result<R>>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                let sh = Shell::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(slot) = items.get(i) else { return };
                    // Each index is taken once, so the item is there.
                    let Some(item) = slot.lock().ok().and_then(|mut s| s.take()) else {
                        continue;
                    };
                    let out = match &sh {
                        Ok(sh) => f(sh, item),
                        Err(e) => Err(anyhow::anyhow!("starting a shell: {e}")),
                    };
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = Some(out);
                    }
                }
            });
        }
    });
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .unwrap_or_else(|| Err(anyhow::anyhow!("a thread panicked")))
        })
        .collect()
}
