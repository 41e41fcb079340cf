//! `cargo +nightly fuzz run parse_patch`: the patch parser must never panic
//! on any bytes, and whatever it accepts must survive the engine's dry run
//! and the quilt-form refresh renderer without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(patch) = xtask::patches::engine::parse_patch(data) {
        let _ = patch.reversed();
        for f in &patch.files {
            for h in &f.hunks {
                let _ = (h.old_lines(), h.new_lines(), h.first(), h.new_first());
            }
        }
    }
    let _ = xtask::patches::stack::refresh::header(data);
    let _ = xtask::patches::stack::refresh::filenames_in_patch(data);
});
