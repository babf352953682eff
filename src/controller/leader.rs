//! Leader election with a `coordination.k8s.io/v1` Lease, so that two
//! replicas never reconcile at once.
//!
//! A candidate takes the Lease when it is free or expired (an optimistic
//! `replace` guarded by `resourceVersion`, so two candidates cannot both
//! win), then renews it every `renew_every`. A leader that cannot renew
//! before its own lease expires reports the loss; the caller stops working
//! (the process exits and restarts as a candidate).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};

/// Settings of one election.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    /// This replica's identity (the pod name).
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_every: Duration,
    pub retry_every: Duration,
}

impl LeaseConfig {
    pub fn new(namespace: &str, name: &str, identity: &str) -> LeaseConfig {
        LeaseConfig {
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            lease_duration: Duration::from_secs(15),
            renew_every: Duration::from_secs(5),
            retry_every: Duration::from_secs(2),
        }
    }
}

/// The outcome of one attempt.
#[derive(Debug, PartialEq, Eq)]
pub enum Attempt {
    /// We hold the lease (taken or renewed).
    Leader,
    /// Someone else holds a lease that has not expired.
    Follower { holder: String },
}

pub struct LeaderElector {
    api: Api<Lease>,
    cfg: LeaseConfig,
}

fn expired(spec: &LeaseSpec, now: Timestamp) -> bool {
    let Some(renewed) = spec.renew_time.as_ref().or(spec.acquire_time.as_ref()) else {
        return true;
    };
    let secs = i64::from(spec.lease_duration_seconds.unwrap_or(15));
    renewed.0 + SignedDuration::from_secs(secs) < now
}

impl LeaderElector {
    pub fn new(client: Client, cfg: LeaseConfig) -> LeaderElector {
        LeaderElector {
            api: Api::namespaced(client, &cfg.namespace),
            cfg,
        }
    }

    fn spec(&self, now: Timestamp, acquired: Option<MicroTime>, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.cfg.identity.clone()),
            lease_duration_seconds: Some(
                self.cfg.lease_duration.as_secs().try_into().unwrap_or(15),
            ),
            acquire_time: Some(acquired.unwrap_or(MicroTime(now))),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    /// One try to take or renew the lease.
    pub async fn try_acquire(&self) -> Result<Attempt, kube::Error> {
        let now = Timestamp::now();
        let existing = match self.api.get_opt(&self.cfg.name).await? {
            Some(l) => l,
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.cfg.name.clone()),
                        namespace: Some(self.cfg.namespace.clone()),
                        ..Default::default()
                    },
                    spec: Some(self.spec(now, None, 0)),
                };
                return match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(Attempt::Leader),
                    Err(kube::Error::Api(e)) if e.code == 409 => Ok(Attempt::Follower {
                        holder: "another candidate".into(),
                    }),
                    Err(e) => Err(e),
                };
            }
        };
        let spec = existing.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().unwrap_or_default();
        let ours = holder == self.cfg.identity;
        if !ours && !holder.is_empty() && !expired(&spec, now) {
            return Ok(Attempt::Follower { holder });
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
        let acquired = if ours {
            spec.acquire_time.clone()
        } else {
            None
        };
        let mut lease = existing;
        lease.spec = Some(self.spec(now, acquired, transitions));
        // `replace` carries the resourceVersion we read: if another candidate
        // wrote in between, the API server answers 409 and we stay a follower.
        match self
            .api
            .replace(&self.cfg.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(Attempt::Leader),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(Attempt::Follower { holder }),
            Err(e) => Err(e),
        }
    }

    /// Waits until this replica is the leader.
    pub async fn acquire(&self) {
        loop {
            match self.try_acquire().await {
                Ok(Attempt::Leader) => {
                    tracing::info!(lease = %self.cfg.name, identity = %self.cfg.identity, "acquired leadership");
                    return;
                }
                Ok(Attempt::Follower { holder }) => {
                    tracing::debug!(%holder, "waiting for leadership");
                }
                Err(e) => tracing::warn!(error = %e, "leader election"),
            }
            tokio::time::sleep(self.cfg.retry_every).await;
        }
    }

    /// Renews the lease until a renewal is impossible within the lease
    /// duration; returns then (leadership is lost).
    pub async fn hold(&self) {
        let mut last_ok = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(self.cfg.renew_every).await;
            match self.try_acquire().await {
                Ok(Attempt::Leader) => last_ok = tokio::time::Instant::now(),
                Ok(Attempt::Follower { holder }) => {
                    tracing::error!(%holder, "leadership lost to another replica");
                    return;
                }
                Err(e) => tracing::warn!(error = %e, "renewing the leader lease"),
            }
            if last_ok.elapsed() >= self.cfg.lease_duration {
                tracing::error!("could not renew the leader lease in time");
                return;
            }
        }
    }

    /// Gives the lease up (on shutdown), so a standby takes over at once.
    pub async fn release(&self) -> Result<(), kube::Error> {
        let patch = serde_json::json!({"spec": {"holderIdentity": null, "renewTime": null}});
        if let Some(l) = self.api.get_opt(&self.cfg.name).await?
            && l.spec.and_then(|s| s.holder_identity).as_deref() == Some(&self.cfg.identity)
        {
            self.api
                .patch(
                    &self.cfg.name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_uses_renew_time_and_duration() {
        let now = Timestamp::from_second(1_000).unwrap();
        let mut spec = LeaseSpec {
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(Timestamp::from_second(990).unwrap())),
            ..Default::default()
        };
        assert!(!expired(&spec, now));
        spec.renew_time = Some(MicroTime(Timestamp::from_second(980).unwrap()));
        assert!(expired(&spec, now));
        spec.renew_time = None;
        assert!(expired(&spec, now), "a lease never renewed is free");
    }
}
