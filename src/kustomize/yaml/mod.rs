//! YAML reading and printing with kustomize 5.5's exact semantics.
//!
//! * [`parse`]: YAML stream -> [`Value`]s, resolving scalars the way kustomize
//!   (kyaml on go-yaml v3, then JSON) does.
//! * [`emit`]: [`Value`] -> YAML text byte-identical to kustomize's output
//!   (JSON -> `sigs.k8s.io/yaml` -> go-yaml v2 emitter), and Go-compatible JSON
//!   for content hashing.

pub mod emit;
pub mod parse;
pub mod value;

pub use emit::{format_float, format_yaml_float, natural_cmp, to_go_json, write_document};
pub use parse::{ParseError, parse_documents};
pub use value::{Mapping, PathSeg, Value};
