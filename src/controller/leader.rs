//! Leader election with a `coordination.k8s.io/v1` Lease, so that two
//! replicas never reconcile at once.
//!
//! Expiry is judged on the candidate's own monotonic clock, never by
//! comparing the lease's `renewTime` with the local wall clock (which may
//! be skewed): a candidate remembers the lease record it last saw (holder,
//! renew time, transitions) and when it first saw it; the lease is expired
//! when that record has not changed for `lease_duration`. Taking or
//! renewing is an optimistic `replace` guarded by `resourceVersion`, so two
//! candidates cannot both win.
//!
//! The leader renews every `renew_every`; every request is bounded by
//! `request_timeout`, and a leader that has not renewed successfully within
//! `renew_deadline` (shorter than `lease_duration`) reports the loss and
//! the caller stops working (the process exits and restarts as a
//! candidate) before any other candidate can consider the lease expired.

use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use tokio::time::Instant;

/// Settings of one election.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub namespace: String,
    pub name: String,
    /// This replica's identity (the pod name).
    pub identity: String,
    pub lease_duration: Duration,
    /// A leader that could not renew for this long gives up (must be
    /// shorter than `lease_duration`).
    pub renew_deadline: Duration,
    pub renew_every: Duration,
    pub retry_every: Duration,
    /// Bound of every request to the API server.
    pub request_timeout: Duration,
}

