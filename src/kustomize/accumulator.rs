//! The accumulator (kustomize's `accumulator` package): the resources,
//! transformer configuration and vars a kustomization has gathered so far.

use std::sync::Arc;

use super::error::{Error, Result};
use super::fieldspec::{FieldSpec, TransformerConfig};
use super::kustomization::VarEntry;
use super::resource::{Origin, ResMap};

/// Everything accumulated so far: resources, transformer config and vars.
#[derive(Debug, Default)]
pub struct Accumulator {
    pub resources: ResMap,
    /// Shared until modified: most kustomizations carry the defaults.
    pub config: Arc<TransformerConfig>,
    pub vars: Vec<VarEntry>,
}

impl Accumulator {
    pub fn new() -> Accumulator {
        Accumulator {
            resources: ResMap::new(),
            config: Arc::new(TransformerConfig::default()),
            vars: Vec::new(),
        }
    }

    /// Merges a transformer configuration, sharing instead of copying when
    /// nothing changes.
    pub fn merge_config(&mut self, other: &Arc<TransformerConfig>) -> Result<()> {
        if Arc::ptr_eq(&self.config, other) || *self.config == **other {
            return Ok(());
        }
        if *self.config == TransformerConfig::default() {
            self.config = Arc::clone(other);
            return Ok(());
        }
        Arc::make_mut(&mut self.config).merge(other)
    }

    /// Appends a sub-kustomization's accumulation (resources, config, vars).
    pub(crate) fn merge(&mut self, other: Accumulator) -> Result<()> {
        self.resources.append_all(other.resources)?;
        self.merge_config(&other.config)?;
        for v in other.vars {
            // Even an identical definition reached twice is an error.
            if self.vars.iter().any(|k| k.name == v.name) {
                return Err(Error::invalid(format!(
                    "var '{}' already encountered",
                    v.name
                )));
            }
            self.vars.push(v);
        }
        Ok(())
    }

    /// Records a transformer's origin on every resource (buildMetadata:
    /// the origin of those without one, a transformation of the others).
    pub fn record_transformer(&mut self, origin: Option<Origin>) {
        let Some(o) = origin else { return };
        for r in self.resources.resources_mut().iter_mut() {
            if r.origin.is_none() {
                r.origin = Some(o.clone());
            } else {
                r.transformations.push(o.clone());
            }
        }
    }
}

/// Image field specs beyond kustomize's defaults (the defaults are covered
/// by the search for every `containers` list).
pub fn custom_image_specs(all: &[FieldSpec]) -> Vec<FieldSpec> {
    let defaults = TransformerConfig::shared_defaults();
    all.iter()
        .filter(|f| !defaults.images.contains(f))
        .cloned()
        .collect()
}
