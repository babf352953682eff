//! Patches: strategic merge ([`smp`]) and RFC 6902 JSON patches
//! ([`json6902`]), with kustomize v5.5's semantics.

pub mod json6902;
pub mod smp;

pub use json6902::apply_json6902;
pub use smp::{
    EMPTY_NULL_MARK, EMPTY_TEXT_NULL_MARK, merge_values, strategic_merge, strategic_merge_owned,
};

/// A patch that cannot be applied; the text follows kustomize's message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PatchError(pub String);
