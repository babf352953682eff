//! Group/version/kind -> API resource and scope, cached per group-version.
//!
//! One cache can serve every reconcile of a controller (what the cluster
//! serves does not depend on who asks): a group-version is then asked for
//! once per `max_age` (see [`DiscoveryCache::with_max_age`]), not once per
//! reconcile. A kind
//! that disappears is noticed sooner: an apply answered 404 forgets its
//! group-version, and group-versions found missing are asked again by the
//! next plan.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kube::Client;
use kube::core::GroupVersion;
use kube::discovery::{ApiCapabilities, ApiResource, Scope};

use super::ApplyError;

/// A kind served by the cluster.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub resource: ApiResource,
    pub namespaced: bool,
}

type Resources = Arc<Vec<(ApiResource, ApiCapabilities)>>;

/// What is known of one group-version, and since when.
type Entry = (Instant, Option<Resources>);

/// Caches the resources of each group-version the applier has asked about.
/// A group-version the cluster does not serve (404) is cached as `None`
/// until [`DiscoveryCache::forget_missing`] or [`DiscoveryCache::forget`].
/// Any entry is asked again once it is older than `max_age`.
pub struct DiscoveryCache {
    client: Client,
    max_age: Duration,
    cache: Mutex<HashMap<(String, String), Entry>>,
}

impl DiscoveryCache {
    /// A cache for one apply (entries never expire while it lives).
    pub fn new(client: Client) -> Self {
        DiscoveryCache::with_max_age(client, Duration::MAX)
    }

    /// A cache shared by many applies: entries older than `max_age` are
    /// asked again.
    pub fn with_max_age(client: Client, max_age: Duration) -> Self {
        DiscoveryCache {
            client,
            max_age,
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(String, String), Entry>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops what is known about one group-version (e.g. after its CRD was applied).
    pub fn forget(&self, group: &str, version: &str) {
        self.lock()
            .remove(&(group.to_string(), version.to_string()));
    }

    /// Drops the group-versions found missing (a later call asks again).
    pub fn forget_missing(&self) {
        self.lock().retain(|_, (_, v)| v.is_some());
    }

    async fn resources(&self, group: &str, version: &str) -> Result<Option<Resources>, ApplyError> {
        let key = (group.to_string(), version.to_string());
        if let Some((at, hit)) = self.lock().get(&key)
            && at.elapsed() < self.max_age
        {
            return Ok(hit.clone());
        }
        let gv = GroupVersion::gv(group, version);
        let found = match kube::discovery::pinned_group(&self.client, &gv).await {
            Ok(g) => Some(Arc::new(g.versioned_resources(version))),
            Err(kube::Error::Api(s)) if s.code == 404 => None,
            Err(e) => {
                return Err(ApplyError::Discovery(format!(
                    "discovery of {}: {}",
                    gv.api_version(),
                    super::describe_kube_error(&e)
                )));
            }
        };
        self.lock().insert(key, (Instant::now(), found.clone()));
        Ok(found)
    }

    /// The resource serving `kind` in `group/version`, `None` when the
    /// cluster does not serve it.
    pub async fn resolve(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Option<Resolved>, ApplyError> {
        let Some(resources) = self.resources(group, version).await? else {
            return Ok(None);
        };
        Ok(resources
            .iter()
            .find(|(ar, _)| ar.kind == kind)
            .map(|(ar, caps)| Resolved {
                resource: ar.clone(),
                namespaced: caps.scope == Scope::Namespaced,
            }))
    }

    /// The kind in any version the cluster serves for `group` (its
    /// preferred version first): for objects recorded under a version that
    /// is no longer served. `None` when no served version has the kind.
    pub async fn resolve_any_version(
        &self,
        group: &str,
        kind: &str,
    ) -> Result<Option<Resolved>, ApplyError> {
        let versions: Vec<String> = if group.is_empty() {
            vec!["v1".to_string()]
        } else {
            match kube::discovery::group(&self.client, group).await {
                Ok(g) => g.versions().map(str::to_string).collect(),
                // the group is not served at all: kube lists the groups
                // and finds none of that name (MissingApiGroup), or the
                // group's document is a 404
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
                Err(kube::Error::Discovery(kube::error::DiscoveryError::MissingApiGroup(_))) => {
                    return Ok(None);
                }
                Err(e) => {
                    return Err(ApplyError::Discovery(format!(
                        "discovery of group {group}: {}",
                        super::describe_kube_error(&e)
                    )));
                }
            }
        };
        for v in versions {
            if let Some(r) = self.resolve(group, &v, kind).await? {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }
}