impl LeaseConfig {
    pub fn new(namespace: &str, name: &str, identity: &str) -> LeaseConfig {
        LeaseConfig {
            namespace: namespace.to_string(),
            name: name.to_string(),
            identity: identity.to_string(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            renew_every: Duration::from_secs(2),
            retry_every: Duration::from_secs(2),
            request_timeout: Duration::from_secs(5),
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

/// What identifies one state of the lease: any renewal changes it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Record {
    holder: String,
    renew_time: Option<String>,
    acquire_time: Option<String>,
    transitions: i32,
    duration_seconds: Option<i32>,
}

impl Record {
    fn of(spec: &LeaseSpec) -> Record {
        Record {
            holder: spec.holder_identity.clone().unwrap_or_default(),
            renew_time: spec.renew_time.as_ref().map(|t| t.0.to_string()),
            acquire_time: spec.acquire_time.as_ref().map(|t| t.0.to_string()),
            transitions: spec.lease_transitions.unwrap_or(0),
            duration_seconds: spec.lease_duration_seconds,
        }
    }
}

/// A record and when this candidate first saw it (its own clock).
#[derive(Clone, Debug)]
struct Observed {
    record: Record,
    since: Instant,
}

/// Whether the lease in `record` is free to take at `now`: it has no
/// holder, or this candidate has seen exactly this record for at least the
/// lease's duration. Updates `observed` with what was seen.
fn expired(observed: &mut Option<Observed>, record: Record, now: Instant) -> bool {
    if record.holder.is_empty() {
        return true;
    }
    let since = match observed {
        Some(o) if o.record == record => o.since,
        _ => {
            *observed = Some(Observed {
                record: record.clone(),
                since: now,
            });
            now
        }
    };
    let secs = u64::try_from(record.duration_seconds.unwrap_or(15)).unwrap_or(15);
    now.duration_since(since) >= Duration::from_secs(secs)
}

pub struct LeaderElector {
    api: Api<Lease>,
    cfg: LeaseConfig,
    observed: Mutex<Option<Observed>>,
}

impl LeaderElector {
    /// An elector using `client` (give it a short read timeout: see
    /// [`LeaseConfig::request_timeout`], which also bounds every call).
    pub fn new(client: Client, cfg: LeaseConfig) -> LeaderElector {
        LeaderElector {
            api: Api::namespaced(client, &cfg.namespace),
            cfg,
            observed: Mutex::new(None),
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

    /// One try to take or renew the lease, within `request_timeout` per
    /// request.
    pub async fn try_acquire(&self) -> Result<Attempt, kube::Error> {
        let bound = self.cfg.request_timeout;
        let timed_out =
            || kube::Error::Service(format!("leader election: no answer within {bound:?}").into());
        let existing = tokio::time::timeout(bound, self.api.get_opt(&self.cfg.name))
            .await
            .map_err(|_| timed_out())??;
        let now = Timestamp::now();
        let existing = match existing {
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
                let created =
                    tokio::time::timeout(bound, self.api.create(&PostParams::default(), &lease))
                        .await
                        .map_err(|_| timed_out())?;
                return match created {
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
        let free = {
            let mut observed = self.observed.lock().unwrap_or_else(|e| e.into_inner());
            expired(&mut observed, Record::of(&spec), Instant::now())
        };
        if !ours && !free {
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
        let replaced = tokio::time::timeout(
            bound,
            self.api
                .replace(&self.cfg.name, &PostParams::default(), &lease),
        )
        .await
        .map_err(|_| timed_out())?;
        match replaced {
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

    /// Renews the lease until no renewal succeeded for `renew_deadline`;
    /// returns then (leadership is lost). A renewal that hangs is abandoned
    /// at the deadline.
    pub async fn hold(&self) {
        let mut last_ok = Instant::now();
        loop {
            tokio::time::sleep(self.cfg.renew_every).await;
            let deadline = last_ok + self.cfg.renew_deadline;
            match tokio::time::timeout_at(deadline, self.try_acquire()).await {
                Ok(Ok(Attempt::Leader)) => last_ok = Instant::now(),
                Ok(Ok(Attempt::Follower { holder })) => {
                    tracing::error!(%holder, "leadership lost to another replica");
                    return;
                }
                Ok(Err(e)) => tracing::warn!(error = %e, "renewing the leader lease"),
                Err(_) => tracing::warn!("renewing the leader lease: no answer"),
            }
            if last_ok.elapsed() >= self.cfg.renew_deadline {
                tracing::error!(
                    renew_deadline = ?self.cfg.renew_deadline,
                    "could not renew the leader lease in time"
                );
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

    fn record(holder: &str, renew: &str) -> Record {
        Record {
            holder: holder.into(),
            renew_time: Some(renew.into()),
            acquire_time: Some("t0".into()),
            transitions: 0,
            duration_seconds: Some(15),
        }
    }

    #[test]
    fn a_lease_expires_only_after_staying_unchanged_for_its_duration() {
        let t0 = Instant::now();
        let mut seen = None;
        // a renewTime far in the past (a skewed clock) is not expiry
        assert!(!expired(&mut seen, record("a", "1970-01-01T00:00:00Z"), t0));
        assert!(!expired(
            &mut seen,
            record("a", "1970-01-01T00:00:00Z"),
            t0 + Duration::from_secs(14)
        ));
        assert!(expired(
            &mut seen,
            record("a", "1970-01-01T00:00:00Z"),
            t0 + Duration::from_secs(15)
        ));
        // any renewal restarts the observation, whatever its timestamp says
        assert!(!expired(
            &mut seen,
            record("a", "1970-01-01T00:00:01Z"),
            t0 + Duration::from_secs(16)
        ));
        assert!(!expired(
            &mut seen,
            record("a", "1970-01-01T00:00:01Z"),
            t0 + Duration::from_secs(30)
        ));
        assert!(expired(
            &mut seen,
            record("a", "1970-01-01T00:00:01Z"),
            t0 + Duration::from_secs(31)
        ));
        // a renewTime in the future (the other clock is ahead) expires the same way
        let mut seen = None;
        assert!(!expired(&mut seen, record("b", "2999-01-01T00:00:00Z"), t0));
        assert!(expired(
            &mut seen,
            record("b", "2999-01-01T00:00:00Z"),
            t0 + Duration::from_secs(15)
        ));
    }

    #[test]
    fn a_lease_without_holder_is_free() {
        let mut seen = None;
        assert!(expired(&mut seen, record("", "x"), Instant::now()));
    }

    #[test]
    fn the_renew_deadline_is_shorter_than_the_lease() {
        let c = LeaseConfig::new("ns", "l", "me");
        assert!(c.renew_deadline < c.lease_duration);
        assert!(c.renew_every < c.renew_deadline && c.request_timeout < c.renew_deadline);
    }
}
