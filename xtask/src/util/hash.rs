//! sha256 digests as the results record them: lowercase hex.

use std::path::Path;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// sha256 of a file, lowercase hex, read in pieces (any size); errors
/// name the file. It must be a regular file ([`crate::util::fs::open_limited`]):
/// a symlink to `/dev/zero` or a FIFO would be hashed for ever.
pub fn sha256_file(path: &Path) -> Result<String> {
    let limit = crate::util::fs::FileLimit {
        what: "regular file",
        max_bytes: u64::MAX >> 1,
    };
    let mut file = crate::util::fs::open_limited(path, limit, "")?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = std::io::Read::read(&mut file, &mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// sha256 of bytes, lowercase hex.
pub fn sha256_bytes(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
