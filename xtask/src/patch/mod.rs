//! Unified-diff patch engine with GNU patch semantics.
